"""fltrust repro verify: a tiny synthetic condition rerun and compared round by round with its result."""

from __future__ import annotations

import json

import pytest
import yaml

from fltrust import cli
from fltrust.config import ExperimentConfig
from fltrust.repro.fairness import run as fairness_run
from fltrust.repro.verify import VerifyError, compare_fields, likely_causes, verify

NAME = "fedavg_synthetic_6c_iid"


@pytest.fixture
def committed(tmp_path, monkeypatch):
    """A condition config (synthetic NSL-KDD, 6 clients, 3 rounds, fairness on) and its committed result,
    in folders that stand in for papers_repro/fairness_analytics/configs and results."""
    cfg = ExperimentConfig.tiny(metrics={"fairness": {"enabled": True}}, run={"name": NAME})
    configs, results = tmp_path / "configs", tmp_path / "results"
    configs.mkdir()
    results.mkdir()
    (configs / f"{NAME}.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
    monkeypatch.setattr(fairness_run, "CONFIG_DIR", configs)
    monkeypatch.setattr(fairness_run, "RESULTS_DIR", results)
    [config] = fairness_run.condition_configs(NAME, repeats=1, device="cpu", config_dir=configs)
    from fltrust.experiment import run_experiment

    record = run_experiment(config, out_dir=tmp_path / "runs")
    path = fairness_run.write_result(results / f"{NAME}.json", fairness_run.condition_result(NAME, [record],
                                                                                           quick=False))
    return path


def test_a_rerun_of_the_same_code_is_bit_identical(committed, tmp_path, capsys):
    # Execute: the command line, as a user runs it
    code = cli.main(["repro", "verify", NAME, "--out", str(tmp_path / "scratch")])

    # Assert: exit 0, every model hash compared; progress lines on stderr
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "BIT-IDENTICAL: rounds 1-3" in out and "model_hash" in out
    assert "round 3/3" in err


def test_a_changed_value_is_named_with_its_round_and_field(committed, tmp_path, capsys):
    # Prepare: round 2's F_T of the committed result edited
    result = json.loads(committed.read_text())
    position = result["per_round"]["round"].index(2)
    result["per_round"]["F_T"][position] += 0.125
    committed.write_text(json.dumps(result))

    # Execute
    code = cli.main(["repro", "verify", NAME, "--out", str(tmp_path / "scratch")])

    # Assert: exit 1, the first differing round and the field with its largest difference
    out = capsys.readouterr().out
    assert code == 1
    assert "DIFFERENT: first differing round 2" in out
    line = next(line for line in out.splitlines() if line.strip().startswith("per_round.F_T"))
    assert "0.125 (1 / 3, from round 2)" in line
    assert "likely cause" in out


def test_rounds_limits_the_comparison(committed, tmp_path):
    # Prepare: round 3's model hash edited; rounds 1-2 untouched
    result = json.loads(committed.read_text())
    result["round_trace"][0]["model_hash"][3] = "0" * 64
    committed.write_text(json.dumps(result))

    # Execute
    first_two = verify(NAME, rounds=2, out_dir=tmp_path / "a", device="cpu")
    all_three = verify(NAME, out_dir=tmp_path / "b", device="cpu")

    # Assert: the edit is outside --rounds 2; the full comparison finds it in round 3
    assert first_two.bit_identical and first_two.rounds == 2
    assert not all_three.identical and all_three.first_round == 3
    [hashes] = [f for f in all_three.fields if f.field == "model_hash"]
    assert hashes.differing == 1 and hashes.max_abs is None


def test_an_old_result_without_round_trace_is_compared_to_its_digits(committed, tmp_path):
    result = json.loads(committed.read_text())
    del result["round_trace"], result["provenance"]
    committed.write_text(json.dumps(result))

    outcome = verify(NAME, out_dir=tmp_path / "scratch", device="cpu")

    assert outcome.identical and not outcome.bit_identical
    assert any("model hash chain" in line for line in outcome.not_compared)
    assert "IDENTICAL to the stored digits" in "\n".join(outcome.lines())


def test_unknown_names_and_bad_repeats_are_usage_errors(committed, capsys):
    assert cli.main(["repro", "verify", "fedavg_nowhere_1c_iid"]) == 2
    err = capsys.readouterr().err
    assert NAME in err and "exp1" in err  # the known conditions and experiments are named
    with pytest.raises(VerifyError, match="no repeat 4"):
        verify(NAME, repeat=4)
    assert cli.main(["repro", "verify", "exp2", "--repeat", "1"]) == 2


def test_compare_fields_counts_values_and_keeps_the_first_round():
    committed = {"per_client.s": {1: [0.1, 0.2], 2: [0.3, None]}, "model_hash": {0: "a", 1: "b"}}
    rerun = {"per_client.s": {1: [0.1, 0.25], 2: [0.3, 0.1]}, "model_hash": {0: "a", 1: "c"}}

    s, hashes = compare_fields(committed, rerun)

    assert (s.compared, s.differing, s.first_round) == (4, 2, 1) and s.max_abs == pytest.approx(0.05)
    assert (hashes.differing, hashes.first_round, hashes.max_abs) == (1, 1, None)


def test_likely_causes_name_configuration_data_and_provenance(tmp_path):
    recorded = {"code": {"commit": "a" * 40}, "blas": {"numpy": "openblas Haswell"}}
    current = {"code": {"commit": "a" * 40}, "blas": {"numpy": "openblas SkylakeX"}}

    causes = likely_causes(recorded, current, committed_run_id="x-1-s0-r0", rerun_run_id="x-2-s0-r0",
                           result_path=tmp_path / "r.json", fingerprints=("f1", "f2"))

    assert causes[0].startswith("other configuration: the committed run is x-1-s0-r0")
    assert causes[1] == "other data: data fingerprint f1, now f2"
    assert causes[2] == "other BLAS kernel: numpy BLAS openblas Haswell, now openblas SkylakeX"
    unrecorded = likely_causes(None, current, committed_run_id="x", rerun_run_id="x", result_path=tmp_path / "r.json")
    assert unrecorded[0].startswith("not recorded")


def test_values_of_the_runs_duration_are_shown_but_not_in_the_verdict(tmp_path):
    from fltrust.repro.verify import FieldDifference, Verification

    outcome = Verification(target="exp4", paper="trust", repeat=0, rounds=20, result_path=tmp_path / "exp4.json",
                           rerun_path=tmp_path / "run", committed_run_id="r", rerun_run_id="r",
                           fields=[FieldDifference("modes.paper.trust_score", compared=1)],
                           measured=[FieldDifference("modes.extended.trust_score", compared=1, differing=1,
                                                     max_abs=0.01, values=(0.68, 0.67))])
    text = "\n".join(outcome.lines())
    assert outcome.identical and not outcome.bit_identical
    assert "1 value(s) computed from the run's duration (energy, emissions), 1 of them different" in text


@pytest.mark.parametrize(("field", "measured"), [
    ("modes.extended.metrics.sustainability/run_emissions.raw", True),
    # emissions / energy: both measured, so the quotient rounds differently per run (CI saw 7e-15)
    ("modes.extended.metrics.sustainability/carbon_intensity.raw", True),
    ("modes.extended.pillars.sustainability", True),
    ("modes.extended.trust_score", True),
    ("modes.paper.trust_score", False),
    ("modes.extended.metrics.robustness/certified_robustness.raw", False),
])
def test_which_summary_values_depend_on_the_runs_duration(field, measured):
    from fltrust.repro.verify import _duration_dependent

    assert _duration_dependent(field) is measured


def test_record_keeps_each_targets_last_verdict_and_results_md_lists_it(committed, tmp_path, capsys):
    from fltrust.repro.provenance_table import load_verified, verified_lines

    # Prepare: one identical verification, then round 2's F_T edited and verified again
    assert cli.main(["repro", "verify", NAME, "--out", str(tmp_path / "a"), "--record"]) == 0
    path = committed.parent.parent / "verified.json"
    first = json.loads(path.read_text())[NAME]
    result = json.loads(committed.read_text())
    result["per_round"]["F_T"][result["per_round"]["round"].index(2)] += 0.125
    committed.write_text(json.dumps(result))

    # Execute
    code = cli.main(["repro", "verify", NAME, "--out", str(tmp_path / "b"), "--record"])

    # Assert: the file holds the last verdict; RESULTS.md's lines come from it, for this result's run only
    assert code == 1 and f"recorded in {path}" in capsys.readouterr().out
    assert first["verdict"].startswith("bit-identical") and first["identical"] and first["rounds"] == 3
    last = json.loads(path.read_text())[NAME]
    assert last["verdict"] == "**different** from round 2, per_round.F_T by up to 0.125"
    assert last["first_round"] == 2 and last["run_id"] == result["run_ids"][0]
    verified = load_verified(committed.parent.parent, [result])
    [line] = verified_lines(verified)
    assert line.startswith(f"- `{NAME}`, repeat 0, rounds 1-3, at {last['commit']} on {last['machine']}: "
                           f"{last['verdict']} (likely cause: ")
    assert last["causes"] and not first["causes"]
    assert load_verified(committed.parent.parent, [{"run_ids": ["another-run"]}]) == {}


def test_a_recorded_verdict_quotes_the_window_f_t_committed_and_rerun(tmp_path):
    from fltrust.repro.verify import FieldDifference, Verification

    outcome = Verification(target="c", paper="fairness", repeat=0, rounds=30, result_path=tmp_path / "c.json",
                           rerun_path=tmp_path / "run", committed_run_id="r", rerun_run_id="r",
                           fields=[FieldDifference("per_round.F_T", compared=30, differing=30, max_abs=0.12,
                                                   first_round=1),
                                   FieldDifference("table3.F_T (this repeat)", compared=1, differing=1,
                                                   max_abs=0.0122, values=(0.473744, 0.485984))])

    assert outcome.verdict() == ("**different** from round 1, per_round.F_T by up to 0.12; "
                                 "table3.F_T (this repeat) 0.473744 -> 0.485984")
