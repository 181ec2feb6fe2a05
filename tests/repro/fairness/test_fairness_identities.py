"""The fairness spec's §7 identities (docs/references.md#fairness-7), checked on the committed condition results.

The authors' result JSON stores the cumulative FedSV vector of all C clients, the accuracies and
the gains of every round, and the spec lists identities that hold exactly in all 72 of their
files: f_o = mean(accuracy); f_j = J(gains); gains_i = acc_i / shap[cid_i], i.e. the participants
are recovered from gains . s = accuracy against the changed entries of the cumulative vector;
exactly the participants' entries change per round; f_g = 1 - median |m_n|. Our condition results
(``papers_repro/fairness_analytics/results/*.json``, written by
``fltrust.repro.fairness.run.condition_result``) keep the same per-client data (``per_client``) plus
the rewards. Here every stored notion is recomputed from the stored per-client data with the
functions that computed it in the run -- ``individual_fairness`` (f_j and the gains),
``incentive_fairness`` (f_r), ``orchestrator_fairness`` (f_o), ``general_fairness`` (F_T) of
:mod:`fltrust.metrics.fairness`, and ``window_means`` of :mod:`fltrust.repro.fairness.run` (Table 3) --
and, where the spec gives a closed form, also against that form written out with numpy (J, f_g,
the Table 3 protocol). No data, no run folders, no training. f_g is checked by its closed form only:
its fltrust function takes the confusion matrices, which a condition result does not store.

Stored floats have 6 significant digits (per-client) and 10 (per-round notions); the tolerances
below allow for that rounding and nothing more.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fltrust.metrics.fairness import general_fairness, incentive_fairness, individual_fairness, orchestrator_fairness
from fltrust.repro.fairness.run import RESULTS_DIR, result_frame, window_means

RESULTS = RESULTS_DIR
FILES = sorted(RESULTS.glob("*.json"))
WITH_CLIENTS = [p for p in FILES if "per_client" in json.loads(p.read_text())]
RTOL = 5e-5  # two 6-significant-digit factors: relative error <= 1e-5


def jain(values: np.ndarray) -> float:
    """Jain's index (spec 2.1, docs/references.md#fairness-2-1): (sum x)^2 / (m sum x^2); NaN for all zero."""
    values = np.asarray(values, dtype=float)
    squares = float(np.sum(values**2))
    return float(np.sum(values) ** 2 / (values.size * squares)) if squares > 0 else float("nan")


def jain_tolerance(values: np.ndarray) -> float:
    """Absolute error of J caused by rounding every value to 6 significant digits (first order)."""
    values = np.asarray(values, dtype=float)
    total, squares, m = np.sum(values), np.sum(values**2), values.size
    if not np.isfinite(squares) or squares == 0:
        return 1e-7  # J is NaN (or its guard value): compared exactly
    grad = 2 * total / (m * squares) - 2 * total**2 * values / (m * squares**2)
    return float(np.sum(np.abs(grad * values)) * 1e-5 + 1e-7)


def stored_equals(stored: float | None, expected: float, tol: float) -> bool:
    """A stored notion against its recomputed value; NaN is stored as null (e.g. J of all-zero
    gains when every participant's accuracy is 0, as in an early FEMNIST round)."""
    if np.isnan(expected):
        return stored is None
    return stored is not None and (stored == expected or abs(stored - expected) <= tol)


def rounds_of(path: Path):
    """(result, repeat, per-round notions of that repeat, round index k, previous vector) per round."""
    result = json.loads(path.read_text())
    per_round = result["per_round"]
    keys = list(zip(per_round["repeat"], per_round["round"]))
    for rep in result["per_client"]["repeats"]:
        previous = np.zeros(result["num_clients"])
        for k, round_ in enumerate(rep["round"]):
            row = keys.index((rep["repeat"], round_))
            notions = {n: per_round[n][row] for n in ("f_j", "f_g", "f_r", "f_o", "F_T")}
            yield result, rep, notions, k, previous
            previous = np.asarray(rep["cumulative_shapley"][k], dtype=float)


def test_a_committed_result_holds_per_client_data():
    # Assert: the identities below are not skipped on every file
    assert WITH_CLIENTS, (f"no result under {RESULTS} holds per_client data; "
                          "rewrite one (fltrust.repro.fairness.run.rewrite_result)")


