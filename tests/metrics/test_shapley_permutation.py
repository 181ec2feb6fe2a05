"""FedSV past 5 players: the guided, control-variate permutation estimator, "auto", the exact limit."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import fltrust.metrics.shapley.federated as federated_module
from fltrust.config import ConfigError, ExperimentConfig, FairnessConfig, fairness_settings
from fltrust.core.records import RoundRecord
from fltrust.settings import SettingsError
from fltrust.metrics import FairnessObserver, FairnessSettings, MetricInputError
from fltrust.metrics.shapley import (
    EXACT_PLAYER_LIMIT,
    federated_shapley,
    guided_permutations,
    mean_game_shapley,
    monte_carlo_shapley,
    permutation_shapley,
    resolve_method,
    shapley_values,
)

from .data import GAME_PLAYERS, synergy_game


def _monotone_game(num_players: int, seed: int):
    """Seeded random monotone game: U(T) = (sum w)^0.7 + sum of non-negative pair synergies."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.1, 1.0, num_players)
    synergy = np.triu(rng.uniform(0.0, 0.05, (num_players, num_players)), 1)

    def utility(coalition: frozenset) -> float:
        members = sorted(coalition)
        if not members:
            return 0.0
        return float(w[members].sum() ** 0.7 + synergy[np.ix_(members, members)].sum())

    return utility


def _fedsv_like_game(num_players: int, seed: int):
    """A game shaped like a FedSV round: a coalition's utility is a mean of its members' values
    plus a noise-averaging gain that grows with its size and pairwise interactions."""
    rng = np.random.default_rng(seed)
    value = rng.normal(0.05, 0.08, num_players)
    noise = rng.uniform(0.0, 0.2, num_players)
    pair = rng.normal(0.0, 0.01, (num_players, num_players))

    def utility(coalition: frozenset) -> float:
        members = sorted(coalition)
        if not members:
            return 0.0
        k = len(members)
        return float(value[members].mean() - noise[members].sum() / k**2 + pair[np.ix_(members, members)].sum() / k**2)

    return utility


# ------------------------------------------------------------------------------------------
# Guided permutations and the mean game
# ------------------------------------------------------------------------------------------
def test_guided_permutations_cycle_the_first_player_and_are_seeded():
    perms = guided_permutations(4, 8, seed=[3, 1])

    assert perms.shape == (8, 4)
    assert all(sorted(row) == [0, 1, 2, 3] for row in perms.tolist())
    # first players are offset, offset+1, ... mod 4: each player first exactly twice
    assert np.bincount(perms[:, 0], minlength=4).tolist() == [2, 2, 2, 2]
    assert np.array_equal(np.diff(perms[:, 0]) % 4, np.ones(7))
    assert np.array_equal(perms, guided_permutations(4, 8, seed=[3, 1]))
    assert not np.array_equal(perms, guided_permutations(4, 8, seed=[3, 2]))
    with pytest.raises(MetricInputError, match="num_permutations"):
        guided_permutations(4, 0, seed=0)


def test_mean_game_shapley_by_hand():
    # a = (0, 3, 6); V({0,1}) = 1.5, V({0,2}) = 3, V({1,2}) = 4.5, V(S) = 3. Player 0:
    # 1/3 [V{0} - 0] + 1/6 [(V{0,1} - V{1}) + (V{0,2} - V{2})] + 1/3 [V(S) - V{1,2}]
    # = 0 + (-1.5 - 3)/6 + (3 - 4.5)/3 = -1.25. Closed form: (a_n + (a_n - mean of others)(1/2 + 1/3))/3
    # gives (0 - 4.5 * 5/6)/3 = -1.25, (3 + 0)/3 = 1, (6 + 4.5 * 5/6)/3 = 3.25; sum = V(S) = 3.
    assert mean_game_shapley([0.0, 3.0, 6.0]) == pytest.approx([-1.25, 1.0, 3.25])


def test_mean_game_shapley_matches_exact_enumeration():
    a = np.random.default_rng(4).normal(size=7)

    def mean_game(coalition):
        return float(np.mean(a[sorted(coalition)])) if coalition else 0.0

    assert mean_game_shapley(a) == pytest.approx(shapley_values(list(range(7)), mean_game), abs=1e-12)
    assert mean_game_shapley([2.5]).tolist() == [2.5]


