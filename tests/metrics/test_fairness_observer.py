"""FairnessObserver end to end on tiny synthetic rounds (no FL engine involved)."""

import json
import math

import numpy as np
import pytest
import torch
from torch import nn

import fltrust.metrics.shapley.federated as federated_module
from fltrust.config import ExperimentConfig
from fltrust.core.evaluation import evaluate, get_params, set_params
from fltrust.core.observers import ObserverSet
from fltrust.core.records import RoundRecord, RunInfo, RunSummary
from fltrust.experiment import fairness_observer
from fltrust.metrics import FairnessObserver, FairnessSettings, MetricInputError, jain_index

NUM_CLIENTS = 7
ROUND_CLIENTS = {1: [0, 2, 3, 5, 6], 2: [1, 2, 4, 5, 6], 3: [0, 1, 3, 4, 6]}


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Linear(2, 2)


def _aux() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(12, 2, generator=generator)
    y = (x[:, 0] + 0.3 * x[:, 1] > 0).long()
    return x, y


def _record(round_number: int, aux_loss_before: float = 0.6) -> RoundRecord:
    """A seeded synthetic round: 5 clients with perturbed models, metrics and confusions."""
    rng = np.random.default_rng(round_number)
    ids = np.array(ROUND_CLIENTS[round_number], dtype=np.int64)
    base = get_params(_model())
    params = [[(p + rng.normal(0, 0.5, p.shape)).astype(p.dtype) for p in base] for _ in ids]
    confusion = rng.integers(1, 8, size=(len(ids), 2, 2))
    accuracy = np.trace(confusion, axis1=1, axis2=2) / confusion.sum(axis=(1, 2))
    num_samples = rng.integers(20, 60, size=len(ids)).astype(float)
    return RoundRecord(
        round=round_number,
        client_ids=ids,
        client_metrics={
            "accuracy": accuracy,
            "reward_accuracy": rng.uniform(0.3, 0.7, size=len(ids)),
            "num_samples": num_samples,
            "num_batches": np.ceil(num_samples / 32),
        },
        client_confusion=confusion,
        server_metrics={"aux_loss_before": aux_loss_before},
        client_params=params,
    )


def _info(num_clients: int) -> RunInfo:
    return RunInfo(
        run_id="test",
        num_clients=num_clients,
        num_rounds=3,
        num_classes=2,
        client_num_samples=np.zeros(num_clients),
        client_class_counts=np.zeros((num_clients, 2)),
    )


def _observer(settings: FairnessSettings | None = None, **kwargs) -> FairnessObserver:
    x, y = _aux()
    options = dict(batch_size=5, loss_scaling="mean", num_clients=NUM_CLIENTS, sensitive_attributes=[1])
    options.update(kwargs)
    return FairnessObserver(settings or FairnessSettings(), _model(), x, y, **options)


def test_round_zero_returns_none():
    observer = _observer()

    assert observer.on_round_end(RoundRecord(round=0, client_ids=np.zeros(0, dtype=np.int64))) is None


def test_three_rounds_faithful_identities():
    # Prepare
    observer = _observer()
    previous = np.zeros(NUM_CLIENTS)

    for k in (1, 2, 3):
        record = _record(k)
        # Execute
        out = observer.on_round_end(record)

        # Assert: JSON-serialisable, spec section 7 (docs/references.md#fairness-7) identities, cumulative bookkeeping
        json.dumps(out)
        ids = ROUND_CLIENTS[k]
        acc = record.client_metrics["accuracy"]
        s = np.asarray(out["s"])
        assert out["round"] == k and out["client_ids"] == ids
        assert out["f_o"] == pytest.approx(acc.mean())
        assert out["gains"] == pytest.approx(acc / s)
        assert out["f_j"] == pytest.approx(jain_index(out["gains"]))
        means = [np.mean(list(v.values())) for v in out["group_values"]]
        assert out["f_g"] == pytest.approx(1 - np.median(np.abs(means)))
        assert out["f_r"] == pytest.approx(jain_index(record.client_metrics["reward_accuracy"] / s))
        assert out["F_T"] == pytest.approx((out["f_j"] + out["f_g"] + out["f_r"] + out["f_o"]) / 4)
        cumulative = np.asarray(out["cumulative_shapley"])
        assert len(cumulative) == NUM_CLIENTS
        assert cumulative[ids] == pytest.approx(previous[ids] + np.asarray(out["phi"]))
        others = [c for c in range(NUM_CLIENTS) if c not in ids]
        assert np.array_equal(cumulative[others], previous[others])  # only participants change
        assert out["num_coalitions"] == 31 and out["shapley_method"] == "exact"
        previous = cumulative


