"""The demo: dataset families on synthetic fallbacks, every phase in order, and the end screen."""

from __future__ import annotations

import json

import pytest

from fltrust import demo
from fltrust.config import load_config
from fltrust.demo import FAMILIES, PHASES, demo_config_path, end_screen, run_demo
from fltrust.repro.fairness import report as fairness_report
from fltrust.repro.trust import report as trust_report


def test_demo_configs_are_valid():
    for family in FAMILIES:
        cfg = load_config(demo_config_path(family))
        assert cfg.data.allow_synthetic_fallback


def _tiny_families(monkeypatch):
    """Tiny synthetic sizes keep the family runs fast (an empty data root forces the fallback)."""
    original = demo.load_config

    def small(path, overrides=None):
        overrides = dict(overrides or {})
        overrides.update({"data.synthetic_samples": 300, "data.max_train_samples": None, "training.rounds": 1,
                          "run.progress": False, "partition.aux_max_samples": 100})
        return original(path, overrides)

    monkeypatch.setattr(demo, "load_config", small)


def test_demo_without_data_uses_synthetic_stand_ins(tmp_path, capsys, monkeypatch):
    _tiny_families(monkeypatch)
    code = run_demo(out_dir=tmp_path, data_dir=str(tmp_path / "no-data"), papers=False)
    out = capsys.readouterr().out
    assert code == 0
    for family in FAMILIES:
        assert f"== {family} ==" in out
    assert out.count("used the SYNTHETIC stand-in") == len(FAMILIES)
    assert out.count("[SYNTHETIC DATA]") == len(FAMILIES)
    # the closing summary names the command that fetches each missing dataset
    for family in FAMILIES:
        assert f"python -m fltrust data fetch {family}" in out
    # real and synthetic results can never share a folder: the stand-in is in the run id
    assert all("-synthetic-" in p.name for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("demo-"))


# -- hand-made results of both papers ------------------------------------------------------------


def _fairness_result(condition, F_T, *, synthetic=True):
    return {"condition": condition, "quick": True, "complete": True, "mode": "faithful", "rounds": 3, "window": [1, 3],
            "num_clients": 20, "synthetic": synthetic, "deviations": [], "seconds_per_run": [1.0],
            "run_ids": [f"{condition}-x-s0-r0"], "per_round": {},
            "table3": {"f_j": F_T, "f_g": F_T, "f_r": F_T, "f_o": F_T, "F_T": F_T, "F_T_per_repeat": [F_T],
                       "F_T_std": None, "repeats": 1, "rounds_in_window": 3, "mean_local_accuracy": 0.5,
                       "aux_accuracy": 0.5}}


def _trust_result(name, scores, *, synthetic=True):
    return {"experiment": name, "title": name, "figure": "Fig. 4", "dataset": "femnist", "paper_dataset": "FEMNIST",
            "synthetic": synthetic, "quick": True, "complete": True, "run_id": f"{name}-x", "elapsed_s": 1.0,
            "run_wall_time_s": 1.0, "deviations": [],
            "settings": {"num_clients": 4, "clients_per_round": 2, "rounds": 2, "paper_rounds": 5, "privacy": "none",
                         "epsilon": None, "strategy": "fedavg", "model": "convnet2"},
            "modes": {mode: {"trust_score": score, "pillars": {}, "metrics": {}} for mode, score in scores.items()}}


def _write(folder, name, result):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(result))


def _write_paper_results(out_dir):
    _write(out_dir / "fairness" / "results", "fedavg_cifar10_10c_niid", _fairness_result("fedavg_cifar10_10c_niid", 0.394))
    _write(out_dir / "fairness" / "results", "fedavg_femnist_205c_niid",
           _fairness_result("fedavg_femnist_205c_niid", None))
    _write(out_dir / "trust" / "results", "exp1",
           _trust_result("exp1", {"prototype": 0.52, "paper": 0.441, "fixed": 0.344, "extended": 0.547}))
    _write(out_dir / "trust" / "results", "exp4", _trust_result("exp4", {"paper": 0.56}, synthetic=False))


def _row(screen, first_cell):
    rows = [line.split() for line in screen.splitlines() if line.split()[:1] == [first_cell]]
    assert len(rows) == 1, screen
    return rows[0]


