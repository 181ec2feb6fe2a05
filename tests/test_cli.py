"""The command line: run, data info, error messages and exit codes."""

import json
import os

import pytest
import yaml

from fltrust.cli import main


def write_config(tmp_path, **extra):
    cfg = {
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 300},
        "partition": {"num_clients": 4},
        "strategy": {"clients_per_round": 2},
        "training": {"rounds": 2},
        "run": {"name": "cli", "progress": False},
    }
    cfg.update(extra)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_run_prints_summary_and_writes_record(tmp_path, capsys):
    code = main(["run", str(write_config(tmp_path)), "--out", str(tmp_path / "runs"), "--set", "training.rounds=1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "[SYNTHETIC DATA]" in out and "rounds: 1" in out
    record = out.split("record: ")[1].strip()
    assert json.loads((tmp_path / "runs" / record.split("/")[-1] / "summary.json").read_text())["status"] == "complete"


def test_bad_config_gives_exit_2_and_names_the_field(tmp_path, capsys):
    code = main(["run", str(write_config(tmp_path)), "--set", "training.epochs=3"])
    assert code == 2
    assert "training.epochs" in capsys.readouterr().err


def test_data_dir_accepted_after_the_subcommand(tmp_path, capsys):
    before = os.environ.get("FLTRUST_DATA")
    code = main(["data", "info", "--json", "--data-dir", str(tmp_path)])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0
    assert os.environ.get("FLTRUST_DATA") == before  # --data-dir does not leak out of main
    assert {r["name"] for r in rows} == {"cifar10", "femnist", "nsl_kdd", "n_baiot", "ffa-results"}
    assert not any(r["found"] for r in rows)


def test_missing_real_data_error_names_the_files(tmp_path, capsys):
    path = write_config(tmp_path, data={"name": "nsl_kdd"})
    code = main(["run", str(path), "--data-dir", str(tmp_path / "empty")])
    assert code == 2
    assert "KDDTrain+.txt" in capsys.readouterr().err


def test_fetch_ffa_results_offline_names_the_missing_files(tmp_path, capsys, monkeypatch):
    import urllib.error

    from fltrust.data import fetch

    def offline(url, dest, timeout):
        raise urllib.error.URLError("no network in this test")

    monkeypatch.setattr(fetch, "_download", offline)
    code = main(["data", "fetch", "ffa-results", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 73
    assert err[0].startswith("fltrust: data error: ffa-results: 72 of 72 files missing or wrong")
    assert err[1].startswith(f"Ditto_CIFAR_iid_100C_5PC_10E_30R_v1.json missing: put it in {tmp_path}/ffa_results/Results/")


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("run", "demo", "data", "repro"):
        assert command in out
