"""The Table 3 window protocol and comparison, Figure 4 points and RESULTS.md on hand-made condition results."""

from __future__ import annotations

import json
import math

import pytest

from fltrust.metrics import MetricInputError
from fltrust.repro.fairness.authors import load_authors_runs
from fltrust.repro.fairness.run import figure4_frame, table3, table3_window_mean
from fltrust.repro.fairness.report import (
    RESULT_KEYS,
    authors_markdown,
    TABLE_COLUMNS,
    ResultsError,
    load_misses,
    load_results,
    stale_results,
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

    # Assert: paper / ours ± std (n) / Δ / verdict (|0.05| is within ±0.05), "not run" for absent conditions
    assert "| NSL-KDD (100C) | 0.50 / 0.550 ± 0.020 (n=3) / Δ +0.050 / ✓✓ |" in text
    assert "0.50 / 0.650 (n=1) / Δ +0.150 / ✗" in text
    assert "0.53 / 0.400 (n=1) / Δ -0.130 / ✗" in text
    assert "| CIFAR-10 cross-device (100C) | 0.78 / not run |" in text
    assert "1 of 3 run condition(s) within ±0.05, 1 within ±0.10 (the tolerance); 21 of 24 not run." in text
    assert "`fltrust repro fairness`" in text and "QUICK" not in text
    # the long comparison table has explicit ±0.05 / ±0.10 columns
    assert "| condition | paper F_T | ours F_T ± std | n | Δ | within ±0.05 | within ±0.10 |" in text
    assert "| fedavg_nslkdd_100c_iid | 0.50 | 0.550 ± 0.020 | 3 | +0.050 | ✓ | ✓ |" in text
    assert "| fedavg_cifar10_100c_iid | 0.78 | not run |" in text


def test_results_markdown_middle_band_and_client_count():
    # Prepare: Δ = +0.08 is outside ±0.05 but inside ±0.10; FEMNIST ran with 110 writers
    results = [make_result("fedavg_nslkdd_100c_iid", 0.58)]
    femnist = make_result("fedavg_femnist_205c_iid", 0.7)
    femnist["num_clients"] = 110
    results.append(femnist)

    # Execute
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED, misses={})

    # Assert
    assert "0.50 / 0.580 (n=1) / Δ +0.080 / ✓ |" in text
    assert "| FEMNIST (205C); ours: 110 writers |" in text


def test_results_markdown_flags_results_of_an_earlier_config():
    # Prepare: one result holding the runs the committed config gives, one holding other runs
    from fltrust.repro.fairness.run import condition_configs

    current = make_result("fedavg_nslkdd_100c_iid", 0.5)
    current["run_ids"] = [condition_configs("fedavg_nslkdd_100c_iid", repeats=1)[0].run_id()]
    old = make_result("qfedavg_nslkdd_100c_iid", 0.5)
    old["run_ids"] = ["qfedavg_nslkdd_100c_iid-0000000000-s0-r0"]

    # Execute
    stale = stale_results([current, old])
    text = results_markdown(table3([current, old], REPORTED), [current, old], quick=False, reported=REPORTED,
                            misses={})

    # Assert
    assert [name for name, _ in stale] == ["qfedavg_nslkdd_100c_iid"]
    assert "## Stale results" in text and "- qfedavg_nslkdd_100c_iid: holds runs qfedavg_nslkdd_100c_iid-0000000000" in text


def test_misses_are_explained_or_reported_as_findings():
    # Prepare: qfedavg misses by +0.15 (explained), ditto by -0.13 (no entry), fedavg is within ±0.05
    results = [make_result("fedavg_nslkdd_100c_iid", 0.53), make_result("qfedavg_nslkdd_100c_iid", 0.65),
               make_result("ditto_nslkdd_100c_niid", 0.40)]
    misses = {"qfedavg_nslkdd_100c_iid": {
        "notion": "f_g", "cause": "paper bug", "explanation": "attribute list [0..9].",
        "experiment": {"name": "flip the attribute list", "status": "run", "result": "gap closes"}},
        "fedavg_cifar10_100c_iid": {"notion": "f_o", "cause": "data scale", "explanation": "x",
                                    "experiment": {"name": "y", "status": "not yet run"}}}

    # Execute
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED, misses=misses)
    section = text.split("## Misses explained (faithful mode)")[1].split("## Per condition")[0]

    # Assert: worst first; the explained one names notion, cause and experiment; the other is a finding
    assert section.index("### qfedavg_nslkdd_100c_iid") < section.index("### ditto_nslkdd_100c_niid")
    assert "### fedavg_nslkdd_100c_iid" not in section
    assert "- driving notion: **f_g**" in section and "- cause: **paper bug**. attribute list [0..9]." in section
    assert "- experiment (run): flip the attribute list → gap closes" in section
    assert "**UNEXPLAINED (finding)**" in section.split("### ditto_nslkdd_100c_niid")[1]
    assert "Unexplained misses (findings): ditto_nslkdd_100c_niid." in section
    # an entry whose cause is "unexplained" is a finding too
    misses["qfedavg_nslkdd_100c_iid"]["cause"] = "unexplained"
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED, misses=misses)
    assert "Unexplained misses (findings): qfedavg_nslkdd_100c_iid, ditto_nslkdd_100c_niid." in text
    assert "Explained earlier, now within ±0.05 or not run: fedavg_cifar10_100c_iid." in section
    # F_T = 0.65 vs 0.50: one notion alone would have to drop by 4 x 0.15 = 0.6
    assert "f_o 0.850 → 0.250" in section and "f_r 0.450 → -0.150 (impossible)" in section


