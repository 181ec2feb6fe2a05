"""The papermill batch runner: honest skipping (repeats, configs, synthetic) and parallel jobs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from fltrust.repro.batch import NotebookJob, kernel_environment, run_jobs


def _notebook(path):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("result_path = ''\nvalue = 0")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "import json, os\n"
        "json.dump({'complete': True, 'quick': False, 'value': value, 'threads': os.environ.get('OMP_NUM_THREADS'),\n"
        "           'run_ids': [f'c{value}-s0-r0']}, open(result_path, 'w'))")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _job(tmp_path, notebook, i, **kw):
    result = tmp_path / f"r{i}.json"
    return NotebookJob(f"c{i}", notebook, tmp_path / "out" / f"c{i}.ipynb", {"result_path": str(result), "value": i},
                       result, **kw)


@pytest.mark.slow
def test_parallel_jobs_all_run_with_shared_out_threads(tmp_path, capsys):
    notebook = _notebook(tmp_path / "nb.ipynb")
    jobs = [_job(tmp_path, notebook, i) for i in range(3)]
    assert run_jobs(jobs, title="t", parallel=2) == []
    results = [json.loads((tmp_path / f"r{i}.json").read_text()) for i in range(3)]
    assert [r["value"] for r in results] == [0, 1, 2]
    assert {r["threads"] for r in results} == {str(max(1, (os.cpu_count() or 1) // 2))}
    assert "3 run, 0 already complete, 0 failed" in capsys.readouterr().out
    # second time: every job is skipped with a visible line
    assert run_jobs(jobs, title="t", parallel=2) == []
    out = capsys.readouterr().out
    assert "0 run, 3 already complete" in out


def test_a_result_from_other_repeats_or_synthetic_data_is_redone(tmp_path):
    result = tmp_path / "r.json"
    job = NotebookJob("c", tmp_path / "nb.ipynb", tmp_path / "o.ipynb", {}, result,
                      expected_run_ids=["c-abc-s0-r0", "c-abc-s0-r1"])
    assert job.stale_reason() == "no result yet"
    result.write_text(json.dumps({"complete": True, "quick": False, "run_ids": ["c-abc-s0-r0"]}))
    assert "other repeats or config" in job.stale_reason()
    result.write_text(json.dumps({"complete": True, "quick": False, "run_ids": ["c-abc-s0-r1", "c-abc-s0-r0"]}))
    assert job.is_complete()
    result.write_text(json.dumps({"complete": True, "quick": False, "synthetic": True,
                                  "run_ids": ["c-abc-s0-r0", "c-abc-s0-r1"]}))
    assert "synthetic stand-in in place of real data" in job.stale_reason()
    result.write_text(json.dumps({"complete": True, "quick": False, "synthetic": True, "dataset": "femnist",
                                  "run_ids": ["c-abc-s0-r0", "c-abc-s0-r1"]}))
    assert "synthetic" in job.stale_reason()  # a FEMNIST experiment that fell back to the stand-in
    result.write_text(json.dumps({"complete": True, "quick": False, "synthetic": True, "dataset": "synthetic_n_baiot",
                                  "run_ids": ["c-abc-s0-r0", "c-abc-s0-r1"]}))
    assert job.is_complete()  # configured on the stand-in (FederatedTrust exp4-5): nothing real would replace it
    result.write_text(json.dumps({"complete": True, "quick": True, "run_ids": ["c-abc-s0-r0", "c-abc-s0-r1"]}))
    assert "quick" in job.stale_reason()


def test_kernel_environment_is_restored(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with kernel_environment(3):
        assert "MPLBACKEND" not in os.environ and os.environ["OMP_NUM_THREADS"] == "3"
    assert os.environ["MPLBACKEND"] == "Agg" and "OMP_NUM_THREADS" not in os.environ


def _sleeping_notebooks(folder):
    """notebooks/fairness/{condition,summary}.ipynb stand-ins: mark that the kernel runs, then sleep."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("\n".join(f"{name} = None" for name in (
        "condition", "repeats", "mode", "device", "quick", "runs_dir", "result_path", "figures_dir", "data_dir")))
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "import os, pathlib, time\n"
        "pathlib.Path(result_path).parent.mkdir(parents=True, exist_ok=True)\n"
        "pathlib.Path(result_path + '.started').write_text(str(os.getpid()))\n"
        "time.sleep(300)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (folder / "fairness").mkdir(parents=True)
    for name in ("condition", "summary"):
        nbformat.write(nb, folder / "fairness" / f"{name}.ipynb")
    return folder


