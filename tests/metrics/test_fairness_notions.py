"""The four notions, F_T and settings (paper Eqs. 7-13; docs/references.md#fairness-2, #fairness-4, #fairness-9).

The worked 5-client round of ``data.py``:

x = [0.8, 0.6, 0.9, 0.5, 1.0], r = [0.4, 0.4, 0.6, 0.3, 0.5], s = [0.4, 0.2, 0.3, -0.1, 0.5]

- gains G = x/s = [2, 3, 3, -5, 2]: sum 5, sum of squares 4+9+9+25+4 = 51
  -> f_j = 25 / (5 * 51) = 5/51.
  Excluding s <= 0 (client 3): [2, 3, 3, 2]: sum 10, squares 26 -> f_j = 100 / (4 * 26) = 25/26.
- reward ratios R = r/s = [1, 2, 2, -3, 1]: sum 3, squares 19 -> f_r = 9 / (5 * 19) = 9/95.
  Excluding client 3: [1, 2, 2, 1]: sum 6, squares 10 -> f_r = 36/40 = 0.9.
- f_o = (0.8 + 0.6 + 0.9 + 0.5 + 1.0) / 5 = 0.76.
- authors' f_g, A = [1] (position 0, i.e. label 0): v = (TN - FP - TP + FN)/N
  = [(4-1-4+1), (5-3-1+1), (6-0-3+1), (1-4-4+1), (3-0-7+0)] / 10 = [0, 0.2, 0.4, -0.6, -0.4];
  |m| sorted [0, 0.2, 0.4, 0.4, 0.6] -> median 0.4 -> f_g = 0.6.
- equalised-odds f_g, A = [1]: gap = |sensitivity - specificity|
  = [|4/5-4/5|, |1/2-5/8|, |3/4-6/6|, |4/5-1/5|, |7/7-3/3|] = [0, 0.125, 0.25, 0.6, 0];
  sorted [0, 0, 0.125, 0.25, 0.6] -> median 0.125 -> f_g = 0.875.
"""

import math

import numpy as np
import pytest
from fairlearn.metrics import equalized_odds_difference

from fltrust.config import ConfigError, ExperimentConfig, FairnessConfig, fairness_settings
from fltrust.settings import SettingsError
from fltrust.metrics import (
    MODE_DEFAULTS,
    FairnessSettings,
    MetricInputError,
    authors_group_fairness,
    authors_group_values,
    default_sensitive_attributes,
    equalized_odds_group_fairness,
    general_fairness,
    group_fairness,
    incentive_fairness,
    individual_fairness,
    jain_index,
    label_group_arrays,
    orchestrator_fairness,
    round_fairness,
)

from .data import CONFUSION, CONTRIBUTION, PERFORMANCE, REWARDS, random_confusions


# ------------------------------------------------------------------------------------------
# f_j, f_r, f_o on the worked round
# ------------------------------------------------------------------------------------------
def test_individual_fairness_raw():
    result = individual_fairness(PERFORMANCE, CONTRIBUTION)

    assert result.ratios == pytest.approx([2.0, 3.0, 3.0, -5.0, 2.0])
    assert result.value == pytest.approx(5.0 / 51.0)
    assert result.num_dropped == 0 and result.included.all()


def test_individual_fairness_excluding_nonpositive_contributions():
    result = individual_fairness(PERFORMANCE, CONTRIBUTION, nonpositive_policy="exclude")

    assert result.value == pytest.approx(25.0 / 26.0)
    assert result.num_dropped == 1
    assert result.included.tolist() == [True, True, True, False, True]
    assert result.ratios[3] == pytest.approx(-5.0)  # reported, just not used


def test_incentive_fairness_raw_and_excluding():
    raw = incentive_fairness(REWARDS, CONTRIBUTION)
    excluding = incentive_fairness(REWARDS, CONTRIBUTION, nonpositive_policy="exclude")

    assert raw.ratios == pytest.approx([1.0, 2.0, 2.0, -3.0, 1.0])
    assert raw.value == pytest.approx(9.0 / 95.0)
    assert excluding.value == pytest.approx(0.9)


def test_orchestrator_fairness():
    assert orchestrator_fairness(PERFORMANCE) == pytest.approx(0.76)
    with pytest.raises(MetricInputError, match="empty"):
        orchestrator_fairness([])


def test_exclude_with_fewer_than_two_positive_contributions_is_nan():
    # only client 0 has s > 0 -> one ratio left -> undefined
    result = individual_fairness([0.5, 0.6, 0.7], [0.2, -0.1, 0.0], nonpositive_policy="exclude")

    assert math.isnan(result.value)
    assert result.num_dropped == 2