def test_one_evaluate_many_call_of_31_models_per_round(monkeypatch):
    calls = []
    real = federated_module.evaluate_many

    def counting(model, param_sets, *args, **kwargs):
        calls.append(len(param_sets))
        return real(model, param_sets, *args, **kwargs)

    monkeypatch.setattr(federated_module, "evaluate_many", counting)
    observer = _observer()

    for k in (1, 2, 3):
        observer.on_round_end(_record(k))

    assert calls == [31, 31, 31]


def test_faithful_shapley_ignores_the_reference_loss():
    # without the empty coalition l(theta_k; D) cancels (spec 3, docs/references.md#fairness-3)
    low = _observer().on_round_end(_record(1, aux_loss_before=0.1))
    high = _observer().on_round_end(_record(1, aux_loss_before=5.0))

    assert low["phi"] == pytest.approx(high["phi"], abs=1e-9)


def test_corrected_shapley_is_efficient_with_fedavg_coalitions():
    # sum phi = U(S) = l_ref - l(FedAvg mean of all five models; D)
    record = _record(1, aux_loss_before=0.9)
    weights = record.client_metrics["num_samples"]
    params = record.client_params
    mean = [sum(w * p[i].astype(np.float64) for w, p in zip(weights, params)) / weights.sum() for i in range(2)]
    model = _model()
    set_params(model, mean)
    x, y = _aux()
    full_loss = evaluate(model, x, y, num_classes=2).loss

    out = _observer(FairnessSettings(mode="corrected")).on_round_end(record)

    assert sum(out["phi"]) == pytest.approx(0.9 - full_loss, abs=1e-6)


def test_cumulative_rewards_in_corrected_mode():
    observer = _observer(FairnessSettings(mode="corrected"))
    first, second = _record(1), _record(2)

    observer.on_round_end(first)
    out = observer.on_round_end(second)

    # client 2 took part in rounds 1 (position 1) and 2 (position 1)
    expected = first.client_metrics["reward_accuracy"][1] + second.client_metrics["reward_accuracy"][1]
    assert out["rewards"][1] == pytest.approx(expected)
    assert out["group_metric"] == "equalized_odds"


def test_state_dict_round_trip_gives_identical_results():
    # Prepare: A runs rounds 1-2; B restores A's JSON-serialised state
    straight = _observer()
    for k in (1, 2):
        straight.on_round_end(_record(k))
    resumed = _observer()
    resumed.load_state_dict(json.loads(json.dumps(straight.state_dict())))

    # Execute
    expected = straight.on_round_end(_record(3))
    actual = resumed.on_round_end(_record(3))

    # Assert
    assert json.dumps(actual) == json.dumps(expected)


def test_monte_carlo_fallback_is_seeded():
    settings = FairnessSettings(exact_max_players=3, shapley_permutations=4)

    first = _observer(settings, seed=5).on_round_end(_record(1))
    again = _observer(settings, seed=5).on_round_end(_record(1))

    assert first["shapley_method"] == "monte_carlo"
    assert first["num_coalitions"] < 31
    assert first["phi"] == again["phi"]


def test_observer_set_stores_the_round():
    observer_set = ObserverSet([_observer()])
    record = _record(1)

    observer_set.round_end(record)

    assert record.observations["fairness"]["client_ids"] == ROUND_CLIENTS[1]
    json.dumps(record.to_json())


