"""Table 3 comparison, Figure 4 points and RESULTS.md on hand-made condition results."""

from __future__ import annotations

import json
import math

import pytest

from fltrust.repro.fairness import figure4_frame, table3
from fltrust.repro.fairness_report import (
    RESULT_KEYS,
    TABLE_COLUMNS,
    ResultsError,
    load_results,
    missing_conditions,
    results_markdown,
    summary_table,
    write_results_md,
)

REPORTED = {
    "source": {"protocol": "mean over rounds 15-30"},
    "tolerance": {"absolute": 0.10, "reason": "twice the median repeat spread"},
    "values": {
        "fedavg_nslkdd_100c_iid": 0.50,
        "qfedavg_nslkdd_100c_iid": 0.50,
        "ditto_nslkdd_100c_niid": 0.53,
        "fedavg_cifar10_100c_iid": 0.78,
    },
}


def make_result(condition, F_T, *, std=None, repeats=1, mode="faithful", quick=False, rounds=30,
                window=(15, 30), deviations=(), per_round=None, seconds=(12.0,), synthetic=False):
    """A condition result with the keys condition_result writes (notions chosen so their mean is F_T)."""
    return {
        "condition": condition,
        "quick": quick,
        "complete": True,
        "mode": mode,
        "rounds": rounds,
        "window": list(window),
        "num_clients": 100,
        "synthetic": synthetic,
        "deviations": list(deviations),
        "seconds_per_run": list(seconds),
        "run_ids": [f"{condition}-x-s{r}-r{r}" for r in range(repeats)],
        "table3": {"f_j": F_T - 0.1, "f_g": F_T + 0.1, "f_r": F_T - 0.2, "f_o": F_T + 0.2, "F_T": F_T,
                   "F_T_per_repeat": [F_T] * repeats, "F_T_std": std, "repeats": repeats,
                   "rounds_in_window": window[1] - window[0] + 1, "mean_local_accuracy": F_T + 0.2,
                   "aux_accuracy": 0.8},
        "per_round": per_round or {},
    }


@pytest.fixture
def results():
    return [
        make_result("fedavg_nslkdd_100c_iid", 0.55, std=0.02, repeats=3,
                    deviations=["float32 model"], seconds=(10.0, 20.0, 30.0)),
        make_result("qfedavg_nslkdd_100c_iid", 0.65, deviations=["float32 model", "one more"]),
        make_result("ditto_nslkdd_100c_niid", 0.40),
    ]


def test_table3_within_tolerance_logic(results):
    # Execute
    table = table3(results, REPORTED).set_index("condition")

    # Assert: |0.05| within 0.10, |0.15| outside, |-0.13| outside
    assert table.at["fedavg_nslkdd_100c_iid", "delta"] == pytest.approx(0.05)
    assert bool(table.at["fedavg_nslkdd_100c_iid", "within_tolerance"]) is True
    assert table.at["qfedavg_nslkdd_100c_iid", "delta"] == pytest.approx(0.15)
    assert bool(table.at["qfedavg_nslkdd_100c_iid", "within_tolerance"]) is False
    assert bool(table.at["ditto_nslkdd_100c_niid", "within_tolerance"]) is False
    assert table.at["fedavg_nslkdd_100c_iid", "dataset"] == "NSL-KDD (100C)"


def test_table3_condition_without_paper_value_has_no_verdict():
    # Prepare: a condition reported.yaml does not list
    result = make_result("ditto_nslkdd_100c_iid", 0.5)

    # Execute
    row = table3([result], REPORTED).iloc[0]

    # Assert
    assert row["paper_F_T"] is None and row["delta"] is None and row["within_tolerance"] is None


def test_summary_table_adds_mode_window_and_mean_seconds(results):
    # Execute
    table = summary_table(results, REPORTED)

    # Assert
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert table.loc[0, "seconds_per_run"] == pytest.approx(20.0)
    assert table.loc[0, "window"] == (15, 30)
    assert set(table["mode"]) == {"faithful"}


def test_summary_table_of_no_results_is_empty_with_columns():
    table = summary_table([], REPORTED)
    assert table.empty and list(table.columns) == list(TABLE_COLUMNS)


def test_missing_conditions_per_mode(results):
    # Execute
    faithful = missing_conditions(results)
    corrected = missing_conditions(results, "corrected")

    # Assert
    assert len(faithful) == 21 and "fedavg_nslkdd_100c_iid" not in faithful
    assert len(corrected) == 24


def test_results_markdown_cells_in_paper_layout(results):
    # Execute
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED)

    # Assert: paper / ours ± std (n) / Δ / verdict, and "not run" for absent conditions
    assert "| NSL-KDD (100C) | 0.50 / 0.550 ± 0.020 (n=3) / Δ +0.050 / ✓ |" in text
    assert "0.50 / 0.650 (n=1) / Δ +0.150 / ✗" in text
    assert "0.53 / 0.400 (n=1) / Δ -0.130 / ✗" in text
    assert "| CIFAR-10 cross-device (100C) | 0.78 / not run |" in text
    assert "1 of 3 run condition(s) within tolerance; 21 of 24 not run." in text
    assert "`fltrust repro fairness`" in text and "QUICK" not in text


def test_results_markdown_long_table_tolerance_deviations_and_not_run(results):
    # Execute
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED)

    # Assert
    assert ("| fedavg_nslkdd_100c_iid | faithful | 0.450 | 0.650 | 0.350 | 0.750 | 0.550 | 0.750 | 30 | 15-30 "
            "| 100 | 3 | 20.0 |  |") in text
    assert "|Δ| ≤ 0.10 (absolute, on F_T). twice the median repeat spread" in text
    assert "- float32 model (fedavg_nslkdd_100c_iid, qfedavg_nslkdd_100c_iid)" in text
    assert "- one more (qfedavg_nslkdd_100c_iid)" in text
    not_run = text.split("## Not run")[1]
    assert "fedavg_cifar10_100c_iid" in not_run and "fedavg_nslkdd_100c_iid" not in not_run


