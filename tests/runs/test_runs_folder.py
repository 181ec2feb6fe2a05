"""Run folders (fltrust.runs.folder): atomic writes, completeness and reloading."""

import json
import math

import numpy as np
import pytest

from fltrust.core.io import atomic_write_json, atomic_write_text
from fltrust.core.records import RoundRecord
from fltrust.runs import RunFolder, load_run


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    atomic_write_text(tmp_path / "a.txt", "one")
    atomic_write_text(tmp_path / "a.txt", "two")
    assert (tmp_path / "a.txt").read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_round_record_json_round_trip():
    record = RoundRecord(
        round=2,
        client_ids=np.array([1, 4]),
        client_metrics={"accuracy": np.array([0.5, 0.75])},
        client_confusion=np.array([[[1, 0], [1, 2]], [[2, 0], [0, 2]]]),
        server_metrics={"aux_loss": 0.3},
        observations={"fairness": {"f_j": math.nan, "phi": [0.1, -0.2]}},
    )
    back = RoundRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert back.client_ids.tolist() == [1, 4]
    assert back.client_metrics["accuracy"].tolist() == [0.5, 0.75]
    assert back.client_confusion.shape == (2, 2, 2)
    assert back.observations["fairness"] == {"f_j": None, "phi": [0.1, -0.2]}
    assert back.client_value("accuracy", 4) == 0.75


def test_load_run_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.yaml"):
        load_run(tmp_path)


def test_incomplete_summary_is_not_complete(tmp_path):
    folder = RunFolder(tmp_path)
    assert not folder.is_complete()
    folder.summary.write_text("{not json")
    assert not folder.is_complete()
    atomic_write_json(folder.summary, {"status": "complete"})
    assert folder.is_complete()


# -- damaged and edited run folders: one line naming the file, never "delete the folder" ------------

def _tiny(rounds=3):
    from fltrust.config import ExperimentConfig

    return ExperimentConfig.tiny(training={"rounds": rounds}, run={"name": "damage", "torch_threads": None})


@pytest.fixture
def finished_run(tmp_path):
    from fltrust.experiment import run_experiment

    return run_experiment(_tiny(), out_dir=tmp_path / "runs").path


def test_a_cut_last_line_is_named_on_load_and_the_resume_says_how_it_is_handled(tmp_path, caplog):
    # before: load/audit said "rounds.jsonl:3 is corrupt (JSONDecodeError); delete <folder> and rerun"
    from fltrust.core.observers import BaseObserver
    from fltrust.experiment import run_experiment
    from fltrust.runs import RecordIntegrityWarning

    class Crash(BaseObserver):
        name = "crash"

        def on_round_end(self, record):
            if record.round == 2:
                raise KeyboardInterrupt

    cfg = _tiny()
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, observers=[Crash()], out_dir=tmp_path)
    folder = tmp_path / cfg.run_id()
    with open(folder / "rounds.jsonl", "a") as handle:  # what a full disk leaves while round 2 is written
        handle.write('{"round": 2, "client_ids": [0, 3')

    with pytest.warns(RecordIntegrityWarning, match=r"rounds\.jsonl: line 3, the last, is cut \(a write that did not "
                                                    r"finish: a full disk or a killed process\); the 2 complete line\(s\) "
                                                    r"before it are read, and rerunning the same command resumes"):
        record = load_run(folder)
    assert [r.round for r in record.rounds] == [0, 1]

    with caplog.at_level("WARNING", logger="fltrust"):
        resumed = run_experiment(cfg, out_dir=tmp_path)
    assert "rounds.jsonl: line 3, the last, is cut" in caplog.text
    assert "resuming after round 1, the checkpoint's, and dropping the cut line" in caplog.text
    assert [r.round for r in resumed.rounds] == [0, 1, 2, 3]


def test_a_cut_line_in_a_finished_run_fails_the_audit_as_damage(finished_run, capsys):
    from fltrust.cli import main

    text = (finished_run / "rounds.jsonl").read_text()
    (finished_run / "rounds.jsonl").write_text(text[:-40])

    assert main(["audit", str(finished_run)]) == 1
    captured = capsys.readouterr()
    assert "line 4, the last, is cut" in captured.out and "the file was damaged after the run" in captured.out
    assert "delete" not in captured.out + captured.err and "warning" not in captured.err  # said once, as a check