def test_from_config():
    cfg = ExperimentConfig.from_dict(
        {
            "data": {"name": "synthetic_nsl_kdd"},
            "partition": {"num_clients": NUM_CLIENTS},
            "strategy": {"name": "ditto", "weighting": "batches"},
            "metrics": {"fairness": {"enabled": True, "mode": "corrected"}},
        }
    )
    x, y = _aux()

    observer = fairness_observer(cfg, _model(), x, y, num_clients=NUM_CLIENTS)

    assert observer.sensitive_attributes == [0]  # the authors' list for Ditto on NSL-KDD
    assert observer.coalition_weight_key == "num_batches"
    assert observer.settings.mode == "corrected"
    assert observer.num_clients == NUM_CLIENTS
    later = fairness_observer(cfg, _model(), x, y)  # the number of clients comes with the run
    later.on_run_start(_info(9))
    assert later.num_clients == 9 and later.cumulative_shapley.shape == (9,)


def test_built_without_a_config_the_attributes_default_to_every_label():
    """A Flower app's observer: settings only; C from RunInfo, A = all labels of the confusion matrices."""
    x, y = _aux()
    observer = FairnessObserver(FairnessSettings(), _model(), x, y, batch_size=5)
    observer.on_run_start(_info(NUM_CLIENTS))

    out = observer.on_round_end(_record(1))

    assert observer.sensitive_attributes == [0, 1]  # the records' confusion matrices are 2 x 2
    pinned = _observer(sensitive_attributes=[0, 1]).on_round_end(_record(1))
    assert out["f_g"] == pinned["f_g"] and out["F_T"] == pinned["F_T"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.server_metrics.clear(), "aux_loss_before"),
        (lambda r: r.client_metrics.pop("accuracy"), "accuracy"),
        (lambda r: setattr(r, "client_confusion", None), "client_confusion"),
        (lambda r: setattr(r, "client_ids", np.array([0, 2, 3, 5, 9])), "client_ids"),
    ],
)
def test_bad_records_give_clear_errors(change, message):
    record = _record(1)
    change(record)

    with pytest.raises(MetricInputError, match=message):
        _observer().on_round_end(record)


def test_bad_state_and_run_info():
    observer = _observer()
    with pytest.raises(MetricInputError, match="shape"):
        observer.load_state_dict({"cumulative_shapley": [0.0] * 3, "cumulative_rewards": [0.0] * 3})
    with pytest.raises(MetricInputError, match="num_clients"):
        observer.on_run_start(_info(NUM_CLIENTS + 1))


def test_exclude_policy_counts_dropped_participants():
    # round 1 (seeded) has faithful FedSV phi ~ [-0.24, -0.03, 0.06, 0.02, 0.26]: two participants
    # with s <= 0 are dropped and f_j is J of the three remaining gains
    out = _observer(FairnessSettings(nonpositive_policy="exclude")).on_round_end(_record(1))

    s, gains = np.asarray(out["s"]), np.asarray(out["gains"])
    assert out["ratio_included"] == [False, False, True, True, True]
    assert out["num_dropped_gains"] == out["num_dropped_rewards"] == 2
    assert out["f_j"] == pytest.approx(jain_index(gains[s > 0]))


def test_exclude_policy_with_one_positive_participant_is_nan():
    # corrected FedSV of round 1 leaves one participant with s > 0 -> f_j and f_r undefined
    out = _observer(FairnessSettings(mode="corrected")).on_round_end(_record(1))

    assert out["num_dropped_gains"] == 4
    assert math.isnan(out["f_j"]) and math.isnan(out["f_r"]) and math.isnan(out["F_T"])


def test_run_end_reports_settings_and_final_shapley():
    observer = _observer(FairnessSettings(mode="corrected", reward="instantaneous"))
    observer.on_run_start(_info(NUM_CLIENTS))
    outputs = [observer.on_round_end(_record(k)) for k in (1, 2, 3)]

    summary = observer.on_run_end(RunSummary(info=_info(NUM_CLIENTS), rounds=[], final_params=[], wall_time_s=0.0))

    json.dumps(summary)
    assert summary["settings"]["reward"] == "instantaneous"
    assert summary["settings"]["shapley_include_empty"] is True
    assert summary["sensitive_attributes"] == [1]
    assert summary["cumulative_shapley"] == outputs[-1]["cumulative_shapley"]


def test_robust_aggregators_get_fedavgs_default_attributes_on_nsl_kdd():
    from fltrust.metrics.fairness import default_sensitive_attributes

    for strategy in ("krum", "multikrum", "trimmedmean", "bulyan", "fedmedian"):
        assert default_sensitive_attributes("synthetic_nsl_kdd", strategy) == [1]
