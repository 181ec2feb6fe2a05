"""Batch reproduction: execute a parameterised notebook per condition with papermill.

Behaviour shared by ``fltrust repro fairness`` and ``fltrust repro trust``:

- a job whose result file exists and says ``"complete": true`` (with the same ``quick`` flag) is
  skipped, so an interrupted batch resumes where it stopped (:meth:`NotebookJob.stale_reason`);
- a failing job is reported and the batch goes on; failures are listed at the end (and the
  command exits non-zero);
- progress is shown with tqdm; every executed notebook is kept next to the results;
- finally the summary notebook turns all available results into tables and figures;
- ``in_process=True`` (what ``fltrust demo`` uses) executes the same notebooks in this process,
  one after the other, instead of one kernel per job (:func:`run_notebook_in_process`): no kernel
  start-up and no re-import of torch, SHAP and ART per job. Each job's printed output is kept in
  ``notebooks/<job>.log`` instead of an executed copy;
- Ctrl-C (SIGINT) stops the batch within seconds: queued jobs are cancelled, the running kernels
  (which run in their own sessions, so the terminal's SIGINT never reaches them) are killed with
  their process groups and their connection files removed, and ``KeyboardInterrupt`` is raised
  (``fltrust repro`` exits 130). Jobs that finished keep their results, so rerunning the same
  command resumes.

Output folders (``out_dir``):

- full runs default to the paper folder (``papers_repro/<paper>/``): ``results/*.json`` (small,
  committed), ``runs/`` (raw run records, not committed), ``notebooks/`` (executed copies), and the
  summary writes ``RESULTS.md`` there and figures to ``figures/<paper>/``; its executed copy is
  also kept as ``summary.ipynb`` there (committed with its outputs);
- quick runs default to ``runs/repro/<paper>-quick/`` so they never overwrite committed results.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

from fltrust.names import FAIRNESS_MODES, SYNTHETIC_DATASETS, TRUST_MODES, Device
from fltrust.repro.paths import repo_root, resource_root
from fltrust.core.io import atomic_write_text

REPO = repo_root()  # where outputs go: the checkout, or the cwd of a wheel outside one (fltrust.repro.paths)
NOTEBOOKS = resource_root() / "notebooks"  # the checkout's, or the wheel's packaged copy
FIGURE_FOLDERS = {"fairness_analytics": "fairness", "federatedtrust": "trust"}  # figures/<folder> of each paper


@dataclass
class NotebookJob:
    """One notebook execution."""

    name: str
    notebook: Path
    output_notebook: Path
    parameters: dict[str, Any] = field(default_factory=dict)
    result_path: Path | None = None
    quick: bool = False
    expected_run_ids: list[str] | None = None

    def is_complete(self) -> bool:
        """True when the result file exists, is complete, has the same quick flag, was made from
        exactly the runs this job asks for (repeats and resolved configs, via their run ids), and
        was not made on a synthetic stand-in *in place of* real data (those are redone cheaply, so
        real data is used once present). A result whose configured dataset is itself a stand-in
        (``dataset`` in :data:`fltrust.names.SYNTHETIC_DATASETS`, e.g. the N-BaIoT experiments 4-5
        of FederatedTrust) is reused like any other."""
        return self.stale_reason() is None

    def stale_reason(self) -> str | None:
        """Why the result file cannot be reused (None when it can)."""
        if self.result_path is None or not self.result_path.is_file():
            return "no result yet"
        try:
            data = json.loads(self.result_path.read_text())
        except json.JSONDecodeError:
            return f"{self.result_path} is not valid JSON"
        if not data.get("complete"):
            return "the result is incomplete"
        if bool(data.get("quick")) != self.quick:
            return "the result was made in the other (quick/full) mode"
        if data.get("synthetic") and data.get("dataset") not in SYNTHETIC_DATASETS:
            return "the result was made on a synthetic stand-in in place of real data"
        if self.expected_run_ids is not None:
            stored = data.get("run_ids") or ([data["run_id"]] if data.get("run_id") else [])
            if sorted(stored) != sorted(self.expected_run_ids):
                return (f"the result holds runs {sorted(stored)}, the job asks for {sorted(self.expected_run_ids)} "
                        "(other repeats or config)")
        return None


@contextlib.contextmanager
def kernel_environment(threads_per_job: int | None = None) -> Iterator[None]:
    """Environment that notebook kernels inherit while a batch runs (kernels copy ``os.environ``).

    ``MPLBACKEND`` is removed (e.g. ``Agg`` set for a test process), so ipykernel selects the inline
    backend and executed notebooks keep their figures; with parallel jobs, ``OMP_NUM_THREADS`` and
    ``MKL_NUM_THREADS`` cap each kernel's torch threads so the jobs do not oversubscribe the cores.
    """
    saved = {k: os.environ.get(k) for k in ("MPLBACKEND", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    os.environ.pop("MPLBACKEND", None)
    if threads_per_job is not None:
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads_per_job)
    try:
        yield
    finally:
        for key in saved:
            os.environ.pop(key, None)
        os.environ.update({key: value for key, value in saved.items() if value is not None})


def execute_notebook(notebook: Path, output: Path, parameters: dict[str, Any]) -> None:
    """Execute ``notebook`` with papermill into ``output`` (working directory = the repo), with
    inline figures (:func:`kernel_environment`)."""
    with kernel_environment():
        _papermill(notebook, output, parameters)


class NotebookCellError(RuntimeError):
    """A code cell of a notebook executed in-process raised; the message names the notebook and cell."""


IN_PROCESS_LOG_SUFFIX = ".log"
"""Suffix of the output file of a job executed in-process (next to where papermill keeps executed copies)."""


def _notebook_code_cells(notebook: Path) -> list[Any]:
    import nbformat

    return [cell for cell in nbformat.read(str(notebook), as_version=4).cells if cell.cell_type == "code"]


@contextlib.contextmanager
def _job_output(log: Path) -> Iterator[None]:
    """Send everything a job prints (stdout, stderr, warnings, the root logger's console handlers,
    progress bars) to ``log``, as a kernel keeps its output in the executed notebook."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as stream:
        consoles = [h for h in logging.getLogger().handlers
                    if type(h) is logging.StreamHandler and h.stream in (sys.stdout, sys.stderr)]
        previous = [h.setStream(stream) for h in consoles]
        try:
            with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
                yield
        finally:
            for handler, old in zip(consoles, previous):
                handler.setStream(old)