# ------------------------------------------------------------------------------------------
# The estimator against exact values
# ------------------------------------------------------------------------------------------
def test_additive_game_is_recovered_exactly():
    # every gain of i is a_i, so the control-variate coefficient is 0 and the estimate is exact
    a = [0.5, -1.0, 2.0, 0.0, 3.5, 1.25]

    estimate = permutation_shapley(range(6), lambda T: sum(a[i] for i in T), num_permutations=3, seed=0)

    assert estimate.phi == pytest.approx(a, abs=1e-12)
    assert estimate.stderr == pytest.approx(np.zeros(6), abs=1e-12)


def test_mean_game_is_recovered_exactly():
    # U = V: every residual gain is 0 and the estimate is phi^V (here (-1.25, 1, 3.25), by hand above)
    a = [0.0, 3.0, 6.0]

    estimate = permutation_shapley(range(3), lambda T: float(np.mean([a[i] for i in T])) if T else 0.0,
                                   num_permutations=4, seed=9)

    assert estimate.phi == pytest.approx([-1.25, 1.0, 3.25], abs=1e-12)


def test_three_player_synergy_game_converges_within_its_standard_error():
    # exact standard values (2, 3, 5), faithful (5/3, 7/3, 11/3): test_shapley.py
    standard = permutation_shapley(GAME_PLAYERS, synergy_game, num_permutations=600, seed=2)
    faithful = permutation_shapley(GAME_PLAYERS, synergy_game, num_permutations=600, seed=2, include_empty=False)

    assert np.all(np.abs(standard.phi - [2.0, 3.0, 5.0]) <= 4 * standard.stderr)
    assert standard.phi == pytest.approx([2.0, 3.0, 5.0], abs=0.15)
    assert standard.phi.sum() == pytest.approx(10.0)  # efficient: every walk telescopes to U(S)
    assert faithful.phi == pytest.approx(standard.phi - np.array([1.0, 2.0, 4.0]) / 3)
    assert standard.stderr.max() < 0.1


@pytest.mark.parametrize("num_players", [8, 10])
def test_random_monotone_game_within_five_percent_of_the_value_range(num_players):
    players = list(range(num_players))
    utility = _monotone_game(num_players, seed=num_players)
    exact = shapley_values(players, utility)

    estimate = permutation_shapley(players, utility, num_permutations=200, seed=1)

    error = np.abs(estimate.phi - exact)
    assert error.max() <= 0.05 * np.ptp(exact)
    assert np.all(error <= 4 * estimate.stderr)
    assert estimate.phi.sum() == pytest.approx(utility(frozenset(players)))


def test_control_variate_beats_plain_sampling_on_a_fedsv_shaped_game():
    # same number of permutations (same cost); largest error over 20 seeds each
    players = list(range(10))
    utility = _fedsv_like_game(10, seed=0)
    exact = shapley_values(players, utility, include_empty=False)

    guided = [permutation_shapley(players, utility, num_permutations=10, seed=s, include_empty=False).phi
              for s in range(20)]
    plain = [monte_carlo_shapley(players, utility, num_permutations=10, seed=s, include_empty=False)
             for s in range(20)]

    worst_guided = max(np.abs(phi - exact).max() for phi in guided)
    worst_plain = max(np.abs(phi - exact).max() for phi in plain)
    assert worst_guided < 0.5 * worst_plain


def test_faithful_estimate_ignores_a_constant_shift_of_the_utilities():
    # in FedSV a change of the reference loss adds the same constant to every non-empty coalition
    utility = _monotone_game(7, seed=3)

    def shifted(coalition):
        return utility(coalition) + 0.8 if coalition else 0.0

    base = permutation_shapley(range(7), utility, num_permutations=12, seed=5, include_empty=False)
    moved = permutation_shapley(range(7), shifted, num_permutations=12, seed=5, include_empty=False)

    assert moved.phi == pytest.approx(base.phi, abs=1e-12)


def test_same_seed_same_estimate():
    utility = _monotone_game(9, seed=1)

    first = permutation_shapley(range(9), utility, num_permutations=6, seed=[7, 3])
    again = permutation_shapley(range(9), utility, num_permutations=6, seed=[7, 3])
    other = permutation_shapley(range(9), utility, num_permutations=6, seed=[7, 4])

    assert np.array_equal(first.phi, again.phi) and np.array_equal(first.stderr, again.stderr)
    assert not np.array_equal(first.phi, other.phi)