def test_authors_reward_guard_sum_zero_gives_one():
    # R = r/s = [0.1/0.1, 0.1/-0.1, 0.2/0.1, 0.2/-0.1, 0/0.5] = [1, -1, 2, -2, 0]: sum exactly 0
    # authors: f_r = 1 ; J itself would give 0 (what the all_zero_is_one guard keeps)
    rewards = [0.1, 0.1, 0.2, 0.2, 0.0]
    s = [0.1, -0.1, 0.1, -0.1, 0.5]

    assert incentive_fairness(rewards, s).value == 1.0
    assert incentive_fairness(rewards, s, jain_zero_guard="all_zero_is_one").value == pytest.approx(0.0)


def test_zero_guards_for_all_zero_ratios():
    # x = 0 everywhere: gains all zero. authors: f_j unguarded (NaN), f_r guarded (sum 0 -> 1)
    zeros, s = [0.0, 0.0, 0.0], [0.1, 0.2, 0.3]

    assert math.isnan(individual_fairness(zeros, s).value)
    assert incentive_fairness(zeros, s).value == 1.0
    assert individual_fairness(zeros, s, jain_zero_guard="all_zero_is_one").value == 1.0
    assert incentive_fairness(zeros, s, jain_zero_guard="all_zero_is_one").value == 1.0


def test_zero_contribution_gives_nan_without_guard():
    # x/s with s = 0 is infinite: the authors had no guard (never happened in their runs)
    result = individual_fairness([0.5, 0.6], [0.0, 0.3])

    assert math.isinf(result.ratios[0])
    assert math.isnan(result.value)


def test_ratio_inputs_must_align():
    with pytest.raises(MetricInputError, match="contribution has 2 values"):
        individual_fairness([0.5, 0.6, 0.7], [0.1, 0.2])


# ------------------------------------------------------------------------------------------
# f_g
# ------------------------------------------------------------------------------------------
def test_authors_group_fairness_worked_round():
    result = authors_group_fairness(CONFUSION, [1])

    assert result.client_scores == pytest.approx([0.0, 0.2, 0.4, -0.6, -0.4])
    assert result.value == pytest.approx(0.6)
    assert result.details[1] == pytest.approx({"1": 0.2})  # keyed by the attribute value, as in JSON


def test_authors_position_bug_same_magnitude_for_zero_and_one():
    # A = [1] (FedAvg) evaluates position 0 = label 0, exactly like A = [0] (Ditto)
    assert authors_group_values(CONFUSION, [1]) == pytest.approx(authors_group_values(CONFUSION, [0]))


def test_equalized_odds_group_fairness_worked_round():
    result = equalized_odds_group_fairness(CONFUSION, [1])

    assert result.client_scores == pytest.approx([0.0, 0.125, 0.25, 0.6, 0.0])
    assert result.value == pytest.approx(0.875)
    # client 1, [[TN FP],[FN TP]] = [[5, 3],[1, 1]]: group "1": TPR = 1/2, FPR = 3/8;
    # group "rest" (label 0): TPR = 5/8, FPR = 1/2 -> gap max(1/8, 1/8) = 0.125
    assert result.details[1]["1"] == pytest.approx({"tpr": 0.5, "fpr": 0.375})
    assert result.details[1]["rest"] == pytest.approx({"tpr": 0.625, "fpr": 0.5})


def test_equalized_odds_gap_is_fairlearns_equalized_odds_difference():
    # 4 classes, A = [0, 2]: groups "0", "2", "rest" = {1, 3}
    confusion = random_confusions(seed=11, num_clients=3, num_classes=4)

    result = equalized_odds_group_fairness(confusion, [0, 2])

    for n, matrix in enumerate(confusion):
        y_true, y_pred, groups = label_group_arrays(matrix, [0, 2])
        assert set(groups) == {"0", "2", "rest"}
        assert len(y_true) == 3 * matrix.sum()
        expected = equalized_odds_difference(y_true, y_pred, sensitive_features=groups)
        assert result.client_scores[n] == pytest.approx(expected)