def test_results_markdown_quick_note_from_flag_or_results(results):
    # Execute
    by_flag = results_markdown(table3(results, REPORTED), results, quick=True, reported=REPORTED)
    quick_results = [make_result("fedavg_nslkdd_100c_iid", 0.5, quick=True, rounds=3, window=(1, 3))]
    by_result = results_markdown(table3(quick_results, REPORTED), quick_results, quick=False, reported=REPORTED)

    # Assert
    for text in (by_flag, by_result):
        assert "QUICK RUN: these numbers are smoke tests, NOT comparable with the paper" in text
        assert "`fltrust repro fairness --quick`" in text


def test_results_markdown_marks_synthetic_and_corrected_mode():
    # Prepare
    results = [make_result("fedavg_nslkdd_100c_iid", 0.5, synthetic=True),
               make_result("fedavg_nslkdd_100c_iid", 0.6, mode="corrected")]

    # Execute
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED)

    # Assert: one paper-layout table per mode, each with its own value
    assert "SYNTHETIC DATA" in text and "fedavg_nslkdd_100c_iid" in text.split("SYNTHETIC DATA")[1].split("\n")[0]
    faithful, corrected = text.split("## Table 3, corrected mode")
    assert "0.50 / 0.500 (n=1)" in faithful.split("## Table 3, faithful mode")[1]
    assert "0.50 / 0.600 (n=1)" in corrected.split("## Tolerance")[0]


def test_results_markdown_without_results_lists_all_24_as_not_run():
    text = results_markdown(table3([], REPORTED), [], quick=False, reported=REPORTED)
    assert text.count("/ not run") == 24
    assert "No condition has run yet." in text


def test_write_results_md_is_atomic_and_returns_path(tmp_path, results):
    # Execute
    path = write_results_md(summary_table(results, REPORTED), results, tmp_path / "out" / "RESULTS.md",
                            quick=False, reported=REPORTED)

    # Assert
    assert path.read_text().startswith("# Federated Fairness Analytics")
    assert sorted(p.name for p in path.parent.iterdir()) == ["RESULTS.md"]  # no temporary file left


def test_write_results_md_rejects_a_table_of_other_results(tmp_path, results):
    with pytest.raises(ResultsError, match="table3"):
        write_results_md(table3(results[:2], REPORTED), results, tmp_path / "R.md", quick=False, reported=REPORTED)
    with pytest.raises(ResultsError, match="same list"):
        write_results_md(table3(results[::-1], REPORTED), results, tmp_path / "R.md", quick=False,
                         reported=REPORTED)


def test_load_results_sorted_and_validated(tmp_path, results):
    # Prepare
    for res in results:
        (tmp_path / f"{res['condition']}.json").write_text(json.dumps(res))

    # Execute
    loaded = load_results(tmp_path)

    # Assert
    assert [r["condition"] for r in loaded] == sorted(r["condition"] for r in results)
    assert load_results(tmp_path / "absent") == []


def test_load_results_names_a_broken_file(tmp_path, results):
    # Prepare
    (tmp_path / "broken.json").write_text("{not json")
    incomplete = {k: v for k, v in results[0].items() if k != "table3"}
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "incomplete.json").write_text(json.dumps(incomplete))

    # Execute / Assert
    with pytest.raises(ResultsError, match="broken.json is not valid JSON"):
        load_results(tmp_path)
    with pytest.raises(ResultsError, match=r"incomplete.json lacks \['table3'\]"):
        load_results(tmp_path / "other")
    assert "table3" in RESULT_KEYS


def _per_round(rounds, repeats):
    """F_T of repeat r in round k = k/100 + 0.02 r; accuracy = F_T + 0.3."""
    data = {k: [] for k in ("repeat", "round", "f_j", "f_g", "f_r", "f_o", "F_T", "mean_local_accuracy",
                            "aux_accuracy")}
    for r in range(repeats):
        for k in range(1, rounds + 1):
            value = k / 100 + 0.02 * r
            for key, v in (("repeat", r), ("round", k), ("f_j", value), ("f_g", value), ("f_r", value),
                           ("f_o", value), ("F_T", value), ("mean_local_accuracy", value + 0.3),
                           ("aux_accuracy", None)):
                data[key].append(v)
    return data


def test_figure4_frame_averages_rounds_21_to_30():
    # Prepare: window 21..30, repeats 0 and 1: mean(k)/100 + 0.01 = 0.255 + 0.01
    result = make_result("fedavg_nslkdd_100c_iid", 0.99, per_round=_per_round(30, 2))

    # Execute
    row = figure4_frame([result]).iloc[0]

    # Assert
    assert row["F_T"] == pytest.approx(0.265)
    assert row["mean_local_accuracy"] == pytest.approx(0.565)
    assert row["window"] == (21, 30)
    assert row["dataset"] == "NSL-KDD (100C)" and row["strategy"] == "fedavg" and row["setting"] == "iid"


def test_figure4_frame_quick_run_falls_back_to_its_window():
    # Prepare: a 3-round quick result
    result = make_result("ditto_nslkdd_100c_niid", 0.42, quick=True, rounds=3, window=(1, 3),
                         per_round=_per_round(3, 1))

    # Execute
    row = figure4_frame([result]).iloc[0]

    # Assert
    assert row["F_T"] == pytest.approx(0.42) and row["window"] == (1, 3)
    assert not math.isnan(row["mean_local_accuracy"])