def run_notebook_in_process(notebook: Path, parameters: dict[str, Any], log: Path) -> None:
    """Execute the code cells of ``notebook`` in this process, in order, as papermill would in a kernel.

    The cell tagged ``parameters`` runs first with its defaults, then ``parameters`` replace them
    (papermill's injected cell). Every cell runs in one fresh namespace with ``display`` from
    IPython; a cell's last expression is evaluated but not shown. The working directory is the
    repository (as papermill's ``cwd``) while the notebook runs; figures use the non-interactive
    Agg backend (they are saved to files; ``plt.show()`` shows nothing) and are closed at the end;
    the torch thread count is restored (trust configurations set ``run.torch_threads``). All output
    goes to ``log``.

    Parameters
    ----------
    notebook : Path
        A notebook of plain Python cells (no IPython magics or shell escapes).
    parameters : dict
        Values for the notebook's parameters cell.
    log : Path
        File that receives the notebook's output.

    Raises
    ------
    NotebookCellError
        A cell raised; the message names the notebook, the cell number (1-based, code cells only)
        and the error, and the original exception is chained.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch
    from IPython.display import display

    cells = _notebook_code_cells(notebook)
    namespace: dict[str, Any] = {"__name__": "__main__", "display": display}
    threads, cwd = torch.get_num_threads(), os.getcwd()
    try:
        with _job_output(log):
            os.chdir(REPO)
            for number, cell in enumerate(cells, start=1):
                try:
                    exec(compile(cell.source, f"{notebook.name} cell {number}", "exec"), namespace)
                except Exception as exc:
                    traceback.print_exc()  # into the log, like a kernel's traceback in the executed notebook
                    raise NotebookCellError(f"{notebook.name} cell {number}: {type(exc).__name__}: {exc}") from exc
                if "parameters" in cell.metadata.get("tags", []):
                    namespace.update(parameters)
    finally:
        os.chdir(cwd)
        plt.close("all")
        torch.set_num_threads(threads)


class KernelRegistry:
    """The notebook kernels a batch started, so that an interrupted batch can stop them.

    jupyter_client starts every kernel in its own session: the SIGINT of a Ctrl-C reaches the
    batch, never its kernels. :meth:`manager_class` is the kernel manager class papermill uses;
    it records each kernel it starts, and refuses to start one once the batch is stopping.
    """

    STOP_WAIT_S = 15.0
    """How long :meth:`stop` waits for the job threads to notice their kernel died."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._managers: list[Any] = []

    def manager_class(self) -> type:
        """A subclass of jupyter_client's ``AsyncKernelManager`` bound to this registry."""
        from jupyter_client.manager import AsyncKernelManager

        registry = self

        class TrackedKernelManager(AsyncKernelManager):
            async def start_kernel(self, **kwargs: Any) -> None:
                if registry.stopping.is_set():
                    raise RuntimeError("the batch is stopping (interrupted); no new kernel is started")
                with registry._lock:
                    registry._managers.append(self)
                await super().start_kernel(**kwargs)

        return TrackedKernelManager

    def kill_all(self) -> int:
        """Kill every running kernel's process group and remove its connection file; returns how many."""
        self.stopping.set()
        with self._lock:
            managers = list(self._managers)
        killed = 0
        for km in managers:
            provisioner = getattr(km, "provisioner", None)
            process = getattr(provisioner, "process", None)
            if process is not None and process.poll() is None:  # alive and not reaped: its pid is still ours
                group = getattr(provisioner, "pgid", None) or process.pid
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, signal.SIGKILL)
                    killed += 1
            if km.connection_file:
                with contextlib.suppress(OSError):
                    os.unlink(km.connection_file)
        return killed


