"""Result files (fltrust.repro.results): every field the reports read is checked when a file is read,
and a result written with its record hash warns when it was edited afterwards."""

from __future__ import annotations

import copy
import json
import shutil
import warnings
from pathlib import Path

import pytest

from fltrust.repro.fairness import report as fairness_report
from fltrust.repro.fairness.run import write_result
from fltrust.repro.results import ResultsError, edited_fields, with_integrity
from fltrust.repro.trust import report as trust_report
from fltrust.runs import RecordIntegrityWarning

REPO = Path(__file__).resolve().parents[2]
FAIRNESS = REPO / "papers_repro" / "fairness_analytics" / "results"
TRUST = REPO / "papers_repro" / "federatedtrust" / "results"
CONDITION = "fedavg_nslkdd_100c_iid"


def _fairness_result() -> dict:
    return json.loads((FAIRNESS / f"{CONDITION}.json").read_text())


def test_the_committed_results_pass_their_schemas():
    assert len(fairness_report.load_results(FAIRNESS)) == len(list(FAIRNESS.glob("*.json")))
    assert len(trust_report.load_results(TRUST)) == len(list(TRUST.glob("exp*.json")))


@pytest.mark.parametrize(("edit", "message"), [
    # before: "not enough values to unpack (expected at least 2, got 1)" from table3, naming nothing
    (lambda r: r.update(condition="fedavg"), r"field condition = 'fedavg' must be a condition name <strategy>_<dataset>_"),
    # before: "could not convert string to float: 'zz'"
    (lambda r: r["table3"].update(F_T="zz"), r"field table3\.F_T = 'zz' must be a number"),
    # before: IndexError "tuple index out of range"
    (lambda r: r.update(window=[15]), r"field window = \[15\] must be \[first round, last round\]"),
    # before: TypeError, exit 70
    (lambda r: r.update(seconds_per_run=[1.0, "slow"]), r"field seconds_per_run\[1\] = 'slow' must be a list of numbers"),
    (lambda r: r["table3"].update(repeats=None), r"field table3\.repeats = null must be an integer"),
    (lambda r: (r.get("scale") or r["scale_per_repeat"][0])["train_per_client"].update(median="x"),
     r"field scale(_per_repeat = .* repeat 0: field)?\.?\s?train_per_client\.median = 'x'"),
    (lambda r: r["table3"].pop("F_T_std"), r"field table3\.F_T_std is missing"),
    (lambda r: r["table3"].update(f_o="high"), r"field table3\.f_o = 'high' must be a number"),
    (lambda r: r["per_round"]["F_T"].pop(), r"field per_round = .* must hold lists of one length"),
    (lambda r: r.update(mode="best"), r"field mode = 'best' must be one of \['faithful', 'corrected'"),
])
def test_a_malformed_fairness_result_names_the_file_and_the_field(tmp_path, edit, message):
    result = _fairness_result()
    edit(result)
    (tmp_path / f"{CONDITION}.json").write_text(json.dumps(result))

    with pytest.raises(ResultsError, match=rf"{CONDITION}\.json: {message}") as info:
        fairness_report.load_results(tmp_path)
    assert "\n" not in str(info.value) and "move it aside and rerun" in str(info.value)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r["modes"]["paper"].update(trust_score="high"), r"field modes\.paper\.trust_score = 'high' must be a number"),
    (lambda r: r["settings"].update(rounds=2.5), r"field settings\.rounds = 2\.5 must be an integer"),
    (lambda r: r["modes"]["fixed"]["pillars"].update(privacy=[0.1]), r"field modes\.fixed\.pillars\.privacy = \[0\.1\]"),
    (lambda r: r.update(deviations="none"), r"field deviations = 'none' must be a list of strings"),
    (lambda r: r.update(epsilon_spent={}), r"field epsilon_spent = \{\} must be a number"),  # before: exit 70
    (lambda r: r["extended_run"].update(provenance="all"), r"field extended_run\.provenance = 'all' must be a mapping"),
])
def test_a_malformed_trust_result_names_the_file_and_the_field(tmp_path, edit, message):
    result = json.loads((TRUST / "exp1.json").read_text())
    edit(result)
    (tmp_path / "exp1.json").write_text(json.dumps(result))

    with pytest.raises(ResultsError, match=rf"exp1\.json: {message}"):
        trust_report.load_results(tmp_path)


def test_report_on_a_malformed_result_is_one_line_with_exit_2(tmp_path, capsys):
    from fltrust.cli import main

    shutil.copytree(FAIRNESS, tmp_path / "batch" / "results")
    result = _fairness_result()
    result["condition"] = "fedavg"
    (tmp_path / "batch" / "results" / f"{CONDITION}.json").write_text(json.dumps(result))

    assert main(["report", "fairness", "--from", str(tmp_path / "batch"), "--out", str(tmp_path / "r.html")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" not in line]
    assert len(err) == 1 and f"{CONDITION}.json: field condition = 'fedavg'" in err[0], err


def test_a_written_result_carries_its_record_hash_and_an_edit_is_a_warning(tmp_path, monkeypatch):
    # before: a hand-edited result was shown in RESULTS.md and the report without a word
    monkeypatch.delenv("FLTRUST_AUDIT_KEY", raising=False)
    monkeypatch.delenv("FLTRUST_AUDIT_KEY_FILE", raising=False)
    path = write_result(tmp_path / f"{CONDITION}.json", _fairness_result())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordIntegrityWarning)
        (read,) = fairness_report.load_results(tmp_path)  # as written: no warning
    assert read["integrity"]["algorithm"] == "sha256" and edited_fields(read) is None

    edited = json.loads(path.read_text())
    edited["table3"]["F_T"] = 0.99
    path.write_text(json.dumps(edited))
    with pytest.warns(RecordIntegrityWarning, match=rf"{CONDITION}\.json: edited after it was written \(table3\.F_T do "
                                                    r"not match the record hash written with it\)"):
        fairness_report.load_results(tmp_path)


def test_a_keyed_result_is_checked_only_with_the_key(monkeypatch):
    monkeypatch.setenv("FLTRUST_AUDIT_KEY", "secret")
    signed = with_integrity({"F_T": 0.5, "nested": {"a": 1}})
    assert signed["integrity"]["algorithm"] == "hmac-sha256" and edited_fields(signed) is None
    forged = copy.deepcopy(signed)
    forged["nested"]["a"] = 2
    assert edited_fields(forged) == ["nested.a"]
    monkeypatch.delenv("FLTRUST_AUDIT_KEY")
    assert edited_fields(forged) is None  # without the key nothing can be said