def test_end_screen_shows_both_papers_against_the_reported_numbers(tmp_path):
    # Prepare
    _write_paper_results(tmp_path)
    reported_ft = fairness_report.load_reported()["values"]["fedavg_cifar10_10c_niid"]
    reported = trust_report.comparison_frame(trust_report.load_results(tmp_path / "trust" / "results"))
    exp1_paper = reported[(reported.experiment == "exp1") & (reported.item == "trust_score")]["paper"].iloc[0]
    reports = [tmp_path / "fairness" / "report.html", tmp_path / "trust" / "report.html"]

    # Execute
    screen = end_screen(tmp_path, {"families": 1.0, "fairness": 61.0, "trust": 2.0, "report": 0.5}, reports,
                        total_s=64.5)

    # Assert: F_T per condition against the paper (Δ by hand), undefined shown as –
    assert _row(screen, "fedavg_cifar10_10c_niid") == [
        "fedavg_cifar10_10c_niid", f"{reported_ft:.2f}", "0.394", f"{0.394 - reported_ft:.3f}", "SYNTHETIC"]
    assert _row(screen, "fedavg_femnist_205c_niid")[2:4] == ["–", "–"]
    # the trust score per experiment and mode, with the paper's; a mode an experiment lacks is –
    assert screen.count("prototype") == 1 and "extended" in screen
    assert _row(screen, "exp1") == ["exp1", "FEMNIST", f"{exp1_paper:.2f}", "0.52", "0.44", "0.34", "0.55", "SYNTHETIC"]
    assert _row(screen, "exp4")[3:] == ["–", "0.56", "–", "–", "real"]
    assert "QUICK" in screen and "1 min 04 s" in screen and "fairness 1 min 01 s" in screen
    for path in reports:
        assert f"  {path}" in screen.splitlines()


def test_demo_runs_every_phase_in_order_and_ends_with_the_screen(tmp_path, capsys, monkeypatch):
    # Prepare: real (tiny) family runs; the paper batches and the report writer are recorded
    from fltrust.repro import batch, html_report

    _tiny_families(monkeypatch)
    calls = []

    def fairness(**kwargs):
        calls.append(("fairness", kwargs))
        return []

    def trust(**kwargs):
        calls.append(("trust", kwargs))
        _write_paper_results(tmp_path)
        return ["exp2"]  # a failed experiment makes the demo fail, after the end screen

    def report(paper, **kwargs):
        calls.append(("report", {"paper": paper, **kwargs}))
        return kwargs["batch_dir"] / "report.html"

    monkeypatch.setattr(batch, "run_fairness_batch", fairness)
    monkeypatch.setattr(batch, "run_trust_batch", trust)
    monkeypatch.setattr(html_report, "write_report", report)

    # Execute
    code = run_demo(out_dir=tmp_path, data_dir=str(tmp_path / "no-data"), device="cpu")
    out = capsys.readouterr().out

    # Assert: families, then both papers at quick scale in this process, then the reports in --out
    assert [name for name, _ in calls] == ["fairness", "trust", "report", "report"]
    for name, kwargs in calls[:2]:
        assert kwargs["quick"] and kwargs["in_process"] and kwargs["device"] == "cpu"
        assert kwargs["out_dir"] == tmp_path / name and kwargs["data_dir"] == str(tmp_path / "no-data")
    assert calls[0][1]["conditions"] == demo.DEMO_FAIRNESS_CONDITIONS
    assert [(k["paper"], k["batch_dir"], k["quick"]) for _, k in calls[2:]] == [
        ("fairness", tmp_path / "fairness", True), ("trust", tmp_path / "trust", True)]
    positions = [out.index(marker) for marker in (
        "== n_baiot ==", "== Federated Fairness Analytics", "== FederatedTrust", "== HTML reports ==",
        "fltrust demo: both papers end to end", "general fairness F_T", "trust score per experiment",
        f"\n  {tmp_path / 'trust' / 'report.html'}\n", "failed: ['exp2']")]
    assert positions == sorted(positions)
    screen = out[out.index("fltrust demo: both papers"):]
    assert all(f"{phase} " in screen.splitlines()[0] for phase in PHASES)
    assert code == 1


@pytest.mark.slow
def test_demo_end_to_end_on_one_condition_and_one_experiment(tmp_path, capsys, monkeypatch):
    # the real chain at its smallest: notebooks executed in-process, results, summaries, HTML, end screen
    _tiny_families(monkeypatch)
    monkeypatch.setattr(demo, "DEMO_FAIRNESS_CONDITIONS", "fedavg_nslkdd_100c_niid")
    monkeypatch.setattr(demo, "DEMO_TRUST_EXPERIMENTS", "exp4")

    code = run_demo(out_dir=tmp_path, data_dir=str(tmp_path / "no-data"), device="cpu")
    out = capsys.readouterr().out

    assert code == 0, out
    assert _row(out, "fedavg_nslkdd_100c_niid")[-1] == "SYNTHETIC"
    assert _row(out, "exp4")[-1] == "SYNTHETIC" and "–" not in _row(out, "exp4")[3:]
    for paper in ("fairness", "trust"):
        page = tmp_path / paper / "report.html"
        assert page.is_file() and f"  {page}" in out.splitlines()
        assert (tmp_path / paper / "RESULTS.md").is_file()
        assert (tmp_path / paper / "notebooks" / "summary.log").is_file()
    assert not list(tmp_path.glob("*/notebooks/*.error.txt"))