# ------------------------------------------------------------------------------------------
# Truncation
# ------------------------------------------------------------------------------------------
def test_truncation_bounds_the_efficiency_gap_and_saves_evaluations():
    # a saturating monotone game U(T) = 1 - exp(-sum of w): late gains are tiny (TMC's setting)
    players = list(range(10))
    w = np.random.default_rng(2).uniform(0.1, 1.0, 10)

    def utility(coalition):
        return 1.0 - math.exp(-sum(w[i] for i in coalition))

    total = utility(frozenset(players))
    tol = 0.05

    full = permutation_shapley(players, utility, num_permutations=40, seed=0)
    cut = permutation_shapley(players, utility, num_permutations=40, seed=0, truncation=tol)

    assert cut.num_truncated > 0 and full.num_truncated == 0
    assert len(cut.utilities) < len(full.utilities)
    # each truncated walk drops gains summing to U(S) - U(prefix), at most tol * U(S)
    assert 0 <= total - cut.phi.sum() <= tol * total
    assert full.phi.sum() == pytest.approx(total)


def test_truncation_must_be_non_negative():
    with pytest.raises(MetricInputError, match="truncation"):
        permutation_shapley(GAME_PLAYERS, synergy_game, num_permutations=2, seed=0, truncation=-0.1)


# ------------------------------------------------------------------------------------------
# Batched, deduplicated evaluation
# ------------------------------------------------------------------------------------------
def _counting_batch(utility):
    calls: list[list[frozenset]] = []

    def batch(coalitions):
        calls.append(list(coalitions))
        return [utility(c) for c in coalitions]

    return batch, calls


def test_one_batched_call_evaluates_each_needed_coalition_once():
    utility = _monotone_game(8, seed=0)
    batch, calls = _counting_batch(utility)

    estimate = permutation_shapley(range(8), batch_utility=batch, num_permutations=10, seed=1)

    assert len(calls) == 1
    requested = [c for call in calls for c in call]
    assert len(requested) == len(set(requested)) == len(estimate.utilities)
    assert frozenset() not in set(requested)
    # singletons and S once each, and at most m - 2 new prefixes per walk
    assert len(requested) <= 8 + 1 + 10 * (8 - 2)
    assert estimate.phi == pytest.approx(permutation_shapley(range(8), utility, num_permutations=10, seed=1).phi)


def test_truncated_walks_evaluate_position_by_position_without_repeats():
    utility = _monotone_game(8, seed=0)
    batch, calls = _counting_batch(utility)

    estimate = permutation_shapley(range(8), batch_utility=batch, num_permutations=10, seed=1, truncation=0.05)

    requested = [c for call in calls for c in call]
    assert len(requested) == len(set(requested)) == len(estimate.utilities)
    assert 1 < len(calls) <= 8  # the singletons and S, then one call per position still walked


def test_exactly_one_utility_source():
    with pytest.raises(MetricInputError, match="exactly one"):
        permutation_shapley(GAME_PLAYERS, num_permutations=2, seed=0)


# ------------------------------------------------------------------------------------------
# Federated rounds: method choice, the exact limit, 30 players
# ------------------------------------------------------------------------------------------
def _linear_round(num_clients: int, seed: int = 0):
    """Logistic model y = sigmoid(w x + b) on D = {(1, 1), (-1, 0)}; client n has w, b random."""
    rng = np.random.default_rng(seed)
    model = nn.Linear(1, 1)
    x = torch.tensor([[1.0], [-1.0]])
    y = torch.tensor([1, 0])
    params = [[np.array([[rng.normal(1.0, 1.0)]], dtype=np.float32), np.array([rng.normal(0.0, 0.3)], dtype=np.float32)]
              for _ in range(num_clients)]
    return model, list(range(100, 100 + num_clients)), params, x, y


@pytest.fixture
def counted_evaluate_many(monkeypatch):
    calls: list[int] = []
    real = federated_module.evaluate_many

    def counting(model, param_sets, *args, **kwargs):
        calls.append(len(param_sets))
        return real(model, param_sets, *args, **kwargs)

    monkeypatch.setattr(federated_module, "evaluate_many", counting)
    return calls


def test_permutation_round_matches_exact_for_eight_clients(counted_evaluate_many):
    model, ids, params, x, y = _linear_round(8)

    exact = federated_shapley(model, ids, params, x, y, ref_loss=0.7, include_empty=False)
    sampled = federated_shapley(model, ids, params, x, y, ref_loss=0.7, include_empty=False,
                                method="permutation", num_permutations=100, seed=[0, 1])

    assert counted_evaluate_many[0] == 255
    assert sampled.method == "permutation" and sampled.num_permutations == 100
    assert np.abs(sampled.phi - exact.phi).max() <= 0.05 * np.ptp(exact.phi)
    assert sampled.stderr.shape == (8,)
    # the coalitions the walks need, evaluated in few stacked calls, each once, fewer than exact
    assert sum(counted_evaluate_many[1:]) == len(sampled.utilities) < 255


