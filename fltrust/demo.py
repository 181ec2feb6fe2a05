"""The README's main job: a quick run of every dataset family, then both papers end to end, in minutes.

Phases (:data:`PHASES`), each timed:

1. ``families``: one short run per dataset family (:data:`FAMILIES`), each with another strategy;
2. ``fairness``: Federated Fairness Analytics at quick scale, one FedAvg condition per dataset
   column of Table 3 (:data:`DEMO_FAIRNESS_CONDITIONS`), then the summary (RESULTS.md, figures);
3. ``trust``: FederatedTrust experiments 1-5 at quick scale, each scored in every mode, then the summary;
4. ``report``: the HTML page of each paper, written into the demo's own folder.

The paper parts execute the same notebooks as ``fltrust repro <paper> --quick``, in this process
(``in_process=True`` of :mod:`fltrust.repro.batch`: no kernel start-up and no re-import of torch,
SHAP and ART per notebook). The demo ends with one screen (:func:`end_screen`): per paper a small
table of its headline numbers next to the paper's, and the paths of the HTML reports.

Each family and condition runs on whatever the data root holds; a dataset whose real files are
missing falls back to its synthetic stand-in and says so (the records, results and tables are
labelled SYNTHETIC).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fltrust.config import load_config
from fltrust.names import Device

FAMILIES = ("nsl_kdd", "cifar10", "femnist", "n_baiot")
DEMO_FAIRNESS_CONDITIONS = "fedavg_*_niid"
"""The demo's quick fairness batch: FedAvg, non-iid, on every dataset column of Table 3 (4 of the 24
conditions; non-iid because quick FEMNIST iid pools every writer's rows into 20 clients)."""
DEMO_TRUST_EXPERIMENTS = "*"
"""The demo's quick trust batch: experiments 1-5."""
PHASES = ("families", "fairness", "trust", "report")
"""The demo's phases, in order (``papers=False`` runs the first only)."""
PAPER_FOLDERS = {"fairness": "fairness", "trust": "trust"}
"""Sub-folder of the demo's ``--out`` per paper: its batch folder (results, runs, figures, RESULTS.md,
report.html)."""


def demo_config_path(family: str) -> Path:
    """Path of the packaged demo config of one dataset family."""
    return Path(str(resources.files("fltrust") / "configs" / "demo" / f"{family}.yaml"))


@contextlib.contextmanager
def _phase(name: str, timings: dict[str, float]) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = time.perf_counter() - start


def run_demo(out_dir: Path, data_dir: str | None = None, device: Device = "auto", papers: bool = True) -> int:
    """Run the demo; returns a process exit code (non-zero if any part failed).

    Parameters
    ----------
    out_dir : Path
        Folder of everything the demo writes: the family runs, ``fairness/`` and ``trust/``.
    data_dir : str or None
        Data root (``None`` = ``$FLTRUST_DATA``).
    device : str
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    papers : bool
        Run the paper phases (``False``: the dataset families only).

    Returns
    -------
    int
        0 when every phase succeeded, else 1.
    """
    out_dir = Path(out_dir)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    with _phase("families", timings):
        failures, synthetic = _run_families(out_dir, data_dir, device)
    reports: list[Path] = []
    if papers:
        for paper in PAPER_FOLDERS:
            with _phase(paper, timings):
                failures += _run_paper(paper, out_dir, device, data_dir)
        with _phase("report", timings):
            reports = _write_reports(out_dir)
    print()
    if papers:
        print(end_screen(out_dir, timings, reports, total_s=time.perf_counter() - start))
    if synthetic:
        print("SYNTHETIC stand-ins were used for: " + ", ".join(synthetic) + ". Their numbers say nothing about "
              "the papers. To use the real data:")
        for family in synthetic:
            print(f"  python -m fltrust data fetch {family}")
    else:
        print("every dataset family ran on its real data")
    if failures:
        print(f"failed: {failures}")
        return 1
    print("demo complete")
    return 0


def _run_families(out_dir: Path, data_dir: str | None, device: Device) -> tuple[list[str], list[str]]:
    """One short run per dataset family; returns (failed families, families on synthetic data)."""
    from fltrust.experiment import run_experiment

    failures, synthetic = [], []
    for family in FAMILIES:
        overrides = {"data.root": data_dir} if data_dir else {}
        cfg = load_config(demo_config_path(family), overrides)
        start = time.perf_counter()
        print(f"\n== {family} ==")
        try:
            record = run_experiment(cfg, out_dir=out_dir, device=device)
        except Exception as exc:  # noqa: BLE001 - keep going: report every family
            print(f"  FAILED: {type(exc).__name__}: {exc}")
            failures.append(family)
            continue
        if record.summary.get("synthetic"):
            synthetic.append(family)
            print(f"  NOTE: real {family} files not found under the data root; used the SYNTHETIC stand-in")
        print(record.describe())
        print(f"  took {time.perf_counter() - start:.1f} s")
    return failures, synthetic