def test_load_misses_validates_entries(tmp_path):
    # Prepare
    good = tmp_path / "good.yaml"
    good.write_text("misses:\n  a:\n    notion: f_j\n    cause: data scale\n    explanation: e\n"
                    "    experiment: {name: n, status: not yet run}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("misses:\n  a:\n    notion: f_j\n    cause: gremlins\n    explanation: e\n    experiment: {}\n")

    # Execute / Assert
    assert load_misses(good)["a"]["cause"] == "data scale"
    assert load_misses(tmp_path / "absent.yaml") == {}
    with pytest.raises(ResultsError, match="gremlins"):
        load_misses(bad)


def test_results_markdown_long_table_tolerance_deviations_and_not_run(results):
    # Execute
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED)

    # Assert
    assert ("| fedavg_nslkdd_100c_iid | faithful | 0.450 | 0.650 | 0.350 | 0.750 | 0.550 | 0.750 | 30 | 15-30 "
            "| 100 | 3 | 0 | 20.0 |  |") in text
    assert "|Δ| ≤ 0.10 (absolute, on F_T). twice the median repeat spread" in text
    assert "- float32 model (fedavg_nslkdd_100c_iid, qfedavg_nslkdd_100c_iid)" in text
    # the number of repeats and the seeding are stated as deviations
    assert ("- repeats per condition (the paper: 3): 1 repeat(s): ditto_nslkdd_100c_niid, qfedavg_nslkdd_100c_iid; "
            "3 repeat(s): fedavg_nslkdd_100c_iid") in text
    assert "our runs are seeded" in text and "the authors' were not" in text
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


AUTHORS_HEADING = "## The authors' runs beside ours (faithful mode)"


def test_results_markdown_sets_the_authors_runs_beside_ours(results, authors_root):
    # Prepare: the made-up authors' files of fedavg_nslkdd_100c_iid (F_T per repeat 0.42875, 0.45375,
    # 0.47875; conftest.py); ours 0.55 in each of 3 repeats. Welch by hand: t = 0.09625 / sqrt(s^2 / 3)
    # with s^2 = 0.025^2, df = 2, and for df = 2 the two-sided p is 1 - |t| / sqrt(t^2 + 2)
    authors = load_authors_runs(authors_root)
    t = 0.09625 / math.sqrt(0.025 ** 2 / 3)
    p = 1 - t / math.sqrt(t * t + 2)

    # Execute
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED, authors=authors)

    # Assert: the Table 3 cell ends with the authors' repeats and Welch's p; other cells are as before
    assert (f"| NSL-KDD (100C) | 0.50 / 0.550 ± 0.020 (n=3) / Δ +0.050 / ✓✓ / authors 0.429, 0.454, 0.479 "
            f"(Welch p {p:.3f}: differs) |") in text
    assert "0.53 / 0.400 (n=1) / Δ -0.130 / ✗ |" in text  # ditto niid: no authors' files in the fixture
    section = text.split(AUTHORS_HEADING)[1].split("## Tolerance")[0]
    assert "**0 of 1 cells have repeats consistent with the authors' (Welch, 95 %).**" in section
    assert "69 of 72 files missing" in section and "fltrust data fetch ffa-results" in section
    assert "⚠ Not the published files" in section  # the fixture's hashes are not the published ones
    # deltas = ours (f_j 0.45, f_g 0.65, f_r 0.35, f_o 0.75) minus the authors' (0.215, 0.5, 0.3, 0.8)
    assert (f"| fedavg_nslkdd_100c_iid | 0.50 | 0.429, 0.454, 0.479 | 0.454 ✗ | 0.550, 0.550, 0.550 | 0.550 | "
            f"+{t:.2f} | {p:.3f} | differs | +0.235 | +0.150 | +0.050 | -0.050 | +0.096 |") in section


