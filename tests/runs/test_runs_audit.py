"""The tamper audit (fltrust.runs.audit): the model and record hash chains, the audit key, and
refused planted model files."""

import json

import numpy as np
import pytest

def test_audit_verifies_the_hash_chain_and_detects_tampering(tmp_path):
    from fltrust.cli import main
    from fltrust.config import ExperimentConfig
    from fltrust.experiment import run_experiment
    from fltrust.runs import audit_run, chain_hash, params_hash

    cfg = ExperimentConfig.from_dict({
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 300},
        "partition": {"num_clients": 4, "aux_max_samples": 60}, "strategy": {"clients_per_round": 2},
        "training": {"rounds": 3}, "run": {"name": "audit", "progress": False, "device": "cpu"}})
    record = run_experiment(cfg, out_dir=tmp_path)
    links = [r.server_metrics["chain_hash"] for r in record.rounds]
    assert len(set(links)) == 4 and record.summary["model_hash_chain"] == links[-1]
    # the chain by hand: round k links the previous head with the model's hash
    assert links[1] == chain_hash(links[0], record.rounds[1].server_metrics["model_hash"])
    assert params_hash([np.zeros(2, np.float32)]) != params_hash([np.zeros(2, np.float64)])
    assert audit_run(record.path).ok
    assert main(["audit", str(record.path)]) == 0

    # drop round 2 from the record: the chain no longer links
    lines = (record.path / "rounds.jsonl").read_text().splitlines()
    (record.path / "rounds.jsonl").write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    result = audit_run(record.path)
    assert not result.ok and "chain broken" in result.lines[0]
    assert main(["audit", str(record.path)]) == 1


# -- the record chain, the audit key, plain-data model files ------------------------------------