def _papermill(notebook: Path, output: Path, parameters: dict[str, Any], kernels: KernelRegistry | None = None) -> None:
    import papermill

    output.parent.mkdir(parents=True, exist_ok=True)
    extra = {} if kernels is None else {"kernel_manager_class": kernels.manager_class()}
    papermill.execute_notebook(
        str(notebook),
        str(output),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(REPO),
        progress_bar=False,
        log_output=False,
        # keep the kernel's own start-up warnings (e.g. about its local TCP transport) out of the batch log
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        **extra,
    )


def _execute_job(job: NotebookJob, kernels: KernelRegistry | None = None,
                 in_process: bool = False) -> tuple[str, float, str | None]:
    """Run one job (papermill, or :func:`run_notebook_in_process`); returns (name, seconds, error
    line or None). Never raises, except ``KeyboardInterrupt``."""
    start = time.perf_counter()
    try:
        if in_process:
            run_notebook_in_process(job.notebook, job.parameters, job.output_notebook.with_suffix(IN_PROCESS_LOG_SUFFIX))
        else:
            _papermill(job.notebook, job.output_notebook, job.parameters, kernels)
    except Exception as exc:  # noqa: BLE001 - keep going; report at the end
        if kernels is not None and kernels.stopping.is_set():  # its kernel was killed by an interrupt
            return job.name, time.perf_counter() - start, "stopped (interrupted)"
        message = str(exc).strip().splitlines()
        (job.output_notebook.with_suffix(".error.txt")).write_text(traceback.format_exc())
        return job.name, time.perf_counter() - start, f"{type(exc).__name__}: {message[-1] if message else ''}"
    return job.name, time.perf_counter() - start, None