def test_equalized_odds_skips_groups_without_members():
    # NSL-KDD q-FedAvg list [0..9] on a binary task: labels 2..9 do not exist -> groups 0 and 1,
    # the same gap as A = [1]; a client whose validation set holds one label only has no gap.
    one_label = np.array([[[6, 2], [0, 0]]])
    confusion = np.concatenate([CONFUSION, one_label])

    with_ten = equalized_odds_group_fairness(confusion, list(range(10)))

    assert with_ten.client_scores[:5] == pytest.approx([0.0, 0.125, 0.25, 0.6, 0.0])
    assert math.isnan(with_ten.client_scores[5])
    assert with_ten.details[5] == {}
    assert with_ten.value == pytest.approx(0.875)  # median of the five defined gaps


def test_group_fairness_dispatch_and_errors():
    assert group_fairness(CONFUSION, [1]).value == pytest.approx(0.6)
    assert group_fairness(CONFUSION, [1], group_metric="equalized_odds").value == pytest.approx(0.875)
    with pytest.raises(MetricInputError, match="group_metric"):
        group_fairness(CONFUSION, [1], group_metric="parity")
    with pytest.raises(MetricInputError, match="confusion must have shape"):
        group_fairness(np.zeros((2, 3, 4)), [1])
    with pytest.raises(MetricInputError, match="at least one attribute"):
        group_fairness(CONFUSION, [])