def test_results_markdown_without_the_authors_files_says_so_in_one_line(results, tmp_path):
    # Prepare
    table = table3(results, REPORTED)
    empty = load_authors_runs(tmp_path / "no-data")

    # Execute
    before = results_markdown(table, results, quick=False, reported=REPORTED)
    text = results_markdown(table, results, quick=False, reported=REPORTED, authors=empty)

    # Assert: one line naming the folder (under the data root, not this machine's path) and the fetch
    # command; everything else renders as before
    line = ("The authors' runs were not found: 72 of 72 files missing from `<data root>/ffa_results/Results/`: "
            "`fltrust data fetch ffa-results` downloads them (github.com/oscardilley/federated-fairness at 5e3115e, "
            "SHA-256 checked).")
    assert f"{AUTHORS_HEADING}\n\n{line}\n\n" in text
    assert text.replace(f"{AUTHORS_HEADING}\n\n{line}\n\n", "") == before
    assert authors_markdown(results, empty, reported=REPORTED) == [line, ""]


def test_results_markdown_compares_the_authors_with_full_runs_only(results, authors_root):
    text = results_markdown(table3(results, REPORTED), results, quick=True, reported=REPORTED,
                            authors=load_authors_runs(authors_root))

    assert "Quick run: the authors' 30-round runs are compared with full runs only" in text
    assert "/ authors " not in text


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


def test_table3_window_positions_14_to_29():
    import numpy as np

    # values = round number (1..30) -> mean of rounds 15..30 = (15 + 30)/2 = 22.5
    # second repeat doubled -> per-position mean 1.5 k -> 33.75
    single = np.arange(1, 31, dtype=float)

    assert float(table3_window_mean(single)) == pytest.approx(22.5)
    assert table3_window_mean(np.stack([single, 2 * single])).value == pytest.approx(33.75)
    assert table3_window_mean(single, 21, 30).value == pytest.approx(25.5)  # Figure 4 window
    assert table3_window_mean(single).num_values == 16


def test_table3_window_nan_handling():
    import numpy as np

    # repeat 2 misses round 15: position 14 averages repeat 1 only.
    # positions: round 15 -> 15 ; rounds 16..30 -> 1.5 k ; mean = (15 + 1.5 * 345) / 16
    values = np.stack([np.arange(1, 31, dtype=float), 2 * np.arange(1, 31, dtype=float)])
    values[1, 14] = math.nan

    skipped = table3_window_mean(values, skip_nan=True)

    assert math.isnan(table3_window_mean(values).value)
    assert skipped.value == pytest.approx((15 + 1.5 * sum(range(16, 31))) / 16)
    assert skipped.num_skipped == 1


def test_table3_window_too_short():
    import numpy as np

    with pytest.raises(MetricInputError, match="rounds up to 30"):
        table3_window_mean(np.zeros(29))


def test_window_means_skips_nan_only_in_corrected_mode():
    # Prepare: 2 repeats x 4 rounds, f_j (and so F_T) undefined in repeat 1, round 3
    import numpy as np
    import pandas as pd

    from fltrust.repro.fairness.run import window_means

    rows = []
    for repeat in range(2):
        for k in range(1, 5):
            undefined = repeat == 1 and k == 3
            rows.append({"repeat": repeat, "round": k, "f_j": np.nan if undefined else 0.2 + 0.1 * repeat,
                         "f_g": 0.5, "f_r": 0.3, "f_o": 0.9, "F_T": np.nan if undefined else 0.5 + 0.1 * repeat,
                         "mean_local_accuracy": 0.9, "aux_accuracy": 0.8})
    frame = pd.DataFrame(rows)

    # Execute
    strict = window_means(frame, 2, 4)
    skipping = window_means(frame, 2, 4, skip_nan=True)

    # Assert: strict (faithful) propagates the NaN; NaN-aware (corrected) averages what is defined, per
    # round over repeats first: rounds 2 and 4 -> 0.55, round 3 -> 0.5 only; mean 0.5333
    assert math.isnan(strict["F_T"]) and math.isnan(strict["f_j"]) and strict["f_o"] == pytest.approx(0.9)
    assert skipping["F_T"] == pytest.approx((0.55 + 0.5 + 0.55) / 3)
    assert skipping["num_skipped"] == {"f_j": 1, "f_g": 0, "f_r": 0, "f_o": 0, "F_T": 1}
    assert skipping["F_T_per_repeat"] == pytest.approx([0.5, 0.6])
    assert skipping["num_values"] == 6 and skipping["skip_nan"] is True