@pytest.mark.parametrize("path", WITH_CLIENTS, ids=[p.stem for p in WITH_CLIENTS])
def test_spec7_identities_every_round(path):
    checked = 0
    for result, rep, notions, k, previous in rounds_of(path):
        # Prepare
        ids = np.asarray(rep["client_ids"][k])
        acc = np.asarray(rep["accuracy"][k], dtype=float)
        rewards = np.asarray(rep["rewards"][k], dtype=float)
        s = np.asarray(rep["s"][k], dtype=float)
        gains = np.asarray([np.nan if g is None else g for g in rep["gains"][k]], dtype=float)
        vector = np.asarray(rep["cumulative_shapley"][k], dtype=float)
        where = f"{path.stem} repeat {rep['repeat']} round {rep['round'][k]}"

        # f_o = mean(accuracy)
        assert notions["f_o"] == pytest.approx(orchestrator_fairness(acc), abs=1e-6), where
        assert orchestrator_fairness(acc) == pytest.approx(acc.mean(), abs=1e-12), where
        # gains_i = acc_i / s_i (fltrust's f_j ratios), and gains . s = accuracy against the cumulative vector at cid_i
        individual = individual_fairness(acc, s)  # faithful: signed s, no guard
        np.testing.assert_allclose(gains, individual.ratios, rtol=RTOL, err_msg=where)
        np.testing.assert_allclose(gains * vector[ids], acc, rtol=RTOL, atol=1e-9, err_msg=where)
        assert np.array_equal(vector[ids], s), where
        # exactly the participants' entries change (as in all 72 of the authors' files); the others
        # keep their value, 0 for a client never selected
        changed = np.flatnonzero(vector != previous)
        assert sorted(changed.tolist()) == sorted(ids.tolist()), f"{where}: changed entries {changed.tolist()}"
        # the authors' files store no ids: cid_i is the changed entry j with gains_i * shap_j = acc_i
        for i, cid in enumerate(ids):
            candidates = [j for j in changed if np.isclose(gains[i] * vector[j], acc[i], rtol=RTOL)]
            assert cid in candidates, f"{where}: client {cid} not recovered (candidates {candidates})"
        # the count of non-positive s
        assert rep["num_nonpositive_s"][k] == int(np.sum(s <= 0)), where
        if result["mode"] == "faithful":
            # f_j = J(gains): fltrust's value, and the closed form of J on the stored gains
            assert stored_equals(notions["f_j"], individual.value, jain_tolerance(gains) + 1e-9), where
            assert stored_equals(notions["f_j"], jain(gains), jain_tolerance(gains) + 1e-9), where
            # f_r = J(rewards / s), 1 when the ratios sum to exactly 0 (the authors' only guard)
            ratios = rewards / s
            expected_fr = 1.0 if np.sum(ratios) == 0 else jain(ratios)
            incentive = incentive_fairness(rewards, s)
            assert stored_equals(notions["f_r"], incentive.value, jain_tolerance(ratios) + 1e-9), where
            assert stored_equals(notions["f_r"], expected_fr, jain_tolerance(ratios) + 1e-9), where
            # f_g = 1 - median |m_n| (the authors' group score; closed form only, see the module docstring)
            scores = np.asarray(rep["group_scores"][k], dtype=float)
            assert notions["f_g"] == pytest.approx(1 - np.median(np.abs(scores)), abs=1e-5), where
        # F_T = mean of the four notions (fltrust's general_fairness with equal weights)
        four = {n: notions[n] for n in ("f_j", "f_g", "f_r", "f_o")}
        if all(v is not None for v in four.values()):
            equal = dict.fromkeys(four, 0.25)
            assert notions["F_T"] == pytest.approx(general_fairness(four, equal), abs=1e-8), where
            assert general_fairness(four, equal) == pytest.approx(np.mean(list(four.values())), abs=1e-12), where
        checked += 1
    assert checked == len(json.loads(path.read_text())["per_round"]["round"])


@pytest.mark.parametrize("path", WITH_CLIENTS, ids=[p.stem for p in WITH_CLIENTS])
def test_cumulative_fedsv_is_the_running_sum_of_the_round_values(path):
    # Prepare / Execute: phi_{n,k} = s_{n,k} - s_{n,k-1}; summing phi over the rounds gives the last vector
    for rep in json.loads(path.read_text())["per_client"]["repeats"]:
        vectors = np.asarray(rep["cumulative_shapley"], dtype=float)
        total = np.zeros(vectors.shape[1])
        previous = np.zeros(vectors.shape[1])
        for k, ids in enumerate(rep["client_ids"]):
            total[ids] += vectors[k, ids] - previous[ids]
            previous = vectors[k]

        # Assert: telescoping sum, never-selected clients stay exactly 0
        np.testing.assert_allclose(total, vectors[-1], rtol=1e-9, atol=1e-12)
        selected = {i for ids in rep["client_ids"] for i in ids}
        never = [i for i in range(vectors.shape[1]) if i not in selected]
        assert np.all(vectors[-1, never] == 0)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_table3_value_is_the_window_mean_of_the_stored_rounds(path):
    # Prepare
    result = json.loads(path.read_text())
    per_round = result["per_round"]
    first, last = result["window"]
    repeats = sorted(set(per_round["repeat"]))
    matrix = np.full((len(repeats), last - first + 1), np.nan)
    for rep, round_, value in zip(per_round["repeat"], per_round["round"], per_round["F_T"]):
        if first <= round_ <= last:
            matrix[repeats.index(rep), round_ - first] = np.nan if value is None else value

    # Execute: the Table 3 protocol (spec 8, docs/references.md#fairness-8): mean over repeats per round, then
    # over the window
    per_position = np.nanmean(matrix, axis=0) if result["mode"] == "corrected" else matrix.mean(axis=0)
    value = float(np.nanmean(per_position)) if result["mode"] == "corrected" else float(per_position.mean())

    # fltrust's Table 3 (fltrust.repro.fairness.run.window_means) on the stored per-round notions
    ours = window_means(result_frame(result), first, last, skip_nan=result["mode"] == "corrected")

    # Assert
    assert result["table3"]["F_T"] == pytest.approx(value, abs=1e-8)
    assert ours["F_T"] == pytest.approx(value, abs=1e-8)
    assert result["table3"]["repeats"] == len(repeats) == len(result["run_ids"]) == ours["repeats"]