def test_a_line_that_is_not_utf8_is_one_run_folder_error(finished_run, capsys):
    # before: UnicodeDecodeError, exit 70 (internal error)
    from fltrust.cli import main

    lines = (finished_run / "rounds.jsonl").read_bytes().split(b"\n")
    lines[1] = lines[1][:10] + b"\xff" + lines[1][10:]
    (finished_run / "rounds.jsonl").write_bytes(b"\n".join(lines))

    assert main(["audit", str(finished_run)]) == 4
    err = capsys.readouterr().err.strip()
    assert err == (f"fltrust: error: {finished_run}/rounds.jsonl:2 is not UTF-8 text (byte 0xff at column 11): it was "
                   "damaged or edited after the run; keep the folder as it is (it is the record of what the run did; "
                   "`fltrust audit` names what changed) and rerun into a new folder (--out elsewhere)")


@pytest.mark.parametrize(("name", "content", "why"), [
    ("summary.json", b"{not json", "JSONDecodeError: Expecting property name"),
    ("summary.json", b"[1, 2]", "a JSON list, not an object"),
    ("summary.json", b'{"status": "\xff"}', "UnicodeDecodeError"),
    ("config.yaml", b"a: [", "ParserError"),
])
def test_a_corrupt_file_says_keep_the_folder_never_delete_it(finished_run, capsys, name, content, why):
    # before: "... is corrupt; delete <run folder> and rerun": the folder is the evidence
    from fltrust.cli import main
    from fltrust.runs import KEEP_THE_FOLDER

    (finished_run / name).write_bytes(content)

    assert main(["audit", str(finished_run)]) == 4
    err = capsys.readouterr().err
    assert f"{finished_run}/{name} is corrupt ({why}" in err and KEEP_THE_FOLDER in err and "delete" not in err


def test_a_hand_edited_summary_is_shown_with_a_warning(finished_run, capsys):
    # before: `fltrust run` showed the edited numbers of a "complete" run without a word
    from fltrust.cli import main
    from fltrust.runs import RecordIntegrityWarning

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordIntegrityWarning)
        load_run(finished_run)  # as written: no warning

    summary = json.loads((finished_run / "summary.json").read_text())
    summary["final_aux_accuracy"] = 0.999
    (finished_run / "summary.json").write_text(json.dumps(summary, indent=1))
    with pytest.warns(RecordIntegrityWarning, match=r"summary\.json: edited after the run \(field\(s\) "
                                                    r"final_aux_accuracy do not match the record hash the run wrote\)"):
        load_run(finished_run)

    config = finished_run.parent.parent / "cfg.yaml"
    import yaml

    config.write_text(yaml.safe_dump(yaml.safe_load((finished_run / "config.yaml").read_text())))
    assert main(["run", str(config), "--out", str(finished_run.parent)]) == 0
    captured = capsys.readouterr()
    assert "skipped" in captured.out and "final aux accuracy: 0.9990" in captured.out
    warning = [line for line in captured.err.splitlines() if "summary.json: edited after the run" in line]
    assert len(warning) == 1 and "`fltrust audit" in warning[0]


def _round(client_params, aux_loss=0.5, train_loss=(0.1, 0.2), **server):
    return RoundRecord(round=4, client_ids=np.array([2, 7]), client_metrics={"train_loss": np.array(train_loss)},
                       server_metrics={"aux_loss": aux_loss, **server}, client_params=client_params,
                       global_params_after=[np.array([np.nan])])


def test_divergence_names_the_client_whose_model_is_not_finite():
    # before: "training diverged at round 4: the aggregated model has NaN/inf parameters"
    from fltrust.runs import RunDiverged, check_finite

    with pytest.raises(RunDiverged, match=r"^training diverged at round 4: the aggregated model has NaN/inf parameters; "
                                          r"client\(s\) \[7\] sent a model with NaN/inf parameters in round 4$"):
        check_finite(_round([[np.ones(3, dtype=np.float32)], [np.array([1.0, np.inf], dtype=np.float32)]]))

    with pytest.raises(RunDiverged, match=r"client\(s\) \[2\] reached a non-finite training loss in round 4$"):
        check_finite(_round([[np.ones(1)], [np.ones(1)]], train_loss=(np.nan, 0.2)))


def test_divergence_under_nbafl_reports_its_noise():
    # before: "the aggregated model's aux_loss is nan" and nothing about the 3.5e11 noise of epsilon 1e-9
    from fltrust.runs import RunDiverged, check_finite

    record = _round([[np.ones(1)], [np.ones(1)]], aux_loss=float("nan"), nbafl_upload_noise_norm=3.54e11)
    record.global_params_after = [np.ones(1)]
    with pytest.raises(RunDiverged, match=r"aux_loss is nan; NbAFL added noise of expected norm 3\.54e\+11 to each "
                                          r"client model .* raise privacy\.target_epsilon or lower privacy\.nbafl_constant"):
        check_finite(record)
