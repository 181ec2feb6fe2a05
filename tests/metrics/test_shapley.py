"""Federated Shapley values (paper Eqs. 3-6, docs/references.md#fairness-3): game math and coalition models."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import fltrust.metrics.shapley.federated as federated_module
from fltrust.core.evaluation import get_params
from fltrust.metrics import (
    MetricInputError,
    all_coalitions,
    average_params,
    federated_shapley,
    monte_carlo_shapley,
    permutation_coalitions,
    sample_permutations,
    shapley_values,
)

from .data import GAME_A, GAME_B, GAME_PLAYERS, synergy_game


def _game_table() -> dict:
    return {coalition: synergy_game(coalition) for coalition in all_coalitions(GAME_PLAYERS)}


# ------------------------------------------------------------------------------------------
# Pure game math on U(T) = sum a_i + b [|T| >= 2], a = (1, 2, 4), b = 3
# ------------------------------------------------------------------------------------------
def test_standard_shapley_closed_form():
    # The synergy b switches on when a player joins a coalition of size 1. For |T| = 1 the
    # weight is 1 / (3 * C(2, 1)) = 1/6 and there are two such T, so each player gets b/3:
    # phi_i = a_i + b/3 = (1 + 1, 2 + 1, 4 + 1) = (2, 3, 5).
    phi = shapley_values(GAME_PLAYERS, _game_table(), include_empty=True)

    assert phi == pytest.approx([2.0, 3.0, 5.0])
    assert phi == pytest.approx([GAME_A[p] + GAME_B / 3 for p in GAME_PLAYERS])


def test_standard_shapley_is_efficient():
    # sum phi = U(S) = 1 + 2 + 4 + 3 = 10
    phi = shapley_values(GAME_PLAYERS, _game_table(), include_empty=True)

    assert phi.sum() == pytest.approx(synergy_game(frozenset(GAME_PLAYERS))) == pytest.approx(10.0)


def test_faithful_shapley_by_hand_and_identity():
    # Authors' FedSV (no empty coalition), player p1:
    # 1/3 * [ (U{1,2} - U{2})/2 + (U{1,3} - U{3})/2 + (U{1,2,3} - U{2,3})/1 ]
    # = 1/3 * [ (6 - 2)/2 + (8 - 4)/2 + (10 - 9) ] = 1/3 * (2 + 2 + 1) = 5/3.
    # Identity: faithful = standard - U({n})/3 = a_i + b/3 - a_i/3 = (5/3, 7/3, 11/3).
    table = _game_table()

    faithful = shapley_values(GAME_PLAYERS, table, include_empty=False)
    standard = shapley_values(GAME_PLAYERS, table, include_empty=True)

    assert faithful[0] == pytest.approx(5.0 / 3.0)
    assert faithful == pytest.approx([5.0 / 3.0, 7.0 / 3.0, 11.0 / 3.0])
    singletons = np.array([GAME_A[p] for p in GAME_PLAYERS])
    assert faithful == pytest.approx(standard - singletons / 3.0)


def test_faithful_shapley_violates_efficiency():
    # 5/3 + 7/3 + 11/3 = 23/3 != U(S) = 10
    faithful = shapley_values(GAME_PLAYERS, _game_table(), include_empty=False)

    assert faithful.sum() == pytest.approx(23.0 / 3.0)
    assert faithful.sum() != pytest.approx(10.0)


def test_reference_loss_cancels_only_without_empty_coalition():
    # U(T) = l_ref - l(T): adding c to every non-empty coalition's utility is a change of l_ref.
    # Faithful values are unchanged; standard values move by c/m each (efficiency with U(empty)=0).
    c = 0.75
    table = _game_table()
    shifted = {coalition: u + c for coalition, u in table.items()}

    assert shapley_values(GAME_PLAYERS, shifted, include_empty=False) == pytest.approx(
        shapley_values(GAME_PLAYERS, table, include_empty=False)
    )
    assert shapley_values(GAME_PLAYERS, shifted, include_empty=True) == pytest.approx(
        shapley_values(GAME_PLAYERS, table, include_empty=True) + c / 3.0
    )


def test_callable_and_mapping_utilities_agree():
    assert shapley_values(GAME_PLAYERS, synergy_game) == pytest.approx(shapley_values(GAME_PLAYERS, _game_table()))


def test_missing_coalition_is_a_clear_error():
    table = _game_table()
    del table[frozenset(["p1", "p2"])]

    with pytest.raises(MetricInputError, match="no value for coalition"):
        shapley_values(GAME_PLAYERS, table)


def test_duplicate_players_are_rejected():
    with pytest.raises(MetricInputError, match="distinct"):
        shapley_values(["a", "a"], {})


def test_all_coalitions_counts_and_order():
    coalitions = all_coalitions([10, 20, 30])

    assert len(coalitions) == 2**3 - 1
    assert coalitions[:3] == [frozenset([10]), frozenset([20]), frozenset([30])]
    assert coalitions[-1] == frozenset([10, 20, 30])
    assert len(all_coalitions(range(5))) == 31


# ------------------------------------------------------------------------------------------
# Monte Carlo
# ------------------------------------------------------------------------------------------
def test_monte_carlo_converges_to_exact():
    # A player's marginal contribution is a_i + b when it joins second (prob 1/3), else a_i:
    # variance b^2 * 2/9 = 2, so the std of a 4000-permutation mean is sqrt(2/4000) ~ 0.022.
    estimate = monte_carlo_shapley(GAME_PLAYERS, synergy_game, num_permutations=4000, seed=7)

    assert estimate == pytest.approx([2.0, 3.0, 5.0], abs=0.12)
    assert estimate.sum() == pytest.approx(10.0)  # every permutation is efficient


def test_monte_carlo_faithful_is_standard_minus_singletons():
    standard = monte_carlo_shapley(GAME_PLAYERS, synergy_game, num_permutations=50, seed=3)
    faithful = monte_carlo_shapley(GAME_PLAYERS, synergy_game, num_permutations=50, seed=3, include_empty=False)

    singletons = np.array([GAME_A[p] for p in GAME_PLAYERS])
    assert faithful == pytest.approx(standard - singletons / 3.0)
    assert monte_carlo_shapley(
        GAME_PLAYERS, synergy_game, num_permutations=4000, seed=7, include_empty=False
    ) == pytest.approx([5.0 / 3.0, 7.0 / 3.0, 11.0 / 3.0], abs=0.12)


def test_monte_carlo_is_exact_for_an_additive_game():
    # every marginal contribution of i is a_i, whatever the order
    players = list(range(5))
    a = [0.5, -1.0, 2.0, 0.0, 3.5]

    estimate = monte_carlo_shapley(players, lambda T: sum(a[i] for i in T), num_permutations=3, seed=0)

    assert estimate == pytest.approx(a)


def test_monte_carlo_is_seeded():
    first = monte_carlo_shapley(GAME_PLAYERS, synergy_game, num_permutations=20, seed=[1, 5])
    again = monte_carlo_shapley(GAME_PLAYERS, synergy_game, num_permutations=20, seed=[1, 5])
    other = monte_carlo_shapley(GAME_PLAYERS, synergy_game, num_permutations=20, seed=[1, 6])

    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_permutation_coalitions_are_prefixes_plus_singletons():
    # order (players by position) 0, 1, 2 -> prefixes {10}, {10,20}, {10,20,30}; plus {20}, {30}
    coalitions = permutation_coalitions([10, 20, 30], np.array([[0, 1, 2]]))

    assert set(coalitions) == {
        frozenset([10]),
        frozenset([20]),
        frozenset([30]),
        frozenset([10, 20]),
        frozenset([10, 20, 30]),
    }


def test_sample_permutations_rows_are_permutations():
    perms = sample_permutations(5, 8, seed=0)

    assert perms.shape == (8, 5)
    assert all(sorted(row) == [0, 1, 2, 3, 4] for row in perms.tolist())
    with pytest.raises(MetricInputError, match="num_permutations"):
        sample_permutations(5, 0, seed=0)


# ------------------------------------------------------------------------------------------
# Coalition models
# ------------------------------------------------------------------------------------------
def test_average_params_uniform_weighted_and_dtypes():
    # uniform: ([1, 2] + [3, 6]) / 2 = [2, 4]; weights 1:3 -> [1*1 + 3*3, 1*2 + 3*6] / 4 = [2.5, 5]
    # integer buffer: (3 + 4) / 2 = 3.5 -> ties to even -> 4 ; weighted (3 + 3*4)/4 = 3.75 -> 4
    first = [np.array([1.0, 2.0], dtype=np.float32), np.array(3, dtype=np.int64)]
    second = [np.array([3.0, 6.0], dtype=np.float32), np.array(4, dtype=np.int64)]

    uniform = average_params([first, second])
    weighted = average_params([first, second], [1.0, 3.0])

    assert uniform[0].tolist() == [2.0, 4.0] and uniform[0].dtype == np.float32
    assert uniform[1] == 4 and uniform[1].dtype == np.int64
    assert weighted[0].tolist() == [2.5, 5.0]
    assert weighted[1] == 4


def test_average_params_rejects_bad_input():
    params = [np.zeros(2, dtype=np.float32)]
    with pytest.raises(MetricInputError, match="weights"):
        average_params([params, params], [1.0, -1.0])
    with pytest.raises(MetricInputError, match="shape"):
        average_params([params, [np.zeros(3, dtype=np.float32)]])
    with pytest.raises(MetricInputError, match="at least one"):
        average_params([])


# A 2-parameter logistic model y_hat = sigmoid(w x + b) with b = 0, evaluated on
# D = {(x=1, y=1), (x=-1, y=0)}: both samples have BCE loss log(1 + e^{-w}), so the mean loss of a
# coalition model is L(w_bar) = log(1 + e^{-w_bar}) with w_bar the mean weight of its members.
def _loss(w: float) -> float:
    return math.log1p(math.exp(-w))


def _logistic_setup(weights_by_client):
    model = nn.Linear(1, 1)
    x = torch.tensor([[1.0], [-1.0]])
    y = torch.tensor([1, 0])
    ids = list(weights_by_client)
    params = [
        [np.array([[w]], dtype=np.float32), np.array([0.0], dtype=np.float32)] for w in weights_by_client.values()
    ]
    return model, ids, params, x, y


def test_federated_shapley_utilities_and_values_by_hand():
    # clients 3, 7, 9 with w = 0, 2, 4; theta_k has w = 0, so l_ref = L(0) = log 2.
    # Coalition means: {3}:0 {7}:2 {9}:4 {3,7}:1 {3,9}:2 {7,9}:3 {3,7,9}:2
    model, ids, params, x, y = _logistic_setup({3: 0.0, 7: 2.0, 9: 4.0})
    ref = math.log(2.0)

    result = federated_shapley(model, ids, params, x, y, ref_loss=ref, include_empty=False)

    mean_w = {(3,): 0, (7,): 2, (9,): 4, (3, 7): 1, (3, 9): 2, (7, 9): 3, (3, 7, 9): 2}
    for members, w in mean_w.items():
        assert result.utilities[frozenset(members)] == pytest.approx(ref - _loss(w), abs=1e-6)
    # faithful phi of client 3 = 1/3 [ (U{3,7}-U{7})/2 + (U{3,9}-U{9})/2 + (U{3,7,9}-U{7,9}) ]
    # and U(A) - U(B) = L(w_B) - L(w_A):
    phi_3 = ((_loss(2) - _loss(1)) / 2 + (_loss(4) - _loss(2)) / 2 + (_loss(3) - _loss(2))) / 3
    assert result.phi[0] == pytest.approx(phi_3, abs=1e-6)
    assert result.method == "exact"


def test_federated_shapley_standard_is_efficient():
    # sum phi = U({3,7,9}) = l_ref - L(2)
    model, ids, params, x, y = _logistic_setup({3: 0.0, 7: 2.0, 9: 4.0})

    result = federated_shapley(model, ids, params, x, y, ref_loss=math.log(2.0), include_empty=True)

    assert result.phi.sum() == pytest.approx(math.log(2.0) - _loss(2.0), abs=1e-6)


def test_federated_shapley_fedavg_weighted_coalitions():
    # weights 1, 1, 2: {3,9} -> (0 + 2*4)/3 = 8/3 ; {7,9} -> (2 + 8)/3 = 10/3 ; all -> 10/4 = 2.5
    model, ids, params, x, y = _logistic_setup({3: 0.0, 7: 2.0, 9: 4.0})

    result = federated_shapley(
        model, ids, params, x, y, ref_loss=0.0, include_empty=True, weights=[1.0, 1.0, 2.0]
    )

    assert result.utilities[frozenset([3, 9])] == pytest.approx(-_loss(8.0 / 3.0), abs=1e-6)
    assert result.utilities[frozenset([7, 9])] == pytest.approx(-_loss(10.0 / 3.0), abs=1e-6)
    assert result.utilities[frozenset([3, 7, 9])] == pytest.approx(-_loss(2.5), abs=1e-6)


@pytest.fixture
def counted_evaluate_many(monkeypatch):
    """Wrap evaluate_many where federated_shapley calls it and record each call's number of parameter sets."""
    calls: list[list] = []
    real = federated_module.evaluate_many

    def counting(model, param_sets, *args, **kwargs):
        calls.append(param_sets)
        return real(model, param_sets, *args, **kwargs)

    monkeypatch.setattr(federated_module, "evaluate_many", counting)
    return calls