def test_exact_round_refuses_thirty_clients_naming_the_setting(counted_evaluate_many):
    model, ids, params, x, y = _linear_round(30)

    with pytest.raises(MetricInputError, match=r"exact_max_players=10.*method='auto' or 'permutation'"):
        federated_shapley(model, ids, params, x, y, ref_loss=0.7, include_empty=True)
    assert counted_evaluate_many == []  # refused before building any coalition model


def test_auto_round_with_thirty_clients_samples(counted_evaluate_many):
    model, ids, params, x, y = _linear_round(30)

    result = federated_shapley(model, ids, params, x, y, ref_loss=0.7, include_empty=True, method="auto", seed=3)

    assert result.method == "permutation" and result.num_permutations == 10
    assert len(result.utilities) <= 30 + 1 + 10 * 28
    assert result.stderr.shape == (30,) and np.all(np.isfinite(result.stderr))


def test_auto_is_exact_up_to_its_limit():
    model, ids, params, x, y = _linear_round(4)

    auto = federated_shapley(model, ids, params, x, y, ref_loss=0.7, include_empty=True, method="auto")
    exact = federated_shapley(model, ids, params, x, y, ref_loss=0.7, include_empty=True)

    assert auto.method == "exact" and auto.num_permutations is None
    assert np.array_equal(auto.phi, exact.phi)
    assert resolve_method("auto", 4, auto_exact_players=3) == "permutation"


def test_pure_enumeration_refuses_above_its_limit():
    with pytest.raises(MetricInputError, match="EXACT_PLAYER_LIMIT"):
        shapley_values(range(EXACT_PLAYER_LIMIT + 1), lambda T: float(len(T)))


# ------------------------------------------------------------------------------------------
# Observer: settings and what the round's record says
# ------------------------------------------------------------------------------------------
def _observer_round(settings: FairnessSettings, num_clients: int):
    model, _, params, x, y = _linear_round(num_clients, seed=1)
    observer = FairnessObserver(settings, model, x, y, batch_size=2, loss_scaling="mean",
                                num_clients=num_clients, sensitive_attributes=[1], seed=4)
    rng = np.random.default_rng(2)
    record = RoundRecord(
        round=1,
        client_ids=np.arange(num_clients),
        client_metrics={"accuracy": rng.uniform(0.4, 0.9, num_clients),
                        "reward_accuracy": rng.uniform(0.4, 0.9, num_clients),
                        "num_samples": np.full(num_clients, 10.0)},
        client_confusion=rng.integers(1, 5, size=(num_clients, 2, 2)),
        server_metrics={"aux_loss_before": 0.7},
        client_params=params,
    )
    return observer.on_round_end(record)


def test_observer_records_the_sampler_and_its_budget():
    settings = FairnessSettings(shapley="auto", shapley_auto_exact_players=4, shapley_sampler_permutations=6)

    sampled = _observer_round(settings, 7)
    again = _observer_round(settings, 7)
    exact = _observer_round(settings, 4)

    assert sampled["shapley_method"] == "permutation"
    assert sampled["shapley_permutations"] == 6 and sampled["shapley_truncated"] == 0
    assert len(sampled["shapley_stderr"]) == 7
    assert sampled["num_coalitions"] <= 7 + 1 + 6 * 5
    assert sampled["phi"] == again["phi"]  # seeded by [seed, round]
    assert exact["shapley_method"] == "exact" and exact["num_coalitions"] == 15
    assert "shapley_permutations" not in exact and "shapley_stderr" not in exact


def test_observer_exact_with_thirty_participants_warns_and_samples():
    settings = FairnessSettings(shapley_permutations=2)

    with pytest.warns(UserWarning, match=r"exact_max_players=10.*shapley: auto"):
        out = _observer_round(settings, 30)

    assert out["shapley_method"] == "monte_carlo" and out["shapley_permutations"] == 2