class PlantedPayload:
    """What an attacker pickles: unpickling it calls ``Path.touch(marker)`` (any code could run)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        from pathlib import Path

        return (Path.touch, (Path(self.marker),))


def _audit_run_folder(tmp_path, rounds=5, **run):
    from fltrust.config import ExperimentConfig
    from fltrust.experiment import run_experiment

    cfg = ExperimentConfig.from_dict({
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 300},
        "partition": {"num_clients": 4, "aux_max_samples": 60}, "strategy": {"clients_per_round": 2},
        "training": {"rounds": rounds}, "metrics": {"fairness": {"enabled": True}},
        "run": {"name": "audit", "progress": False, "device": "cpu", "torch_threads": 1, **run}})
    return run_experiment(cfg, out_dir=tmp_path).path


def _edit_line(folder, round_, edit):
    lines = (folder / "rounds.jsonl").read_text().splitlines()
    data = json.loads(lines[round_])
    assert data["round"] == round_
    edit(data)
    lines[round_] = json.dumps(data)
    (folder / "rounds.jsonl").write_text("\n".join(lines) + "\n")


def _edit_summary(folder, edit):
    data = json.loads((folder / "summary.json").read_text())
    edit(data)
    (folder / "summary.json").write_text(json.dumps(data, indent=2))


def test_audit_names_an_edited_round_field_and_summary_field(tmp_path, capsys):
    from fltrust.cli import main

    folder = _audit_run_folder(tmp_path)
    assert main(["audit", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "record chain of 6 rounds verified (unkeyed sha256" in out and "not against someone who recomputes it" in out
    assert "config.yaml, dataset.json, final_model.pt" in out

    def raise_accuracy(data):
        data["server_metrics"]["aux_accuracy"] += 0.25
        data["client_metrics"]["accuracy"] = [a / 2 + 0.01 for a in data["client_metrics"]["accuracy"]]

    _edit_line(folder, 5, raise_accuracy)
    _edit_summary(folder, lambda s: s.update(final_aux_accuracy=s["final_aux_accuracy"] + 0.25))
    assert main(["audit", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "rounds.jsonl round 5: edited after the run: client_metrics.accuracy, server_metrics.aux_accuracy" in out
    assert "summary.json: edited after the run: final_aux_accuracy" in out
    assert out.strip().endswith("FAILED")


def test_audit_names_an_edited_observer_output_and_dataset_file(tmp_path):
    from fltrust.runs import audit_run

    folder = _audit_run_folder(tmp_path, rounds=2)
    _edit_line(folder, 2, lambda d: d["observations"]["fairness"].update(F_T=0.5))
    (folder / "dataset.json").write_text((folder / "dataset.json").read_text().replace('"iid"', '"dirichlet"'))
    result = audit_run(folder)
    assert not result.ok
    assert "rounds.jsonl round 2: edited after the run: observations.fairness.F_T" in result.lines
    assert any(line.startswith("dataset.json: edited after the run (sha256") for line in result.lines), result.lines


def _recompute_chain(folder, key=None):
    """What someone who knows the (public) recipe does after an edit: recompute every link."""
    from fltrust.runs.audit import _covered_files
    from fltrust.runs.chain import INTEGRITY, _summary_link, field_digests, record_link

    lines, previous = [], ""
    for line in (folder / "rounds.jsonl").read_text().splitlines():
        data = json.loads(line)
        data.pop(INTEGRITY)
        previous = record_link(previous, data, key)
        lines.append(json.dumps({**data, INTEGRITY: {"link": previous, "fields": field_digests(data)}}))
    (folder / "rounds.jsonl").write_text("\n".join(lines) + "\n")
    summary = json.loads((folder / "summary.json").read_text())
    integrity = summary.pop(INTEGRITY)
    files = _covered_files(folder)
    integrity.update(record_chain=previous, files=files,
                     link=_summary_link(previous, summary, files, integrity["algorithm"], key))
    (folder / "summary.json").write_text(json.dumps({**summary, INTEGRITY: integrity}))


def test_unkeyed_chain_is_forgeable_and_a_keyed_one_is_not(tmp_path, monkeypatch):
    from fltrust.runs import audit_run

    plain = _audit_run_folder(tmp_path / "plain", rounds=2)
    _edit_line(plain, 2, lambda d: d["server_metrics"].update(aux_accuracy=0.999))
    assert not audit_run(plain).ok
    _recompute_chain(plain)
    assert audit_run(plain).ok  # what the docstring and README say: unkeyed is no proof against this

    key_file = tmp_path / "audit.key"
    key_file.write_text("correct horse battery staple\n")
    monkeypatch.setenv("FLTRUST_AUDIT_KEY_FILE", str(key_file))
    keyed = _audit_run_folder(tmp_path / "keyed", rounds=2)
    result = audit_run(keyed)
    assert result.ok and "record chain of 3 rounds verified (keyed, hmac-sha256)" in result.lines
    _edit_line(keyed, 2, lambda d: d["server_metrics"].update(aux_accuracy=0.999))
    _recompute_chain(keyed, key=b"a guessed key")
    result = audit_run(keyed)
    assert not result.ok and "rounds.jsonl round 0: record chain broken" in result.lines[1], result.lines

    monkeypatch.delenv("FLTRUST_AUDIT_KEY_FILE")
    monkeypatch.setenv("FLTRUST_AUDIT_KEY", "correct horse battery staple")  # the same key, from the variable
    _recompute_chain(keyed, key=b"correct horse battery staple")  # only a key holder can do this
    assert audit_run(keyed).ok
    monkeypatch.delenv("FLTRUST_AUDIT_KEY")
    result = audit_run(keyed)
    assert not result.ok and "keyed (hmac-sha256): set FLTRUST_AUDIT_KEY or FLTRUST_AUDIT_KEY_FILE" in result.lines[1]
    monkeypatch.setenv("FLTRUST_AUDIT_KEY", "k")
    result = audit_run(plain)
    assert not result.ok and "the record chain is sha256, but an audit key is set" in result.lines[1]


def test_run_without_record_hashes_audits_the_weights_only(tmp_path):
    from fltrust.runs import INTEGRITY, audit_run

    folder = _audit_run_folder(tmp_path, rounds=2)
    for r in range(3):  # what every run wrote before record hashing
        _edit_line(folder, r, lambda d: d.pop(INTEGRITY))
    _edit_summary(folder, lambda s: s.pop(INTEGRITY))
    result = audit_run(folder)
    assert result.ok
    assert ("rounds.jsonl and summary.json carry no record hashes (written before record hashing): the chains cover "
            "the model weights only, not the metrics") in result.lines
    _edit_line(folder, 1, lambda d: d["server_metrics"].update(aux_accuracy=0.999))
    assert audit_run(folder).ok  # said plainly above: the metrics of such a run are not covered
    _edit_line(folder, 1, lambda d: d.update({INTEGRITY: {"link": "0" * 64, "fields": {}}}))
    assert not audit_run(folder).ok  # once any record carries a hash, every record must


def test_a_pickled_final_model_is_refused_in_one_line_and_never_run(tmp_path, capsys):
    import torch

    from fltrust.cli import main

    folder = _audit_run_folder(tmp_path, rounds=1)
    marker = tmp_path / "payload-ran"
    torch.save({"layer.weight": PlantedPayload(marker)}, folder / "final_model.pt")

    assert main(["audit", str(folder)]) == 1
    captured = capsys.readouterr()
    assert not marker.exists()
    assert f"{folder / 'final_model.pt'}: not a plain-data final model: it references " in captured.out
    assert "nothing in it ran" in captured.out and "weights_only" not in captured.out + captured.err
    assert "Traceback" not in captured.err and captured.out.strip().endswith("FAILED")

    (folder / "final_model.pt").write_bytes(b"not a torch file")
    assert main(["audit", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"{folder / 'final_model.pt'}: unreadable final model" in out



def test_audit_key_settings_are_checked(tmp_path, monkeypatch):
    from fltrust.runs import audit_key

    monkeypatch.delenv("FLTRUST_AUDIT_KEY", raising=False)
    monkeypatch.delenv("FLTRUST_AUDIT_KEY_FILE", raising=False)
    assert audit_key() is None
    monkeypatch.setenv("FLTRUST_AUDIT_KEY_FILE", str(tmp_path / "missing.key"))
    with pytest.raises(ValueError, match="missing.key: cannot read the audit key file"):
        audit_key()
    (tmp_path / "empty.key").write_text("\n")
    monkeypatch.setenv("FLTRUST_AUDIT_KEY_FILE", str(tmp_path / "empty.key"))
    with pytest.raises(ValueError, match="the audit key file is empty"):
        audit_key()
    monkeypatch.setenv("FLTRUST_AUDIT_KEY", "k")
    with pytest.raises(ValueError, match="not both"):
        audit_key()


def test_a_diverged_run_audits_its_finite_rounds_and_its_reason(tmp_path):
    from fltrust.config import ExperimentConfig
    from fltrust.experiment import run_experiment
    from fltrust.runs import audit_run

    cfg = ExperimentConfig.tiny(training={"learning_rate": 1e30, "rounds": 3},
                                run={"name": "dv", "progress": False, "device": "cpu", "torch_threads": 1})
    record = run_experiment(cfg, out_dir=tmp_path)
    assert record.status == "diverged" and record.summary["diverged_round"] == 1
    result = audit_run(record.path)
    assert result.ok and result.lines[-1] == "the run diverged at round 1: there is no final model"
    _edit_line(record.path, 1, lambda d: d["observations"]["diverged"].update(reason="a cosmic ray"))
    result = audit_run(record.path)
    assert not result.ok and "rounds.jsonl round 1: edited after the run: observations.diverged.reason" in result.lines