def test_one_evaluate_many_call_with_31_coalitions_for_5_players(counted_evaluate_many):
    model, ids, params, x, y = _logistic_setup({0: 0.1, 1: 0.5, 2: 1.0, 3: 2.0, 4: -1.0})

    federated_shapley(model, ids, params, x, y, ref_loss=0.7, include_empty=False)

    assert [len(sets) for sets in counted_evaluate_many] == [31]


def test_monte_carlo_round_evaluates_only_needed_coalitions_once(counted_evaluate_many):
    model, ids, params, x, y = _logistic_setup({0: 0.1, 1: 0.5, 2: 1.0, 3: 2.0, 4: -1.0})
    needed = permutation_coalitions(ids, sample_permutations(5, 3, seed=[4, 2]))

    result = federated_shapley(
        model, ids, params, x, y, ref_loss=0.7, include_empty=True,
        method="monte_carlo", num_permutations=3, seed=[4, 2],
    )

    assert [len(sets) for sets in counted_evaluate_many] == [len(needed)]
    assert len(needed) < 31
    assert result.method == "monte_carlo"
    # each permutation telescopes to U(S) - U(empty), so the estimate is efficient
    assert result.phi.sum() == pytest.approx(result.utilities[frozenset(ids)], abs=1e-9)


def test_integer_buffers_are_averaged_and_kept_integer(counted_evaluate_many):
    # BatchNorm num_batches_tracked of 1, 2, 4 -> full coalition mean 7/3 -> 2 (int64)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))
    names = list(model.state_dict())
    counter = names.index("1.num_batches_tracked")
    params = []
    for tracked in (1, 2, 4):
        p = get_params(model)
        p[counter] = np.array(tracked, dtype=np.int64)
        params.append(p)

    federated_shapley(
        model, [0, 1, 2], params, torch.randn(4, 2), torch.tensor([0, 1, 0, 1]), ref_loss=0.0, include_empty=True
    )

    full = counted_evaluate_many[0][-1]  # the last coalition is the full set
    assert full[counter].dtype == np.int64 and int(full[counter]) == 2


def test_federated_shapley_rejects_misaligned_inputs():
    model, ids, params, x, y = _logistic_setup({3: 0.0, 7: 2.0})
    with pytest.raises(MetricInputError, match="align"):
        federated_shapley(model, ids + [8], params, x, y, ref_loss=0.0, include_empty=True)
    with pytest.raises(MetricInputError, match="method"):
        federated_shapley(model, ids, params, x, y, ref_loss=0.0, include_empty=True, method="kernel")