def _fake_run(folder, name, repeat, *, num_clients=6, rounds=3):
    """A run folder as the engine writes it, with fairness observations from the library (no training)."""
    import numpy as np
    import yaml

    from fltrust.core.records import RoundRecord
    from fltrust.metrics import FairnessSettings, round_fairness
    from fltrust.repro.fairness.run import condition_configs

    cfg = condition_configs(name, repeats=repeat + 1, rounds=rounds, num_clients=num_clients)[repeat]
    path = folder / cfg.run_id()
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
    (path / "summary.json").write_text(json.dumps({"status": "complete", "wall_time_s": 1.5}))
    rng = np.random.default_rng(repeat)
    shapley = np.zeros(num_clients)
    lines = [RoundRecord(round=0, client_ids=np.zeros(0, dtype=int)).to_json()]
    for k in range(1, rounds + 1):
        ids = np.sort(rng.choice(num_clients, 3, replace=False))
        acc, rewards = rng.uniform(0.6, 1.0, 3), rng.uniform(0.4, 0.9, 3)
        shapley[ids] += rng.normal(0.002, 0.004, 3)
        confusion = rng.integers(1, 9, size=(3, 2, 2))
        fair = round_fairness(acc, rewards, shapley[ids], confusion, [1], FairnessSettings())
        obs = {"round": k, **fair.to_dict(), "client_ids": ids.tolist(), "s": shapley[ids].tolist(),
               "performance": acc.tolist(), "rewards": rewards.tolist(), "cumulative_shapley": shapley.tolist()}
        record = RoundRecord(round=k, client_ids=ids, client_metrics={"accuracy": acc, "reward_accuracy": rewards},
                             client_confusion=confusion, server_metrics={"aux_accuracy": 0.7},
                             observations={"fairness": obs})
        lines.append(record.to_json())
    (path / "rounds.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return cfg.run_id()


def test_rewrite_result_adds_compact_per_client_data_from_the_run_folders(tmp_path):
    # Prepare: two reloadable repeats and an old result (no per_client) that names them
    import numpy as np

    from fltrust.repro.fairness.run import rewrite_result

    name = "fedavg_nslkdd_100c_iid"
    run_ids = [_fake_run(tmp_path / "runs", name, r) for r in range(2)]
    old = make_result(name, 0.5, repeats=2)
    old["run_ids"] = run_ids
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / f"{name}.json").write_text(json.dumps(old))

    # Execute
    path = rewrite_result(name, results_dir=tmp_path / "results", runs_dir=tmp_path / "runs")
    text = path.read_text()
    result = json.loads(text)

    # Assert: per repeat and round, the section 7 fields; floats to 6 significant digits; lists on one line
    reps = result["per_client"]["repeats"]
    assert [r["run_id"] for r in reps] == run_ids and reps[0]["round"] == [1, 2, 3]
    assert set(result["per_client"]["fields"]) == set(reps[0]) - {"repeat", "run_id"}
    for rep in reps:
        for k, ids in enumerate(rep["client_ids"]):
            vector, s = np.array(rep["cumulative_shapley"][k]), np.array(rep["s"][k])
            assert len(vector) == 6 and np.array_equal(vector[ids], s)
            np.testing.assert_allclose(np.array(rep["gains"][k]) * s, rep["accuracy"][k], rtol=5e-5)
            assert rep["num_nonpositive_s"][k] == int(np.sum(s <= 0))
            assert all(float(f"{v:.6g}") == v for v in rep["s"][k] + rep["cumulative_shapley"][k])  # 6 digits
    assert result["table3"]["repeats"] == 2 and result["window"] == [1, 3] and result["quick"] is False
    assert result["table3"]["num_skipped"]["F_T"] == 0
    assert '"round": [1, 2, 3]' in text  # a list of numbers on one line


def test_rewrite_result_names_missing_run_folders(tmp_path):
    from fltrust.repro.fairness.run import rewrite_result

    old = make_result("fedavg_nslkdd_100c_iid", 0.5)
    (tmp_path / "fedavg_nslkdd_100c_iid.json").write_text(json.dumps(old))
    with pytest.raises(FileNotFoundError, match="can only be rerun"):
        rewrite_result("fedavg_nslkdd_100c_iid", results_dir=tmp_path, runs_dir=tmp_path / "runs")