# Closed forms of the authors' f_g (spec 2.4, docs/references.md#fairness-2-4) on seeded random confusion matrices
def _accuracy(confusion: np.ndarray) -> np.ndarray:
    return np.trace(confusion, axis1=1, axis2=2) / confusion.sum(axis=(1, 2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closed_form_cifar_all_classes(seed):
    # m_n = -0.8 (2 acc - 1)  =>  f_g = 1 - 0.8 median|2 acc - 1|
    confusion = random_confusions(seed, num_clients=5, num_classes=10)
    acc = _accuracy(confusion)

    result = authors_group_fairness(confusion, default_sensitive_attributes("cifar10", "fedavg"))

    assert result.client_scores == pytest.approx(-0.8 * (2 * acc - 1))
    assert result.value == pytest.approx(1 - 0.8 * np.median(np.abs(2 * acc - 1)))


@pytest.mark.parametrize(("strategy", "seed"), [("fedavg", 0), ("ditto", 1), ("fedavg", 2)])
def test_closed_form_nsl_kdd_fedavg_and_ditto(strategy, seed):
    # m_n = 1 - 2 p_hat, p_hat = share predicted anomalous  =>  f_g = 1 - median|1 - 2 p_hat|
    confusion = random_confusions(seed, num_clients=5, num_classes=2)
    p_hat = confusion[:, :, 1].sum(axis=1) / confusion.sum(axis=(1, 2))

    result = authors_group_fairness(confusion, default_sensitive_attributes("nsl_kdd", strategy))

    assert result.client_scores == pytest.approx(1 - 2 * p_hat)
    assert result.value == pytest.approx(1 - np.median(np.abs(1 - 2 * p_hat)))


def test_closed_form_nsl_kdd_qfedavg_is_the_cifar_formula():
    confusion = random_confusions(5, num_clients=5, num_classes=2)
    acc = _accuracy(confusion)

    result = authors_group_fairness(confusion, default_sensitive_attributes("nsl_kdd", "qfedavg"))

    assert result.client_scores == pytest.approx(-0.8 * (2 * acc - 1))
    assert result.value == pytest.approx(1 - 0.8 * np.median(np.abs(2 * acc - 1)))


@pytest.mark.parametrize("seed", [0, 3])
def test_closed_form_femnist_digits(seed):
    # m_n = 0.2 (C_d - W_d)/N - (2 acc - 1), C_d / W_d = correct / wrong digit-labelled samples
    confusion = random_confusions(seed, num_clients=5, num_classes=62, max_count=3)
    n = confusion.sum(axis=(1, 2))
    digits = confusion[:, :10, :]
    correct_d = np.trace(confusion[:, :10, :10], axis1=1, axis2=2)
    wrong_d = digits.sum(axis=(1, 2)) - correct_d
    acc = _accuracy(confusion)
    expected = 0.2 * (correct_d - wrong_d) / n - (2 * acc - 1)

    result = authors_group_fairness(confusion, default_sensitive_attributes("femnist", "ditto"))

    assert result.client_scores == pytest.approx(expected)
    assert result.value == pytest.approx(1 - np.median(np.abs(expected)))


# ------------------------------------------------------------------------------------------
# F_T and the whole round
# ------------------------------------------------------------------------------------------
def test_general_fairness_weights():
    # equal: (0.2 + 0.4 + 0.6 + 0.8)/4 = 0.5 ; weights (2, 1, 1, 0) -> (0.4 + 0.4 + 0.6)/4 = 0.35
    four = {"f_j": 0.2, "f_g": 0.4, "f_r": 0.6, "f_o": 0.8}
    equal = dict.fromkeys(four, 0.25)
    assert general_fairness(four, equal) == pytest.approx(0.5)
    assert general_fairness(four, {"f_j": 2, "f_g": 1, "f_r": 1, "f_o": 0}) == pytest.approx(0.35)
    assert general_fairness({**four, "f_o": math.nan}, {"f_j": 1, "f_g": 1}) == pytest.approx(0.3)  # f_o unweighted
    assert math.isnan(general_fairness({**four, "f_j": math.nan}, equal))
    with pytest.raises(MetricInputError, match="weights name \\['x'\\], which have no value"):
        general_fairness(four, {"x": 1})
    with pytest.raises(MetricInputError, match="positive sum"):
        general_fairness(four, dict.fromkeys(four, 0))
    with pytest.raises(MetricInputError, match="non-negative"):
        general_fairness(four, {"f_j": -1, "f_g": 2})


def test_f_t_weighs_the_registered_notions_by_their_defaults_and_the_settings():
    # f_o weight 0: F_T = (5/51 + 0.6 + 9/95) / 3 on the worked round
    result = round_fairness(PERFORMANCE, REWARDS, CONTRIBUTION, CONFUSION, [1], FairnessSettings(notion_weights={"f_o": 0}))

    assert result.weights == {"f_j": 0.25, "f_g": 0.25, "f_r": 0.25, "f_o": 0.0}
    assert result["F_T"] == pytest.approx((5 / 51 + 0.6 + 9 / 95) / 3)
    with pytest.raises(MetricInputError, match=r"^FairnessSettings\.notion_weights names \['f_x'\], which is not a reg"):
        round_fairness(PERFORMANCE, REWARDS, CONTRIBUTION, CONFUSION, [1], FairnessSettings(notion_weights={"f_x": 1}))


def test_round_fairness_faithful_worked_round():
    # F_T = (5/51 + 0.6 + 9/95 + 0.76) / 4
    result = round_fairness(PERFORMANCE, REWARDS, CONTRIBUTION, CONFUSION, [1])

    assert [result[k] for k in ("f_j", "f_g", "f_r", "f_o")] == pytest.approx([5 / 51, 0.6, 9 / 95, 0.76])
    assert result.F_T == result["F_T"] == pytest.approx((5 / 51 + 0.6 + 9 / 95 + 0.76) / 4)
    assert result.to_dict()["num_dropped_gains"] == 0
    assert list(result.to_dict()) == ["f_j", "f_g", "f_r", "f_o", "F_T", "gains", "reward_ratios", "ratio_included",
                                      "num_dropped_gains", "num_dropped_rewards", "group_metric", "group_scores",
                                      "group_values"]  # the record's layout, written since the first release


def test_round_fairness_corrected_worked_round():
    # F_T = (25/26 + 0.875 + 0.9 + 0.76) / 4
    result = round_fairness(
        PERFORMANCE, REWARDS, CONTRIBUTION, CONFUSION, [1], FairnessSettings(mode="corrected")
    )

    assert [result[k] for k in ("f_j", "f_g", "f_r", "f_o")] == pytest.approx([25 / 26, 0.875, 0.9, 0.76])
    assert result.F_T == pytest.approx((25 / 26 + 0.875 + 0.9 + 0.76) / 4)
    assert result.to_dict()["num_dropped_rewards"] == 1


def test_section7_identities_on_the_worked_round():
    # f_o = mean(accuracy); gains = acc / s; f_j = J(gains); f_g = 1 - median|mean(group values)|
    out = round_fairness(PERFORMANCE, REWARDS, CONTRIBUTION, CONFUSION, [1]).to_dict()

    assert out["f_o"] == pytest.approx(np.mean(PERFORMANCE))
    assert out["gains"] == pytest.approx(PERFORMANCE / CONTRIBUTION)
    assert out["f_j"] == pytest.approx(jain_index(out["gains"]))
    means = [np.mean(list(values.values())) for values in out["group_values"]]
    assert out["f_g"] == pytest.approx(1 - np.median(np.abs(means)))


def test_round_fairness_rejects_misaligned_confusion():
    with pytest.raises(MetricInputError, match="confusion has 4 matrices"):
        round_fairness(PERFORMANCE, REWARDS, CONTRIBUTION, CONFUSION[:4], [1])


# ------------------------------------------------------------------------------------------
# Settings and defaults
# ------------------------------------------------------------------------------------------
def test_settings_mode_defaults_and_overrides():
    faithful = FairnessSettings()
    corrected = FairnessSettings(mode="corrected")
    mixed = FairnessSettings(mode="corrected", reward="instantaneous")

    assert {k: getattr(faithful, k) for k in MODE_DEFAULTS["faithful"]} == MODE_DEFAULTS["faithful"]
    assert {k: getattr(corrected, k) for k in MODE_DEFAULTS["corrected"]} == MODE_DEFAULTS["corrected"]
    assert faithful.shapley_include_empty is False and faithful.coalition_weighting == "uniform"
    assert mixed.reward == "instantaneous" and mixed.nonpositive_policy == "exclude"


def test_settings_from_config_and_errors():
    config = FairnessConfig(mode="corrected", group_metric="authors", notion_weights=[1, 0, 0.25, 0],
                            sensitive_attributes=[0, 1], aux_batch_size=64)

    settings = fairness_settings(config)

    assert settings.group_metric == "authors"
    assert settings.shapley_include_empty is True
    assert settings.notion_weights == {"f_j": 1.0, "f_g": 0.0, "f_o": 0.0}  # f_r's 0.25 is its default
    assert settings.sensitive_attributes == (0, 1) and settings.aux_batch_size == 64
    with pytest.raises(SettingsError, match=r"^FairnessSettings\.reward='lifetime' is not allowed"):
        FairnessSettings(reward="lifetime")
    with pytest.raises(SettingsError, match=r"^FairnessSettings\.notion_weights=\(0, 0, 0, 0\) must be a mapping"):
        FairnessSettings(notion_weights=(0, 0, 0, 0))
    with pytest.raises(SettingsError, match=r"^FairnessSettings\.notion_weights\.f_j=-1 must be a finite number >= 0"):
        FairnessSettings(notion_weights={"f_j": -1})
    with pytest.raises(SettingsError, match="sensitive_attributes"):
        FairnessSettings(sensitive_attributes=())


@pytest.mark.parametrize(("key", "value", "message"), [
    ("reward", "lifetime", r"^metrics\.fairness\.reward='lifetime' is not allowed; choose one of \['instantaneous'"),
    ("mode", "strict", r"^metrics\.fairness\.mode='strict' is not allowed"),
    ("aux_batch_size", 0, r"^metrics\.fairness\.aux_batch_size=0 must be > 0$"),
    ("shapley_permutations", 0, r"^metrics\.fairness\.shapley_permutations=0 must be > 0$"),
    ("notion_weights", [0, 0, 0, 0], r"^metrics\.fairness\.notion_weights gives every notion weight 0 "),
    ("notion_weights", [1, 0], r"^metrics\.fairness\.notion_weights=\[1\.0, 0\.0\] must be a mapping notion -> weight "),
    ("notion_weights", {"f_x": 1}, r"^metrics\.fairness\.notion_weights names \['f_x'\], which is not a registered"),
    ("notion_weights", {"f_j": "high"}, r"^metrics\.fairness\.notion_weights\.f_j='high' must be a finite number"),
])
def test_the_config_reports_the_settings_checks_under_its_own_keys(key, value, message):
    """FairnessSettings holds the only checks; the YAML section names the key that failed."""
    with pytest.raises(ConfigError, match=message):
        ExperimentConfig.from_dict({"metrics": {"fairness": {key: value}}})


@pytest.mark.parametrize(
    ("dataset", "strategy", "expected"),
    [
        ("cifar10", "ditto", list(range(10))),
        ("femnist", "qfedavg", list(range(10))),
        ("nsl_kdd", "fedavg", [1]),
        ("nsl_kdd", "ditto", [0]),
        ("nsl_kdd", "qfedavg", list(range(10))),
        ("synthetic_nsl_kdd", "fedprox", [1]),
        ("synthetic_cifar10", "fedmedian", list(range(10))),
    ],
)
def test_default_sensitive_attributes(dataset, strategy, expected):
    assert default_sensitive_attributes(dataset, strategy) == expected


def test_default_sensitive_attributes_unknown_dataset():
    with pytest.raises(MetricInputError, match="sensitive_attributes"):
        default_sensitive_attributes("n_baiot", "fedavg")


def test_experiment_config_resolves():
    cfg = ExperimentConfig.from_dict({"metrics": {"fairness": {"mode": "corrected", "reward": "instantaneous"}}})

    settings = fairness_settings(cfg.metrics.fairness)

    assert settings.mode == "corrected" and settings.reward == "instantaneous"