# ------------------------------------------------------------------------------------------
# Sampling until a target error (or a budget)
# ------------------------------------------------------------------------------------------
def test_a_target_error_stops_where_a_fixed_budget_would_give_the_same_estimate():
    players = list(range(8))
    game = _fedsv_like_game(8, seed=3)

    adaptive = permutation_shapley(players, game, num_permutations=8, seed=5, include_empty=False, target_error=0.05)

    assert adaptive.stopped == "target" and adaptive.num_permutations > 8
    assert (adaptive.num_permutations - 8) % 8 == 0  # 8 more walks (m) at a time
    fixed = permutation_shapley(players, game, num_permutations=adaptive.num_permutations, seed=5, include_empty=False)
    assert adaptive.phi.tolist() == fixed.phi.tolist() and adaptive.stderr.tolist() == fixed.stderr.tolist()
    ratio = float(np.max(adaptive.stderr) / np.ptp(adaptive.phi))
    assert ratio <= 0.05 and adaptive.error_ratio == ratio
    fewer = permutation_shapley(players, game, num_permutations=adaptive.num_permutations - 8, seed=5,
                                include_empty=False)
    assert fewer.error_ratio > 0.05  # it stopped at the first check below the target


def test_a_target_error_stops_at_the_coalition_budget():
    players = list(range(9))
    game = _fedsv_like_game(9, seed=4)

    capped = permutation_shapley(players, game, num_permutations=9, seed=1, target_error=0.001, max_coalitions=150)

    assert capped.stopped == "budget" and len(capped.utilities) <= 150 and capped.error_ratio > 0.001
    one_more = permutation_shapley(players, game, num_permutations=capped.num_permutations + 9, seed=1)
    assert len(one_more.utilities) > 150  # the next 9 walks would have overspent the budget
    exact_recovery = permutation_shapley(players, {frozenset(c): float(len(c)) for c in _subsets(9)},
                                         num_permutations=9, seed=1, target_error=0.01)
    assert exact_recovery.stopped == "target" and exact_recovery.num_permutations == 9  # stderr 0 at once


def _subsets(m):
    import itertools

    return [c for r in range(1, m + 1) for c in itertools.combinations(range(m), r)]


def test_observer_records_the_target_the_error_reached_and_why_it_stopped():
    settings = FairnessSettings(shapley="auto", shapley_auto_exact_players=4, shapley_target_error=0.2,
                                shapley_max_coalitions=60)

    out = _observer_round(settings, 7)

    assert out["shapley_method"] == "permutation" and out["shapley_target_error"] == 0.2
    assert out["shapley_stopped"] in ("target", "budget") and out["shapley_max_coalitions"] == 60
    ratio = max(out["shapley_stderr"]) / (max(out["phi"]) - min(out["phi"]))
    assert out["shapley_error_ratio"] == pytest.approx(ratio, rel=1e-12)
    assert (ratio <= 0.2) == (out["shapley_stopped"] == "target")
    assert out["num_coalitions"] <= 60 or out["shapley_permutations"] == 10
    assert "shapley_stopped" not in _observer_round(FairnessSettings(shapley="auto", shapley_auto_exact_players=4), 7)


def test_fairness_config_fields_reach_the_settings_and_keep_the_hash():
    config = FairnessConfig(shapley="auto", shapley_auto_exact_players=5, shapley_sampler_permutations=20,
                            shapley_truncation=0.01)

    settings = fairness_settings(config)

    assert (settings.shapley, settings.shapley_auto_exact_players) == ("auto", 5)
    assert (settings.shapley_sampler_permutations, settings.shapley_truncation) == (20, 0.01)
    defaults = {"shapley": "exact", "shapley_auto_exact_players": 6, "shapley_sampler_permutations": 10,
                "shapley_truncation": 0.0, "shapley_target_error": 0.0, "shapley_max_coalitions": None}
    plain = ExperimentConfig.tiny(metrics={"fairness": {"enabled": True}})
    spelled_out = ExperimentConfig.tiny(metrics={"fairness": {"enabled": True, **defaults}})
    assert spelled_out.config_hash() == plain.config_hash()
    assert ExperimentConfig.tiny(metrics={"fairness": {"shapley": "auto"}}).config_hash() != plain.config_hash()


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("shapley", "kernel", "metrics.fairness.shapley"),
        ("shapley_sampler_permutations", 0, "metrics.fairness.shapley_sampler_permutations"),
        ("shapley_auto_exact_players", 0, "metrics.fairness.shapley_auto_exact_players"),
        ("shapley_truncation", -0.5, "metrics.fairness.shapley_truncation"),
        ("shapley_target_error", 1.0, "metrics.fairness.shapley_target_error"),
        ("shapley_max_coalitions", 0, "metrics.fairness.shapley_max_coalitions"),
    ],
)
def test_bad_sampler_settings_name_the_field(field, value, match):
    with pytest.raises(ConfigError, match=match):
        FairnessConfig(**{field: value})
    with pytest.raises(SettingsError, match=match.replace("metrics.fairness", "FairnessSettings")):
        FairnessSettings(**{field: value})