def _run_paper(paper: str, out_dir: Path, device: Device, data_dir: str | None) -> list[str]:
    """The quick batch of one paper (``"fairness"`` or ``"trust"``) in its demo folder; returns the failures."""
    from fltrust.repro.batch import run_fairness_batch, run_trust_batch

    common: dict[str, Any] = dict(quick=True, device=device, out_dir=out_dir / PAPER_FOLDERS[paper], data_dir=data_dir,
                                  in_process=True)
    if paper == "fairness":
        print("\n== Federated Fairness Analytics: quick reproduction (FedAvg, non-iid, every dataset; "
              "`fltrust repro fairness --quick` runs all 24 conditions) ==")
        return run_fairness_batch(conditions=DEMO_FAIRNESS_CONDITIONS, **common)
    print("\n== FederatedTrust: quick reproduction (experiments 1-5, every scoring mode) ==")
    return run_trust_batch(experiments=DEMO_TRUST_EXPERIMENTS, **common)


def _write_reports(out_dir: Path) -> list[Path]:
    """``report.html`` of each paper in its demo folder (never ``papers_repro/``)."""
    from fltrust.repro.html_report import write_report

    print("\n== HTML reports ==")
    paths = []
    for paper, folder in PAPER_FOLDERS.items():
        path = write_report(paper, quick=True, batch_dir=out_dir / folder)
        print(f"wrote {path}")
        paths.append(path)
    return paths


# -- the end screen ----------------------------------------------------------------------------


def _cell(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{float(value):.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], what: str, indent: str = "  ") -> list[str]:
    """Plain-text table, columns left-aligned to their widest cell; ``no <what> result`` without rows."""
    if not rows:
        return [f"{indent}no {what} result"]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return [indent + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows]]


def fairness_headline(results_dir: str | Path) -> list[str]:
    """The fairness part of :func:`end_screen`: F_T per condition run, paper vs ours.

    Parameters
    ----------
    results_dir : str or Path
        ``results/`` of a fairness batch (condition result files).

    Returns
    -------
    list of str
        Lines: a title and a table (condition, the paper's F_T, ours, Δ, data); ``–`` = undefined
        (a notion had no value in the window) or not stated.
    """
    from fltrust.repro.fairness.report import load_results, summary_table

    results = load_results(results_dir)
    table = summary_table(results)
    rows = [(r.condition, _cell(r.paper_F_T, 2), _cell(r.ours_F_T), _cell(r.delta), _data_label(r.synthetic))
            for r in table.itertuples()]
    title = "Federated Fairness Analytics: general fairness F_T (Table 3)" + _scale(results)
    return [title, *_table(("condition", "reported", "ours", "Δ", "data"), rows, "condition")]


def trust_headline(results_dir: str | Path) -> list[str]:
    """The trust part of :func:`end_screen`: the trust score per experiment and scoring mode, and the paper's.

    Parameters
    ----------
    results_dir : str or Path
        ``results/`` of a trust batch (experiment result files).

    Returns
    -------
    list of str
        Lines: a title and a table (experiment, dataset, the paper's trust score, ours per scoring
        mode, data); ``–`` = not stated by the paper.
    """
    from fltrust.names import TRUST_MODES
    from fltrust.repro.trust.report import comparison_frame, load_results

    results = load_results(results_dir)
    scores = comparison_frame(results)
    scores = scores[scores["item"] == "trust_score"]
    paper = dict(zip(scores["experiment"], scores["paper"]))
    modes = [m for m in TRUST_MODES if any(m in r["modes"] for r in results)]
    rows = []
    for res in results:
        ours = [_cell((res["modes"].get(m) or {}).get("trust_score"), 2) for m in modes]
        rows.append((res["experiment"], res["paper_dataset"], _cell(paper.get(res["experiment"]), 2), *ours,
                     _data_label(res["synthetic"])))
    title = "FederatedTrust: trust score per experiment and scoring mode (Figures 4-5)" + _scale(results)
    return [title, *_table(("exp", "dataset", "reported", *modes, "data"), rows, "experiment")]


def _data_label(synthetic: bool) -> str:
    return "SYNTHETIC" if synthetic else "real"


def _scale(results: Sequence[dict[str, Any]]) -> str:
    return ", QUICK" if any(r.get("quick") for r in results) else ""


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{seconds:.1f} s"


def end_screen(out_dir: Path, timings: dict[str, float], reports: Sequence[Path], *, total_s: float) -> str:
    """The demo's last screen: headline tables of both papers, the phase times and the HTML reports.

    Parameters
    ----------
    out_dir : Path
        The demo's folder (``fairness/results`` and ``trust/results`` are read).
    timings : dict of str to float
        Seconds per phase (:data:`PHASES`).
    reports : sequence of Path
        The HTML reports written.
    total_s : float
        Wall time of the whole demo.

    Returns
    -------
    str
        The screen, a few dozen lines.
    """
    rule = "=" * 78
    lines = [rule, f"fltrust demo: both papers end to end in {_duration(total_s)} ("
             + ", ".join(f"{name} {_duration(timings[name])}" for name in PHASES if name in timings) + ")", ""]
    lines += fairness_headline(Path(out_dir) / PAPER_FOLDERS["fairness"] / "results") + [""]
    lines += trust_headline(Path(out_dir) / PAPER_FOLDERS["trust"] / "results") + [""]
    lines += ["reported = the paper's number; – = undefined or not stated.",
              "QUICK = smoke-test scale (a few rounds, small samples), not comparable with the papers;",
              "        `fltrust repro fairness` and `fltrust repro trust` run them at full scale.",
              "SYNTHETIC = a generated stand-in for missing data: its numbers say nothing about the papers."]
    lines += ["HTML reports (open in a browser):"] + [f"  {path}" for path in reports] + [rule]
    return "\n".join(lines)