def run_jobs(jobs: list[NotebookJob], *, title: str, parallel: int = 1, in_process: bool = False) -> list[str]:
    """Run jobs, skipping complete ones and surviving failures; returns failed names.

    ``parallel`` > 1 runs that many notebooks at once (each in its own kernel process) with
    ``cores // parallel`` torch threads each, under one progress bar. ``in_process=True`` runs
    them one after the other in this process (:func:`run_notebook_in_process`; ``parallel`` is
    ignored), so that a Ctrl-C interrupts the running job itself.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm.auto import tqdm

    failures: list[str] = []
    todo = []
    for job in jobs:
        if job.stale_reason() is None:
            tqdm.write(f"skipped {job.name}: complete in {job.result_path}")
        else:
            todo.append(job)
    skipped = len(jobs) - len(todo)
    if in_process:
        failures = _run_in_process(todo)
        _print_outcome(title, len(todo), skipped, failures)
        return failures
    parallel = max(1, min(parallel, len(todo) or 1))
    threads = max(1, (os.cpu_count() or 1) // parallel) if parallel > 1 else None
    bar = tqdm(total=len(jobs), initial=skipped, desc=title, unit="job")
    kernels = KernelRegistry()
    pool = ThreadPoolExecutor(max_workers=parallel)
    futures: dict[Any, NotebookJob] = {}
    try:
        with kernel_environment(threads):
            futures = {pool.submit(_execute_job, job, kernels): job for job in todo}
            for future in as_completed(futures):
                name, seconds, error = future.result()
                _report_job(tqdm.write, name, seconds, error,
                            f"executed notebook kept at {futures[future].output_notebook}", failures)
                bar.update(1)
                bar.set_postfix_str(name)
    except KeyboardInterrupt:
        bar.leave = False  # the interrupt's one line replaces the progress bar
        bar.close()
        raise KeyboardInterrupt(_stop_jobs(pool, futures, kernels)) from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    bar.close()
    failures.sort(key=[j.name for j in jobs].index)
    _print_outcome(title, len(todo), skipped, failures)
    return failures


def _print_outcome(title: str, ran: int, skipped: int, failures: list[str]) -> None:
    print(f"{title}: {ran - len(failures)} run, {skipped} already complete, {len(failures)} failed")
    if failures:
        print(f"{title}: failed jobs: {failures}")


def _run_in_process(todo: list[NotebookJob]) -> list[str]:
    """The in-process branch of :func:`run_jobs`: one job after the other, in the main thread;
    returns the failed names."""
    failures: list[str] = []
    for position, job in enumerate(todo):
        try:
            name, seconds, error = _execute_job(job, in_process=True)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(f"stopped during {job.name}, {len(todo) - position - 1} queued job(s) "
                                    "cancelled; finished jobs keep their results") from None
        _report_job(print, name, seconds, error,
                    f"output kept at {job.output_notebook.with_suffix(IN_PROCESS_LOG_SUFFIX)}", failures)
    return failures


def _report_job(write: Callable[[str], Any], name: str, seconds: float, error: str | None, kept: str,
                failures: list[str]) -> None:
    """One finished job's lines (``kept``: where a failed job's output is); a failed job joins ``failures``."""
    if error is None:
        write(f"done {name} in {seconds:.1f} s")
    else:
        failures.append(name)
        write(f"FAILED {name}: {error}")
        write(f"  {kept}")


def _stop_jobs(pool: Any, futures: dict[Any, NotebookJob], kernels: KernelRegistry) -> str:
    """After a Ctrl-C: cancel the queued jobs, kill the running kernels, wait for their threads
    (bounded); returns what was stopped, for the one-line message."""
    from concurrent.futures import wait

    pool.shutdown(wait=False, cancel_futures=True)
    cancelled = sum(f.cancelled() for f in futures)
    running = [f for f in futures if not f.done()]
    deadline = time.monotonic() + KernelRegistry.STOP_WAIT_S
    papermill_log = logging.getLogger("papermill")  # "Kernel died while waiting ...": we killed it
    level = papermill_log.level
    papermill_log.setLevel(logging.CRITICAL)
    try:
        while True:
            kernels.kill_all()  # again each time: a job thread may have been starting its kernel
            if not wait(running, timeout=0.5).not_done or time.monotonic() > deadline:
                break
        kernels.kill_all()
    finally:
        papermill_log.setLevel(level)
    return (f"{len(running)} running job(s) stopped, {cancelled} queued job(s) cancelled; "
            "finished jobs keep their results")


def _select(names: list[str], pattern: str | None) -> list[str]:
    patterns = [p.strip() for p in (pattern or "*").split(",") if p.strip()]
    selected = [n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)]
    if not selected:
        raise ValueError(f"--conditions {pattern!r} matches nothing; available: {names}")
    return selected


def _folders(paper: str, quick: bool, out_dir: str | Path | None) -> dict[str, Path]:
    default = REPO / "runs" / "repro" / f"{paper}-quick" if quick else REPO / "papers_repro" / paper
    base = default if out_dir is None else Path(out_dir).resolve()
    figures = base / "figures" if (quick or out_dir is not None) else REPO / "figures" / FIGURE_FOLDERS[paper]
    return {
        "base": base,
        "results": base / "results",
        "runs": base / "runs",
        "notebooks": base / "notebooks",
        "figures": figures,
        "results_md": base / "RESULTS.md",
    }


def _parameter_path(path: Path) -> str:
    """A path as a notebook parameter: relative to the repository when inside it (kernels run there),
    so that an executed notebook that is committed does not name this machine's folders."""
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def _portable_notebook(text: str) -> str:
    """An executed notebook with papermill's record of its input and output files relative to the
    repository (its parameters already are: :func:`_parameter_path`)."""
    notebook = json.loads(text)
    record = notebook.get("metadata", {}).get("papermill", {})
    for key in ("input_path", "output_path"):
        if isinstance(record.get(key), str):
            record[key] = _parameter_path(Path(record[key]))
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False)