@pytest.mark.slow
def test_sigint_stops_a_repro_batch_its_kernels_and_their_connection_files(tmp_path):
    # before: one Ctrl-C let every queued condition run to completion (the pool's shutdown waited
    # for the queue), and the kernels, in their own sessions, never saw the SIGINT
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    psutil = pytest.importorskip("psutil")
    repo = Path(__file__).resolve().parents[2]
    notebooks = _sleeping_notebooks(tmp_path / "notebooks")
    out, runtime = tmp_path / "batch", tmp_path / "tmp"  # kernels' connection files go to $TMPDIR
    runtime.mkdir()
    driver = ("import sys, pathlib, fltrust.repro.batch as b; b.NOTEBOOKS = pathlib.Path(sys.argv[1]); "
              "from fltrust.cli import main; sys.exit(main(sys.argv[2:]))")
    env = {**os.environ, "PYTHONPATH": str(repo), "TMPDIR": str(runtime), "FLTRUST_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-c", driver, str(notebooks), "repro", "fairness", "--quick",
                             "--conditions", "*nslkdd*", "--jobs", "2", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(list(out.glob("results/*.started"))) < 2:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        kernels = psutil.Process(proc.pid).children(recursive=True)
        assert len(kernels) == 2 and len(list(runtime.glob("*.json"))) == 2
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does (the kernels have their own sessions)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()

    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        "fltrust: interrupted (2 running job(s) stopped, 4 queued job(s) cancelled; finished jobs keep their "
        "results); rerun the same command to resume")
    _, alive = psutil.wait_procs(kernels, timeout=10)
    assert alive == []
    assert list(runtime.glob("*.json")) == []  # no connection file left
    assert len(list(out.glob("results/*.started"))) == 2  # the 4 queued conditions never started
    assert list(out.glob("notebooks/*.error.txt")) == []  # stopped, not failed


# ---------------------------------------------------------------------------------------------
# in-process execution (fltrust demo)
# ---------------------------------------------------------------------------------------------


def _in_process_notebook(path, body):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("result_path = ''\nvalue = 0\nthreads = None")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# not code"), nbformat.v4.new_code_cell("seen = []"), params,
                nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)
    return path


def test_in_process_notebook_gets_its_parameters_and_leaves_the_process_as_it_was(tmp_path, monkeypatch):
    import torch

    from fltrust.repro.batch import REPO, run_notebook_in_process

    # Prepare: a notebook that records its parameters, its working directory and what it printed
    notebook = _in_process_notebook(tmp_path / "nb.ipynb", (
        "import json, os, sys, torch\n"
        "if threads: torch.set_num_threads(threads)\n"
        "print('hello from the notebook'); print('to stderr', file=sys.stderr)\n"
        "display('shown')\n"
        "json.dump({'value': value, 'cwd': os.getcwd(), 'seen': seen}, open(result_path, 'w'))"))
    monkeypatch.chdir(tmp_path)
    before = torch.get_num_threads()
    result, log = tmp_path / "r.json", tmp_path / "out" / "nb.log"

    # Execute
    run_notebook_in_process(notebook, {"result_path": str(result), "value": 7, "threads": before + 1}, log)

    # Assert: the parameters replaced the defaults, cells ran in one namespace from the repository
    # root; the output went to the log; working directory and torch threads are restored
    assert json.loads(result.read_text()) == {"value": 7, "cwd": str(REPO), "seen": []}
    text = log.read_text()
    assert "hello from the notebook" in text and "to stderr" in text and "shown" in text
    assert os.getcwd() == str(tmp_path) and torch.get_num_threads() == before


def test_in_process_failure_names_the_cell_and_the_batch_goes_on(tmp_path, capsys):
    from fltrust.repro.batch import NotebookCellError, run_notebook_in_process

    bad = _in_process_notebook(tmp_path / "bad.ipynb", "raise ValueError('broken on purpose')")
    with pytest.raises(NotebookCellError, match=r"bad.ipynb cell 3: ValueError: broken on purpose"):
        run_notebook_in_process(bad, {}, tmp_path / "bad.log")
    assert "Traceback" in (tmp_path / "bad.log").read_text()

    good = _notebook(tmp_path / "good.ipynb")
    jobs = [NotebookJob("bad", bad, tmp_path / "out" / "bad.ipynb", {}, tmp_path / "none.json"),
            _job(tmp_path, good, 1)]
    assert run_jobs(jobs, title="t", in_process=True) == ["bad"]
    out = capsys.readouterr().out
    assert "FAILED bad: NotebookCellError: bad.ipynb cell 3: ValueError: broken on purpose" in out
    assert "1 run, 0 already complete, 1 failed" in out
    assert json.loads((tmp_path / "r1.json").read_text())["value"] == 1
    assert (tmp_path / "out" / "bad.error.txt").is_file() and (tmp_path / "out" / "c1.log").is_file()
    # second time: the complete job is skipped, the failed one is tried again
    assert run_jobs(jobs, title="t", in_process=True) == ["bad"]
    assert "0 run, 1 already complete, 1 failed" in capsys.readouterr().out


