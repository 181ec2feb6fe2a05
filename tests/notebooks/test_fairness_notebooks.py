"""Execute the fairness notebooks with papermill, as ``fltrust repro fairness --quick`` does.

The condition notebook runs a tiny FedAvg / NSL-KDD iid condition (quick mode, 2 rounds, 10 clients)
on the real NSL-KDD files; the summary notebook then turns its result into RESULTS.md and the figures.
The derivations notebook's own asserts are its test.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import papermill
import pytest

from fltrust.repro import batch
from fltrust.repro.batch import NOTEBOOKS, execute_notebook

CONDITION = "fedavg_nslkdd_100c_iid"
NSL_KDD_FILES = ("KDDTrain+.txt", "KDDTrain+_20Percent.txt", "KDDTest+.txt", "KDDTest-21.txt")


@pytest.fixture(scope="module")
def quick_condition(tmp_path_factory, data_root) -> Path:
    """Folder of one executed quick condition notebook (results/, figures/, runs/, notebooks/)."""
    missing = [f for f in NSL_KDD_FILES if not (data_root / "nsl_kdd" / f).is_file()]
    if missing:
        pytest.skip(f"NSL-KDD files {missing} not under {data_root / 'nsl_kdd'}")
    base = tmp_path_factory.mktemp("fairness-quick")
    execute_notebook(
        NOTEBOOKS / "fairness" / "condition.ipynb",
        base / "notebooks" / f"{CONDITION}.ipynb",
        {
            "condition": CONDITION,
            "repeats": 1,
            "mode": "faithful",
            "device": "cpu",
            "quick": True,
            "runs_dir": str(base / "runs"),
            "result_path": str(base / "results" / f"{CONDITION}.json"),
            "figures_dir": str(base / "figures"),
            "data_dir": None,
            "rounds": 2,
            "clients": 10,
        },
    )
    return base


def test_condition_notebook_parameters_match_the_batch_runner(monkeypatch, tmp_path):
    # Prepare: capture the jobs run_fairness_batch builds instead of executing them
    jobs = []
    monkeypatch.setattr(batch, "run_jobs", lambda batch_jobs, *, title, **kw: jobs.extend(batch_jobs) or [])

    # Execute
    batch.run_fairness_batch(conditions=CONDITION, quick=True, out_dir=tmp_path)
    condition_params = set(papermill.inspect_notebook(str(NOTEBOOKS / "fairness" / "condition.ipynb")))
    summary_params = set(papermill.inspect_notebook(str(NOTEBOOKS / "fairness" / "summary.ipynb")))

    # Assert: every parameter the runner passes is declared, plus the optional rounds / clients
    condition_job, summary_job = jobs
    assert condition_params == set(condition_job.parameters) | {"rounds", "clients"}
    assert summary_params == set(summary_job.parameters)


@pytest.mark.notebooks
@pytest.mark.realdata
def test_condition_notebook_writes_a_complete_result(quick_condition):
    # Execute
    result = json.loads((quick_condition / "results" / f"{CONDITION}.json").read_text())

    # Assert: complete, quick, the overrides applied, the window means consistent with the rounds
    assert result["condition"] == CONDITION and result["complete"] is True and result["quick"] is True
    assert result["mode"] == "faithful" and result["synthetic"] is False
    assert result["rounds"] == 2 and result["num_clients"] == 10 and result["window"] == [1, 2]
    per_round = result["per_round"]
    assert per_round["round"] == [1, 2]
    for k in range(2):
        notions = [per_round[n][k] for n in ("f_j", "f_g", "f_r", "f_o")]
        assert per_round["F_T"][k] == pytest.approx(sum(notions) / 4)
    assert result["table3"]["F_T"] == pytest.approx(sum(per_round["F_T"]) / 2)
    assert 0.0 <= result["table3"]["f_o"] <= 1.0 and not math.isnan(result["table3"]["f_g"])
    assert result["deviations"] and len(result["run_ids"]) == 1
    for name in (f"{CONDITION}_timeseries.png", f"{CONDITION}_notions.png"):
        assert (quick_condition / "figures" / name).stat().st_size > 0


@pytest.mark.notebooks
@pytest.mark.realdata
def test_summary_notebook_writes_results_md(quick_condition):
    # Prepare: a figures folder of its own, so the condition's figures below can only come from the summary
    results_md = quick_condition / "RESULTS.md"
    figures = quick_condition / "summary-figures"

    # Execute
    execute_notebook(
        NOTEBOOKS / "fairness" / "summary.ipynb",
        quick_condition / "notebooks" / "summary.ipynb",
        {
            "results_dir": str(quick_condition / "results"),
            "figures_dir": str(figures),
            "results_md": str(results_md),
            "quick": True,
        },
    )

    # Assert: the condition's row in both tables, the quick warning, the summary figures and the
    # condition's own two, redrawn from its result (a result copied in brings its figures up to date)
    result = json.loads((quick_condition / "results" / f"{CONDITION}.json").read_text())
    text = results_md.read_text()
    ours = f"{result['table3']['F_T']:.3f}"
    assert f"| NSL-KDD (100C) | 0.50 / {ours} (n=1) / Δ " in text
    assert f"| {CONDITION} | faithful |" in text
    assert "QUICK RUN" in text and "`fltrust repro fairness --quick`" in text
    for name in ("fairness_figure4.png", "fairness_table3.png", f"{CONDITION}_timeseries.png", f"{CONDITION}_notions.png"):
        assert (figures / name).stat().st_size > 0


@pytest.mark.notebooks
def test_derivations_notebook_runs(tmp_path):
    # Execute: every cell asserts the library against the hand computation
    committed = (NOTEBOOKS / "fairness" / "derivations.ipynb").read_bytes()
    execute_notebook(NOTEBOOKS / "fairness" / "derivations.ipynb", tmp_path / "derivations.ipynb", {})

    # Assert: the figure is inline (the kernel does not inherit this process's MPLBACKEND=Agg) and the
    # committed, executed notebook is left as it is
    executed = json.loads((tmp_path / "derivations.ipynb").read_text())
    outputs = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert (NOTEBOOKS / "fairness" / "derivations.ipynb").read_bytes() == committed