def _paper_batch(
    *,
    paper: str,
    notebook_folder: str,
    item_key: str,
    names: list[str],
    item_parameters: dict[str, Any],
    quick: bool,
    out_dir: str | Path | None,
    data_dir: str | None,
    suffix: str = "",
    expected_run_ids: Callable[[str], list[str]] | None = None,
    parallel: int = 1,
    in_process: bool = False,
) -> list[str]:
    """One notebook job per name (``<item_key>.ipynb`` with ``{item_key: name, **item_parameters}``), then the
    summary notebook.

    ``expected_run_ids(name)`` lists the run ids a complete result of ``name`` must hold; a result
    made from other repeats or another resolved config is redone. ``in_process``: see :func:`run_jobs`.
    """
    folders = _folders(paper, quick, out_dir)
    jobs = []
    for name in names:
        result = folders["results"] / f"{name}{suffix}.json"
        parameters = {
            item_key: name,
            **item_parameters,
            "quick": quick,
            "runs_dir": _parameter_path(folders["runs"]),
            "result_path": _parameter_path(result),
            "figures_dir": _parameter_path(folders["figures"]),
            "data_dir": data_dir,
        }
        jobs.append(NotebookJob(name, NOTEBOOKS / notebook_folder / f"{item_key}.ipynb",
                                folders["notebooks"] / f"{name}{suffix}.ipynb", parameters, result, quick,
                                expected_run_ids(name) if expected_run_ids else None))
    title = FIGURE_FOLDERS[paper]
    failures = run_jobs(jobs, title=f"{title} {item_key}s", parallel=parallel, in_process=in_process)
    summary = NotebookJob(
        name="summary",
        notebook=NOTEBOOKS / notebook_folder / "summary.ipynb",
        output_notebook=folders["notebooks"] / f"summary{suffix}.ipynb",
        parameters={
            "results_dir": _parameter_path(folders["results"]),
            "figures_dir": _parameter_path(folders["figures"]),
            "results_md": _parameter_path(folders["results_md"]),
            "quick": quick,
        },
    )
    failures += run_jobs([summary], title=f"{title} summary", in_process=in_process)
    if folders["base"] == REPO / "papers_repro" / paper and summary.output_notebook.is_file():
        # the committed paper folder keeps its executed summary notebook, outputs and all, for readers
        atomic_write_text(folders["base"] / "summary.ipynb", _portable_notebook(summary.output_notebook.read_text()))
    print(f"{title} tables: {folders['results_md']}\n{title} figures: {folders['figures']}")
    return failures