@pytest.mark.parametrize("notebook", ["fairness/condition.ipynb", "fairness/summary.ipynb",
                                      "federatedtrust/experiment.ipynb", "federatedtrust/summary.ipynb"])
def test_batch_notebooks_are_plain_python_for_in_process_runs(notebook):
    # fltrust demo executes these notebooks with exec(): an IPython magic or shell escape would break it
    from fltrust.repro.batch import NOTEBOOKS, _notebook_code_cells

    cells = _notebook_code_cells(NOTEBOOKS / notebook)
    assert sum("parameters" in c.metadata.get("tags", []) for c in cells) == 1
    for number, cell in enumerate(cells, start=1):
        compile(cell.source, f"{notebook} cell {number}", "exec")


def test_in_process_ctrl_c_stops_the_batch_and_names_the_job(tmp_path, monkeypatch):
    # a Ctrl-C reaches the running notebook itself (it runs in the main thread): the batch stops there
    import torch

    from fltrust.repro.batch import REPO

    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    stop = _in_process_notebook(tmp_path / "stop.ipynb", "import torch\ntorch.set_num_threads(1)\nraise KeyboardInterrupt")
    good = _notebook(tmp_path / "good.ipynb")
    jobs = [_job(tmp_path, good, 0), NotebookJob("stop", stop, tmp_path / "out" / "stop.ipynb", {}, tmp_path / "s.json"),
            _job(tmp_path, good, 2)]
    with pytest.raises(KeyboardInterrupt, match=r"stopped during stop, 1 queued job\(s\) cancelled"):
        run_jobs(jobs, title="t", in_process=True)
    assert (tmp_path / "r0.json").is_file() and not (tmp_path / "r2.json").exists()
    assert os.getcwd() == str(tmp_path) != str(REPO) and torch.get_num_threads() == threads


def test_a_full_batch_keeps_its_executed_summary_in_the_paper_folder(tmp_path, monkeypatch):
    """Into papers_repro/<paper>/ the executed summary notebook is also kept as summary.ipynb
    (committed with its outputs); into another --out folder it is not."""
    from fltrust.repro import batch

    monkeypatch.setattr(batch, "REPO", tmp_path)

    def fake_run_jobs(jobs, **kw):
        for job in jobs:
            job.output_notebook.parent.mkdir(parents=True, exist_ok=True)
            job.output_notebook.write_text(f'{{"executed": "{job.name}"}}')
        return []

    monkeypatch.setattr(batch, "run_jobs", fake_run_jobs)
    common = dict(paper="fairness_analytics", notebook_folder="fairness",
                  item_key="condition", names=["a"], item_parameters={}, quick=False, data_dir=None)
    batch._paper_batch(out_dir=None, **common)
    kept = tmp_path / "papers_repro" / "fairness_analytics" / "summary.ipynb"
    assert json.loads(kept.read_text()) == {"executed": "summary"}
    batch._paper_batch(out_dir=tmp_path / "elsewhere", **common)
    assert not (tmp_path / "elsewhere" / "summary.ipynb").exists()


def test_a_committed_summary_notebook_names_no_machine_folder():
    from fltrust.repro.batch import REPO, _parameter_path, _portable_notebook

    assert _parameter_path(REPO / "papers_repro" / "x" / "results") == "papers_repro/x/results"
    assert _parameter_path(Path("/elsewhere/results")) == "/elsewhere/results"
    text = json.dumps({"cells": [], "metadata": {"papermill": {
        "input_path": str(REPO / "notebooks" / "s.ipynb"), "output_path": "/tmp/out/s.ipynb",
        "parameters": {"quick": False}}}})
    record = json.loads(_portable_notebook(text))["metadata"]["papermill"]
    assert record["input_path"] == "notebooks/s.ipynb"
    assert record["output_path"] == "/tmp/out/s.ipynb"
    assert record["parameters"] == {"quick": False}