def test_data_scale_reads_the_partition_sizes_of_dataset_json(tmp_path):
    # Prepare: a run folder with a hand-written dataset.json (3 clients)
    from fltrust.repro.fairness.run import data_scale
    from fltrust.runs import load_run

    name = "fedavg_nslkdd_100c_iid"
    run_id = _fake_run(tmp_path, name, 0)
    (tmp_path / run_id / "dataset.json").write_text(json.dumps({
        "dataset": {"name": "nsl_kdd", "train_samples": 1000, "test_samples": 300},
        "partition": {"num_clients": 3, "train_samples": [40, 10, 25], "val_samples": [5, 2, 3],
                      "aux_samples": 120},
    }))

    # Execute
    scale = data_scale(load_run(tmp_path / run_id))

    # Assert: the median is the middle of the sorted sizes; min and max as given
    assert scale == {
        "source_train_samples": 1000, "source_test_samples": 300, "num_clients": 3,
        "train_per_client": {"median": 25, "min": 10, "max": 40},
        "val_per_client": {"median": 3, "min": 2, "max": 5}, "aux_samples": 120,
    }
    # a folder written before dataset.json existed: no scale
    (tmp_path / run_id / "dataset.json").unlink()
    assert data_scale(load_run(tmp_path / run_id)) == {}


def test_results_markdown_data_scale_table_per_condition():
    # Prepare: one result with a recorded scale, one written before scale existed
    with_scale = make_result("fedavg_nslkdd_100c_iid", 0.5)
    with_scale["scale"] = {"source_train_samples": 19981, "source_test_samples": 6685, "num_clients": 10,
                           "train_per_client": {"median": 1798, "min": 1798, "max": 1799},
                           "val_per_client": {"median": 200, "min": 200, "max": 200}, "aux_samples": 2000}
    without = make_result("ditto_nslkdd_100c_niid", 0.5)

    # Execute
    results = [with_scale, without]
    text = results_markdown(table3(results, REPORTED), results, quick=False, reported=REPORTED, misses={})

    # Assert: the data scale section has one row per result: repeat 0's scale said so, n/a for the old one
    section = text.split("## Data scale")[1].split("## Provenance")[0]
    assert ("| fedavg_nslkdd_100c_iid | faithful | repeat 0 only | 19,981 / 6,685 | 10 | 1798 (1798-1799) | "
            "200 (200-200) | 2,000 |") in section
    assert "| ditto_nslkdd_100c_niid | faithful | n/a | n/a | n/a | n/a | n/a | n/a |" in section


def test_results_markdown_data_scale_is_a_range_over_repeats():
    # Prepare: three non-iid repeats, each with its own partition (repeat 2 also lost a test file)
    def scale(median, low, high, test=6685):
        return {"source_train_samples": 19981, "source_test_samples": test, "num_clients": 10,
                "train_per_client": {"median": median, "min": low, "max": high},
                "val_per_client": {"median": 20, "min": 4, "max": 31}, "aux_samples": 2000}

    result = make_result("ditto_nslkdd_100c_niid", 0.5, repeats=3)
    result["scale_per_repeat"] = [scale(1700, 400, 3000), scale(1650, 380, 3100), scale(1720, 500, 2900, test=6000)]

    # Execute
    text = results_markdown(table3([result], REPORTED), [result], quick=False, reported=REPORTED, misses={})

    # Assert: medians 1650-1720 over repeats, smallest client 380, largest 3100; the test set 6,000-6,685
    section = text.split("## Data scale")[1].split("## Provenance")[0]
    assert ("| ditto_nslkdd_100c_niid | faithful | 3 | 19,981 / 6,000-6,685 | 10 | 1650-1720 (380-3100) | "
            "20 (4-31) | 2,000 |") in section
    assert "over its repeats" in section


def test_quick_femnist_stand_in_gives_every_client_a_validation_row(tmp_path):
    # before: the stand-in's default 2,000 rows over 110 writers left quick clients without validation
    # rows, so every fairness notion of the quick FEMNIST conditions was undefined on a bare clone
    import warnings

    import torch

    from fltrust.federation import prepare_federation
    from fltrust.repro.fairness.run import condition_configs

    for name in ("fedavg_femnist_205c_iid", "fedavg_femnist_205c_niid"):
        cfg = condition_configs(name, repeats=1, quick=True, device="cpu", data_dir=str(tmp_path))[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fed = prepare_federation(cfg, torch.device("cpu"))
        assert fed.bundle.synthetic and fed.num_clients == 20
        assert min(len(v) for v in fed.val_index) >= 1, name
        assert len(fed.y_aux) == 64  # the quick aux cap