def run_fairness_batch(
    *,
    conditions: str | None = "*",
    repeats: int | None = None,
    mode: str | None = None,
    quick: bool = False,
    device: Device = "auto",
    out_dir: str | Path | None = None,
    data_dir: str | None = None,
    jobs: int = 1,
    in_process: bool = False,
) -> list[str]:
    """Execute ``notebooks/fairness/condition.ipynb`` per selected condition, then the summary.

    ``jobs`` conditions run at once (parallel kernels, cores shared out between them);
    ``in_process=True`` executes the notebooks in this process instead (:func:`run_jobs`).
    """
    from fltrust.repro.fairness.run import condition_configs
    from fltrust.repro.fairness.conditions import all_conditions, condition_name

    mode = mode or "faithful"
    if mode not in FAIRNESS_MODES:
        raise ValueError(f"--mode {mode!r} is not a fairness mode; choose one of {list(FAIRNESS_MODES)}")
    repeats = repeats if repeats is not None else (1 if quick else 3)

    def run_ids(name: str) -> list[str]:
        configs = condition_configs(name, repeats=repeats, mode=mode, quick=quick, device=device, data_dir=data_dir)
        return [cfg.run_id() for cfg in configs]

    return _paper_batch(
        paper="fairness_analytics",
        notebook_folder="fairness",
        item_key="condition",
        names=_select([condition_name(*c) for c in all_conditions()], conditions),
        item_parameters={"repeats": repeats, "mode": mode, "device": device},
        quick=quick,
        out_dir=out_dir,
        data_dir=data_dir,
        suffix="" if mode == "faithful" else f"-{mode}",
        expected_run_ids=run_ids,
        parallel=jobs,
        in_process=in_process,
    )


def run_trust_batch(
    *,
    experiments: str | None = "*",
    mode: str | None = None,
    quick: bool = False,
    device: Device = "auto",
    out_dir: str | Path | None = None,
    data_dir: str | None = None,
    jobs: int = 1,
    in_process: bool = False,
) -> list[str]:
    """Execute ``notebooks/federatedtrust/experiment.ipynb`` per experiment, then the summary
    (``jobs`` experiments at once, or ``in_process``: see :func:`run_jobs`)."""
    from fltrust.repro.trust.experiments import EXPERIMENTS, experiment_config

    if mode is not None and mode not in TRUST_MODES:
        raise ValueError(f"--mode {mode!r} is not a trust mode; choose one of {list(TRUST_MODES)}")
    return _paper_batch(
        paper="federatedtrust",
        notebook_folder="federatedtrust",
        item_key="experiment",
        names=_select(list(EXPERIMENTS), experiments),
        item_parameters={"modes": [mode] if mode else list(TRUST_MODES), "device": device},
        quick=quick,
        out_dir=out_dir,
        data_dir=data_dir,
        expected_run_ids=lambda name: [experiment_config(name, quick=quick, device=device, data_dir=data_dir).run_id()],
        parallel=jobs,
        in_process=in_process,
    )
