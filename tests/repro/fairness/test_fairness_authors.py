"""The fairness authors' raw result files (fltrust.repro.fairness.authors): names, reader, Table 3 window, Welch.

Made-up files in the published layout come from ``conftest.py`` (fixtures ``authors_root`` and
``write_authors``); the one ``realdata`` test reads the authors' 72 files under the data root.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mpmath
import pytest

from fltrust.data.registry import REFERENCE_SPECS
from fltrust.repro.fairness import authors as authors_module
from fltrust.repro.fairness import run
from fltrust.repro.fairness.authors import (
    AuthorsDataError,
    authors_figure4_frame,
    authors_file_names,
    compare_with_authors,
    load_authors_runs,
    read_authors_file,
    welch_test,
)
from fltrust.repro.fairness.conditions import all_conditions, condition_name

FIXTURE_CONDITION = "fedavg_nslkdd_100c_iid"

# The authors' file stem of every condition, written out by hand from their Results/ folder.
EXPECTED_STEMS = {
    "fedavg_cifar10_100c_iid": "FedAvg_CIFAR_iid_100C_5PC_10E",
    "fedavg_cifar10_100c_niid": "FedAvg_CIFAR_niid_100C_5PC_10E",
    "qfedavg_cifar10_100c_iid": "q_FedAvg_CIFAR_iid_100C_5PC_10E",
    "qfedavg_cifar10_100c_niid": "q_FedAvg_CIFAR_niid_100C_5PC_10E",
    "ditto_cifar10_100c_iid": "Ditto_CIFAR_iid_100C_5PC_10E",
    "ditto_cifar10_100c_niid": "Ditto_CIFAR_niid_100C_5PC_10E",
    "fedavg_cifar10_10c_iid": "FedAvg_CIFAR_iid_10C_50PC_10E",
    "fedavg_cifar10_10c_niid": "FedAvg_CIFAR_niid_10C_50PC_10E",
    "qfedavg_cifar10_10c_iid": "q_FedAvg_CIFAR_iid_10C_50PC_10E",
    "qfedavg_cifar10_10c_niid": "q_FedAvg_CIFAR_niid_10C_50PC_10E",
    "ditto_cifar10_10c_iid": "Ditto_CIFAR_iid_10C_50PC_10E",
    "ditto_cifar10_10c_niid": "Ditto_CIFAR_niid_10C_50PC_10E",
    "fedavg_femnist_205c_iid": "FedAvg_FEMNIST_iid_205C_2PC_5E",
    "fedavg_femnist_205c_niid": "FedAvg_FEMNIST_niid_205C_2PC_5E",
    "qfedavg_femnist_205c_iid": "q_FedAvg_FEMNIST_iid_205C_2PC_5E",
    "qfedavg_femnist_205c_niid": "q_FedAvg_FEMNIST_niid_205C_2PC_5E",
    "ditto_femnist_205c_iid": "Ditto_FEMNIST_iid_205C_2PC_5E",
    "ditto_femnist_205c_niid": "Ditto_FEMNIST_niid_205C_2PC_5E",
    "fedavg_nslkdd_100c_iid": "FedAvg_NSLKDD_iid_100C_5PC_5E",
    "fedavg_nslkdd_100c_niid": "FedAvg_NSLKDD_niid_100C_5PC_5E",
    "qfedavg_nslkdd_100c_iid": "q_FedAvg_NSLKDD_iid_100C_5PC_5E",
    "qfedavg_nslkdd_100c_niid": "q_FedAvg_NSLKDD_niid_100C_5PC_5E",
    "ditto_nslkdd_100c_iid": "Ditto_NSLKDD_iid_100C_5PC_5E",
    "ditto_nslkdd_100c_niid": "Ditto_NSLKDD_niid_100C_5PC_5E",
}


# -- names -------------------------------------------------------------------------------------

@pytest.mark.parametrize("condition", sorted(EXPECTED_STEMS))
def test_every_condition_maps_to_the_authors_three_files(condition):
    assert authors_file_names(condition) == [f"{EXPECTED_STEMS[condition]}_30R_v{v}.json" for v in (1, 2, 3)]


def test_the_24_conditions_name_exactly_the_72_published_files():
    # Prepare: the files whose SHA-256 is committed (fltrust/data/known_sha256/ffa_results.sha256)
    published = {Path(p).name for p in REFERENCE_SPECS["ffa-results"].known_sha256}

    # Execute
    named = [f for c in all_conditions() for f in authors_file_names(condition_name(*c))]

    # Assert
    assert set(EXPECTED_STEMS) == {condition_name(*c) for c in all_conditions()}
    assert len(named) == len(set(named)) == 72 and set(named) == published


def test_unknown_condition_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown condition 'fedavg_mnist_iid'.*fedavg_cifar10_100c_iid"):
        authors_file_names("fedavg_mnist_iid")


# -- reader and the Table 3 window -------------------------------------------------------------

def test_window_value_of_the_fixture_by_hand(authors_root):
    # Prepare: per repeat r, over list positions 14..29 (server rounds 15-30): f_j = 0.01 x mean(14..29)
    # = 0.215, f_g = 0.5, f_r = 0.2 + 0.1 r, f_o = 0.8 (0.0 before position 14, so the whole run's
    # mean would be 0.427); F_T = (0.215 + 0.5 + 0.2 + 0.1 r + 0.8) / 4 = 0.42875, 0.45375, 0.47875
    by_hand = [(0.215 + 0.5 + 0.2 + 0.1 * r + 0.8) / 4 for r in range(3)]

    # Execute
    runs = load_authors_runs(authors_root)
    table3 = runs.conditions[FIXTURE_CONDITION].table3()

    # Assert
    assert list(runs.conditions) == [FIXTURE_CONDITION]
    assert table3["F_T_per_repeat"] == pytest.approx([0.42875, 0.45375, 0.47875], abs=1e-12)
    assert table3["F_T_per_repeat"] == pytest.approx(by_hand, abs=1e-12)
    assert table3["F_T"] == pytest.approx(0.45375, abs=1e-12)
    assert (table3["f_j"], table3["f_g"], table3["f_r"], table3["f_o"]) == pytest.approx((0.215, 0.5, 0.3, 0.8))
    assert table3["mean_local_accuracy"] == pytest.approx(0.8)  # the participants' mean accuracy = f_o
    assert (table3["repeats"], table3["rounds_in_window"]) == (3, 16)


def test_the_window_is_the_runs_own_window_function():
    # one Table 3 protocol: the authors' runs are averaged by the function that averages ours
    assert authors_module.window_means is run.window_means


def test_frame_goes_by_list_position_not_round_label(authors_root):
    # Prepare: v2 labels its rounds 1..30, v1 and v3 0..29 (as the authors' files do)
    runs = load_authors_runs(authors_root)

    # Execute
    frame = runs.conditions[FIXTURE_CONDITION].frame()

    # Assert: every repeat has rounds 1..30, F_T is the plain mean of the four notions per round
    assert sorted(frame["repeat"].unique()) == [0, 1, 2]
    assert all(sorted(g["round"]) == list(range(1, 31)) for _, g in frame.groupby("repeat"))
    row = frame[(frame["repeat"] == 1) & (frame["round"] == 20)].iloc[0]
    assert row["F_T"] == pytest.approx((0.19 + 0.5 + 0.3 + 0.8) / 4)


def test_missing_files_are_listed_and_the_rest_is_read(authors_root):
    runs = load_authors_runs(authors_root)

    assert runs.found and len(runs.missing) == 69
    assert "FedAvg_CIFAR_iid_100C_5PC_10E_30R_v1.json" in runs.missing
    assert runs.folder == authors_root / "ffa_results" / "Results"
    hint = runs.fetch_hint()
    assert "69 of 72 files missing" in hint and "fltrust data fetch ffa-results" in hint and str(runs.folder) in hint
    # a page that is handed around names the data root, not this machine's path
    portable = runs.fetch_hint(portable=True)
    assert "missing from `<data root>/ffa_results/Results/`:" in portable and str(authors_root) not in portable
    # the made-up files are not the published ones: their hashes are listed, both of them
    assert len(runs.checksum_mismatch) == 3
    first = runs.checksum_mismatch[0]
    assert first["path"].endswith("FedAvg_NSLKDD_iid_100C_5PC_5E_30R_v1.json")
    assert first["expected"] == REFERENCE_SPECS["ffa-results"].known_sha256[
        "Results/FedAvg_NSLKDD_iid_100C_5PC_5E_30R_v1.json"] != first["sha256"]


def test_no_files_is_an_empty_result(tmp_path):
    runs = load_authors_runs(tmp_path)

    assert not runs.found and runs.conditions == {} and len(runs.missing) == 72


def _drop(payload, *keys):
    target = payload
    for key in keys[:-1]:
        target = target[key]
    del target[keys[-1]]


MALFORMED = {
    "no notion": (lambda p: _drop(p, "general_fairness", "f_r"), "field general_fairness.f_r is missing"),
    "short notion": (lambda p: p["general_fairness"].update(f_j=[0.1] * 29),
                     "field general_fairness.f_j has 29 entries, expected 30"),
    "text value": (lambda p: p["general_fairness"]["f_g"].__setitem__(3, "0.5"),
                   "field general_fairness.f_g[3] is '0.5', not a finite number"),
    "no section": (lambda p: _drop(p, "per_client_data"), "field per_client_data is missing"),
    "empty round": (lambda p: p["per_client_data"]["accuracy"].__setitem__(2, []),
                    "field per_client_data.accuracy[2] is empty"),
    "short shap": (lambda p: p["per_client_data"]["shap"].__setitem__(0, [0.5] * 99),
                   "field per_client_data.shap[0] has 99 entries, expected 100"),
    "gains unaligned": (lambda p: p["per_client_data"]["gains"].__setitem__(5, [1.0] * 4),
                        "field per_client_data.gains[5] has 4 entries, expected 5"),
    "bad eop": (lambda p: p["per_client_data"]["avg_eop"][1].__setitem__(0, {"1": "x"}),
                "field per_client_data.avg_eop[1][0] is not an object of finite numbers"),
    "rounds": (lambda p: p.update(rounds=list(range(12))), "field rounds is not a list of 30 round numbers"),
    "other condition": (lambda p: p["config"].update(local_epochs=10),
                        "field config.local_epochs is 10, but condition fedavg_nslkdd_100c_iid has 5"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_is_rejected_in_one_line_naming_file_and_field(tmp_path, write_authors, case):
    # Prepare: the second repeat's file is broken
    edit, expected = MALFORMED[case]
    paths = write_authors(tmp_path, FIXTURE_CONDITION, edit=lambda r, p: edit(p) if r == 1 else None)

    # Execute
    with pytest.raises(AuthorsDataError) as info:
        load_authors_runs(tmp_path)

    # Assert
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{paths[1]}: ")
    assert expected in message and "fltrust data fetch ffa-results" in message


def test_a_file_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "FedAvg_NSLKDD_iid_100C_5PC_5E_30R_v1.json"
    path.write_text('{"rounds": [0, 1')

    with pytest.raises(AuthorsDataError, match=r"FedAvg_NSLKDD_iid_100C_5PC_5E_30R_v1.json: not valid JSON") as info:
        read_authors_file(path)
    assert "\n" not in str(info.value)


# -- Welch and the comparison ------------------------------------------------------------------

def _welch_by_hand(a, b):
    """Welch's t, its Welch-Satterthwaite degrees of freedom and the two-sided p, from the formulas:
    p = I_{df / (df + t^2)}(df / 2, 1 / 2) (regularised incomplete beta, mpmath)."""
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se2 = va / len(a) + vb / len(b)
    t = (ma - mb) / math.sqrt(se2)
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    p = float(mpmath.betainc(df / 2, 0.5, 0, df / (df + t * t), regularized=True))
    return t, df, p


def test_welch_on_hand_made_numbers():
    # Prepare: s^2 = 0.0004 and 0.0001, so t = -0.09 / sqrt(0.0005 / 3) = -0.09 sqrt(6000) and
    # df = (0.0005 / 3)^2 / (((0.0004 / 3)^2 + (0.0001 / 3)^2) / 2) = 50 / 17
    ours, theirs = [0.50, 0.52, 0.54], [0.60, 0.61, 0.62]
    t, df, p = _welch_by_hand(ours, theirs)

    # Execute
    differs = welch_test(ours, theirs)
    same = welch_test([0.50, 0.60, 0.70], [0.52, 0.58, 0.61])

    # Assert
    assert (t, df) == pytest.approx((-0.09 * math.sqrt(6000), 50 / 17), rel=1e-12)
    assert differs.t == pytest.approx(t, rel=1e-12) and differs.p == pytest.approx(p, rel=1e-9)
    assert differs.p == pytest.approx(0.0064575892, abs=1e-9) and differs.consistent is False
    assert same.p == pytest.approx(_welch_by_hand([0.50, 0.60, 0.70], [0.52, 0.58, 0.61])[2], rel=1e-9)
    assert same.p == pytest.approx(0.6709631037, abs=1e-9) and same.consistent is True


def test_welch_without_two_values_a_side_is_undefined():
    assert math.isnan(welch_test([0.5], [0.4, 0.6]).p) and welch_test([0.5], [0.4, 0.6]).consistent is None
    assert welch_test([0.5, 0.5], [0.5, 0.5]).consistent is None  # neither side varies
    assert math.isnan(welch_test([0.5, float("nan")], [0.4, 0.6]).t)  # NaN repeats are left out


def _ours(condition, per_repeat, **notions):
    return {"condition": condition, "quick": False, "mode": "faithful",
            "table3": {"F_T": sum(per_repeat) / len(per_repeat), "F_T_per_repeat": list(per_repeat), **notions}}


def test_compare_with_authors_sets_our_repeats_beside_theirs(authors_root):
    # Prepare: ours on the fixture condition, plus results that are not compared
    ours = _ours(FIXTURE_CONDITION, [0.50, 0.52, 0.54], f_j=0.3, f_g=0.5, f_r=0.25, f_o=0.99)
    quick = {**_ours(FIXTURE_CONDITION, [0.1, 0.2]), "quick": True}
    corrected = {**_ours(FIXTURE_CONDITION, [0.1, 0.2]), "mode": "corrected"}
    elsewhere = _ours("ditto_nslkdd_100c_niid", [0.1, 0.2])  # the authors' files of it are absent

    # Execute
    table = compare_with_authors([ours, quick, corrected, elsewhere], load_authors_runs(authors_root))

    # Assert: one row; Welch of [0.50, 0.52, 0.54] against [0.42875, 0.45375, 0.47875]
    assert list(table["condition"]) == [FIXTURE_CONDITION]
    row = table.iloc[0]
    t, _, p = _welch_by_hand([0.50, 0.52, 0.54], [0.42875, 0.45375, 0.47875])
    assert row["authors_F_T_per_repeat"] == pytest.approx([0.42875, 0.45375, 0.47875])
    assert (row["welch_t"], row["welch_p"]) == pytest.approx((t, p), rel=1e-9)
    assert row["consistent"] == (p >= 0.05)
    assert (row["delta_f_j"], row["delta_f_g"], row["delta_f_r"], row["delta_f_o"]) == pytest.approx(
        (0.3 - 0.215, 0.0, 0.25 - 0.3, 0.99 - 0.8))
    assert row["delta_F_T"] == pytest.approx(0.52 - 0.45375)


def test_authors_figure4_points_average_rounds_21_to_30(authors_root):
    points = authors_figure4_frame(load_authors_runs(authors_root))

    # f_j over positions 20..29 = 0.01 x 24.5; F_T = (0.245 + 0.5 + 0.3 + 0.8) / 4 (mean over the repeats)
    assert list(points["condition"]) == [FIXTURE_CONDITION]
    assert points.iloc[0]["F_T"] == pytest.approx((0.245 + 0.5 + 0.3 + 0.8) / 4)
    assert points.iloc[0]["mean_local_accuracy"] == pytest.approx(0.8) and points.iloc[0]["window"] == (21, 30)


# -- the authors' own files ----------------------------------------------------------------------

@pytest.mark.realdata
def test_the_72_published_files_load_and_reproduce_table3(data_root):
    # Prepare
    folder = data_root / "ffa_results" / "Results"
    if not folder.is_dir():
        pytest.skip(f"the authors' files are not in {folder} (fltrust data fetch ffa-results)")
    reported = run.load_reported()["values"]

    # Execute
    runs = load_authors_runs(data_root)

    # Assert: every file there, the published bytes, and the protocol gives the paper's 24 values
    assert runs.missing == () and runs.checksum_mismatch == () and len(runs.conditions) == 24
    for name, condition in runs.conditions.items():
        assert round(condition.table3()["F_T"], 2) == pytest.approx(reported[name]), name
    # FedAvg CIFAR-10 non-iid 10C, straight from the JSON: F_T per round = mean of the four notions,
    # mean over list positions 14..29 per repeat, then over the three repeats
    per_repeat = []
    for v in (1, 2, 3):
        notions = json.loads((folder / f"FedAvg_CIFAR_niid_10C_50PC_10E_30R_v{v}.json").read_text())["general_fairness"]
        per_round = [(notions["f_j"][p] + notions["f_g"][p] + notions["f_r"][p] + notions["f_o"][p]) / 4
                     for p in range(14, 30)]
        per_repeat.append(sum(per_round) / len(per_round))
    table3 = runs.conditions["fedavg_cifar10_10c_niid"].table3()
    assert table3["F_T_per_repeat"] == pytest.approx(per_repeat, abs=1e-12)
    assert table3["F_T"] == pytest.approx(sum(per_repeat) / 3, abs=1e-12)
    assert round(table3["F_T"], 4) == 0.4924 and reported["fedavg_cifar10_10c_niid"] == 0.49
