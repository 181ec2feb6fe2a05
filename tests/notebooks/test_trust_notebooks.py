"""Execute the FederatedTrust notebooks with papermill, as ``fltrust repro trust --quick`` does.

The experiment notebook runs experiment 4 (synthetic N-BaIoT stand-in, always available) and
experiment 1 (real FEMNIST; skipped when the data root lacks it) in quick mode; the summary notebook
then turns their results into RESULTS.md and the pillar figure. The derivations notebook's own
asserts are its test.
"""

from __future__ import annotations

import json
from pathlib import Path

import papermill
import pytest

from fltrust.repro import batch
from fltrust.repro.batch import NOTEBOOKS, execute_notebook

MODES = ["prototype", "paper", "fixed", "extended"]
COMPARED = ["prototype", "paper", "fixed"]  # compared with the paper; extended has its own table


def _run_experiment_notebook(base: Path, experiment: str) -> dict:
    execute_notebook(
        NOTEBOOKS / "federatedtrust" / "experiment.ipynb",
        base / "notebooks" / f"{experiment}.ipynb",
        {
            "experiment": experiment,
            "modes": MODES,
            "device": "cpu",
            "quick": True,
            "runs_dir": str(base / "runs"),
            "result_path": str(base / "results" / f"{experiment}.json"),
            "figures_dir": str(base / "figures"),
            "data_dir": None,
        },
    )
    return json.loads((base / "results" / f"{experiment}.json").read_text())


@pytest.fixture(scope="module")
def quick_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("trust-quick")


@pytest.fixture(scope="module")
def exp4_result(quick_folder) -> dict:
    return _run_experiment_notebook(quick_folder, "exp4")


@pytest.fixture(scope="module")
def exp1_result(quick_folder, data_root) -> dict:
    if not list((data_root / "femnist" / "train").glob("*.json")):
        pytest.skip(f"FEMNIST LEAF files not under {data_root / 'femnist'}")
    return _run_experiment_notebook(quick_folder, "exp1")


def test_notebook_parameters_match_the_batch_runner(monkeypatch, tmp_path):
    # Prepare: capture the jobs run_trust_batch builds instead of executing them
    jobs = []
    monkeypatch.setattr(batch, "run_jobs", lambda batch_jobs, *, title, **kw: jobs.extend(batch_jobs) or [])

    # Execute
    batch.run_trust_batch(experiments="exp4", quick=True, out_dir=tmp_path)
    experiment_params = set(papermill.inspect_notebook(str(NOTEBOOKS / "federatedtrust" / "experiment.ipynb")))
    summary_params = set(papermill.inspect_notebook(str(NOTEBOOKS / "federatedtrust" / "summary.ipynb")))

    # Assert: the notebooks declare exactly the parameters the runner passes
    experiment_job, summary_job = jobs
    assert experiment_params == set(experiment_job.parameters)
    assert summary_params == set(summary_job.parameters)
    assert experiment_job.parameters["modes"] == MODES


@pytest.mark.notebooks
def test_experiment_notebook_synthetic_n_baiot(exp4_result, quick_folder):
    # Assert: complete quick result on SYNTHETIC data, every mode scored, one figure per mode
    result = exp4_result
    assert result["experiment"] == "exp4" and result["complete"] is True and result["quick"] is True
    assert result["synthetic"] is True and result["dataset"] == "synthetic_n_baiot"
    assert list(result["modes"]) == MODES
    pillars = {"robustness", "privacy", "fairness", "explainability", "accountability", "architectural_soundness"}
    for mode in COMPARED:
        scores = result["modes"][mode]
        assert set(scores["pillars"]) == pillars
        assert scores["trust_score"] is not None and len(scores["metrics"]) == 22
    for mode in MODES:
        assert (quick_folder / "figures" / f"exp4_{mode}.png").stat().st_size > 0
    # extended mode: measured in the run itself (trained once), 36 taxonomy metrics + sustainability
    extended = result["modes"]["extended"]
    assert set(extended["pillars"]) == pillars | {"sustainability"} and extended["trust_score"] is not None
    assert result["extended_run"]["run_id"] == result["run_id"]
    assert result["extended_run"]["measured_in"] == "run"
    # no DP: privacy = (0 + entropy bin 11/12 + 0) / 3 in paper mode, as the paper's 0.31
    assert result["modes"]["paper"]["pillars"]["privacy"] == 0.31
    assert any("SYNTHETIC" in d for d in result["deviations"])


@pytest.mark.notebooks
@pytest.mark.realdata
def test_experiment_notebook_femnist(exp1_result, quick_folder):
    # Assert: real FEMNIST, 10 writers, 5 per round, 2 quick rounds
    result = exp1_result
    assert result["complete"] is True and result["synthetic"] is False and result["dataset"] == "femnist"
    assert result["settings"]["num_clients"] == 10 and result["settings"]["clients_per_round"] == 5
    assert result["settings"]["rounds"] == 2
    assert result["modes"]["paper"]["metrics"]["explainability/model_size"]["raw"] == 6_603_902  # ConvNet2
    assert (quick_folder / "figures" / "exp1_paper.png").stat().st_size > 0


@pytest.mark.notebooks
def test_summary_notebook_writes_results_md(exp4_result, quick_folder, request):
    # Prepare: experiment 1 too when FEMNIST is available
    try:
        request.getfixturevalue("exp1_result")
    except pytest.skip.Exception:
        pass
    results_md = quick_folder / "RESULTS.md"

    # Execute
    execute_notebook(
        NOTEBOOKS / "federatedtrust" / "summary.ipynb",
        quick_folder / "notebooks" / "summary.ipynb",
        {
            "results_dir": str(quick_folder / "results"),
            "figures_dir": str(quick_folder / "figures"),
            "results_md": str(results_md),
            "quick": True,
        },
    )

    # Assert: exp4's trust row paper / ours per mode, the banners, the figure
    text = results_md.read_text()
    modes = exp4_result["modes"]
    cells = []
    for mode in COMPARED:
        ours = modes[mode]["trust_score"]
        mark = "✓" if abs(ours - 0.57) <= 0.005 + 1e-9 else "✗"
        cells.append(f"{ours:.3f} | {ours - 0.57:+.3f} {mark}")
    row = "| Trust score | 0.57 | " + " | ".join(cells) + " |"
    assert row in text
    assert "QUICK RUN" in text and "`fltrust repro trust --quick`" in text and "SYNTHETIC DATA: " in text
    assert "**exp2_trust**" in text
    assert "## Extended mode" in text and "| exp4 (SYNTHETIC) (QUICK) |" in text
    assert (quick_folder / "figures" / "trust_pillars.png").stat().st_size > 0


@pytest.mark.notebooks
def test_derivations_notebook_runs(tmp_path):
    # Execute: every cell asserts the library against the hand computation (spec 8 golden numbers;
    # docs/references.md#trust-8)
    committed = (NOTEBOOKS / "federatedtrust" / "derivations.ipynb").read_bytes()
    execute_notebook(NOTEBOOKS / "federatedtrust" / "derivations.ipynb", tmp_path / "derivations.ipynb", {})

    # Assert: the figure is inline (the kernel does not inherit this process's MPLBACKEND=Agg) and the
    # committed, executed notebook is left as it is
    executed = json.loads((tmp_path / "derivations.ipynb").read_text())
    outputs = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert (NOTEBOOKS / "federatedtrust" / "derivations.ipynb").read_bytes() == committed
