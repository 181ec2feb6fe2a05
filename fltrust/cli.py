"""Command line: ``fltrust run | demo | data info | data fetch | repro fairness | repro trust | repro verify | report``.

Examples
--------
::

    fltrust run papers_repro/fairness_analytics/configs/fedavg_nslkdd_iid.yaml --set training.rounds=3
    fltrust data info
    fltrust demo

Errors and exit codes
---------------------
Every user-facing failure is one line on stderr (``fltrust: error: ...``) naming the file or field
and the fix; ``-v`` adds the traceback. The mapping lives in one place, :func:`describe_error`.

====  =====================================================================================
code  meaning
====  =====================================================================================
0     success
1     a run diverged (non-finite loss or model; the record says where), or a batch (``repro``,
      ``demo``) finished but some conditions failed (listed above it), or ``repro verify`` found
      the rerun different from the committed result
2     usage, configuration or data error: fix the command, the YAML/--set value or the data
      file named in the message (argparse's own usage errors also exit 2)
3     filesystem error: permission denied, read-only or full disk, ``--out`` under a regular file
4     run-folder error: the run folder is in use by another process, or a file in it is corrupt
70    internal error (a bug): ``internal error: <type>: <message>``; rerun with ``-v``
130   interrupted (Ctrl-C); rerunning the same command resumes after the last finished round
141   the reader of the output went away (``fltrust data info | head -1``): the command stops
      quietly, without a message, as Unix tools killed by SIGPIPE do (128 + 13)
====  =====================================================================================

An exception with an integer attribute ``exit_code`` is reported with its message and that code.
``--strict`` (run, demo, repro, data info) sets ``FLTRUST_STRICT=1``: a data file whose SHA-256
differs from the known one is then an error instead of a warning (:mod:`fltrust.data.registry`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import select
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path

from fltrust.config import ConfigError, load_config, parse_overrides
from fltrust.names import FAIRNESS_MODES, REAL_DATASETS, REFERENCE_DATA, TRUST_MODES


class UsageError(Exception):
    """A bad command-line argument; the message names the option and the fix (exit 2)."""

    exit_code = 2


def _import_components(modules: list[str]) -> None:
    """Import the modules of ``--import`` (they register their strategies or privacy mechanisms)."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UsageError(f"--import {name}: cannot import it ({exc}); name a module on the Python path "
                             "(the current folder, or PYTHONPATH)") from None


def _cmd_run(args: argparse.Namespace) -> int:
    from fltrust.experiment import check_experiment, run_experiment

    _import_components(args.imports or [])
    overrides = parse_overrides(args.set or [])
    if args.data_dir:
        overrides["data.root"] = args.data_dir
    try:
        cfg = load_config(args.config, overrides)
        check_experiment(cfg)
    except ConfigError as exc:
        if str(args.config) in str(exc):  # the message names the file already
            raise
        raise ConfigError(f"{args.config}: {exc}") from exc
    record = run_experiment(cfg, out_dir=args.out, device=args.device, force=args.force)
    print(record.describe())
    return 1 if record.status == "diverged" else 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from fltrust.demo import run_demo

    return run_demo(out_dir=Path(args.out), data_dir=args.data_dir, device=args.device)


def _cmd_data_info(args: argparse.Namespace) -> int:
    from fltrust.data import data_root
    from fltrust.data.info import dataset_info
    from fltrust.data.registry import describe_mismatches

    root = data_root(args.data_dir)
    rows = dataset_info(root)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(f"data root: {root}")
        for row in rows:
            print(json.dumps(row, indent=2, default=str))
    bad = [describe_mismatches(r["name"], Path(r["folder"]), r["checksum_mismatch"])
           for r in rows if r.get("checksum_mismatch")]
    for line in bad:
        print(f"fltrust: {'error' if args.strict else 'warning'}: {line}", file=sys.stderr)
    return EXIT_USAGE if bad and args.strict else 0


def _cmd_data_fetch(args: argparse.Namespace) -> int:
    from fltrust.data import data_root, fetch_dataset

    path = fetch_dataset(args.name, data_root(args.data_dir))
    print(f"{args.name}: ready in {path}")
    return 0


def _cmd_repro(args: argparse.Namespace) -> int:
    from fltrust.repro.batch import run_fairness_batch, run_trust_batch

    common = dict(quick=args.quick, device=args.device, out_dir=args.out, data_dir=args.data_dir, jobs=args.jobs)
    if args.paper == "fairness":
        failures = run_fairness_batch(conditions=args.conditions, repeats=args.repeats, mode=args.mode, **common)
    else:
        failures = run_trust_batch(experiments=args.conditions, mode=args.mode, **common)
    from fltrust.repro.html_report import write_report

    print(f"report: {write_report(args.paper, quick=args.quick, batch_dir=args.out)}")
    return 1 if failures else 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from fltrust.repro.verify import verify

    outcome = verify(args.target, repeat=args.repeat, rounds=args.rounds, out_dir=args.out, device=args.device)
    for line in outcome.lines():
        print(line)
    if args.record:
        from fltrust.repro.verify import record_verification

        print(f"recorded in {record_verification(outcome)}")
    return 0 if outcome.identical else 1


def _cmd_report(args: argparse.Namespace) -> int:
    from fltrust.repro.html_report import write_reports

    if args.batch_dir is not None:
        batch = Path(args.batch_dir)
        if not batch.is_dir():
            raise UsageError(f"--from {args.batch_dir}: no such folder; pass the --out folder of a `fltrust repro` batch")
        if not (batch / "results").is_dir():
            raise UsageError(f"--from {args.batch_dir}: not a batch folder (it has no results/ folder); pass the "
                             "--out folder of a `fltrust repro` batch")

    for path in write_reports(args.paper, args.out, quick=args.quick, batch_dir=args.batch_dir,
                              compact_figures=not args.original_figures):
        print(f"wrote {path}")
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from fltrust.runs import RunFolder, audit_run

    run = Path(args.run)
    if not run.is_dir():
        what = "is a file" if run.exists() else "does not exist"
        raise UsageError(f"audit {args.run}: {what}; pass a run folder (<out>/<run id>, made by `fltrust run`)")
    folder = RunFolder(run)
    missing = [p.name for p in (folder.config, folder.rounds) if not p.is_file()]
    if missing:
        raise UsageError(f"audit {args.run}: not a run folder (it has no {' and no '.join(missing)}); pass "
                         "<out>/<run id>, a folder made by `fltrust run`")

    result = audit_run(args.run)
    for line in result.lines:
        print(f"{args.run}: {line}")
    print(f"{args.run}: {'OK' if result.ok else 'FAILED'}")
    return 0 if result.ok else 1


def _at_least_one(text: str) -> int:
    """argparse type: an integer >= 1 (``--jobs``, ``--repeats``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _resolve_data_dir(path: str) -> str:
    """``--data-dir`` as an absolute path; a symbolic link loop is a usage error."""
    try:
        return str(Path(path).resolve())
    except (RuntimeError, OSError) as exc:  # Python 3.11: RuntimeError("Symlink loop from ...")
        why = "a symbolic link loop" if "loop" in str(exc).lower() else str(exc)
        raise UsageError(f"--data-dir {path}: cannot resolve the path ({why}); point it at the data folder") from None


def build_parser() -> argparse.ArgumentParser:
    """Build the ``fltrust`` argument parser with every subcommand and option.

    Returns
    -------
    argparse.ArgumentParser
        The parser (``fltrust --help``; the documentation's command-line page is rendered from it).
    """
    # --data-dir and -v are accepted before or after the sub-command
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=argparse.SUPPRESS, help="data root (default: $FLTRUST_DATA, else ./data)")
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log progress details")
    parser = argparse.ArgumentParser(prog="fltrust", description=__doc__.split("\n")[0], parents=[common],
                                     epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", parents=[common], help="run one configured FL experiment")
    run.add_argument("config", help="experiment YAML")
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="override, e.g. training.rounds=3")
    run.add_argument("--out", default=None, help="folder for run folders (default: run.out_dir)")
    run.add_argument("--device", choices=["cpu", "cuda", "auto"], default=None,
                     help="overrides run.device (default auto: CUDA when available, else CPU)")
    run.add_argument("--force", action="store_true", help="rerun even if a complete record exists")
    run.add_argument("--import", dest="imports", action="append", metavar="MODULE",
                     help="import MODULE first, e.g. one that registers a strategy the config names "
                          "(docs/extending.md); repeatable")
    run.add_argument("--strict", action="store_true", help=STRICT_HELP)
    run.set_defaults(func=_cmd_run)

    demo = sub.add_parser("demo", parents=[common],
                          help="quick run of every dataset family (synthetic stand-ins when data is missing)")
    demo.add_argument("--out", default="runs/demo")
    demo.add_argument("--device", choices=["cpu", "cuda", "auto"], default="auto",
                      help="auto (default): CUDA when available, else CPU")
    demo.add_argument("--strict", action="store_true", help=STRICT_HELP)
    demo.set_defaults(func=_cmd_demo)

    data = sub.add_parser("data", parents=[common], help="dataset information and download")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    info = data_sub.add_parser("info", parents=[common], help="where each dataset was found, files, sizes, checksums, samples")
    info.add_argument("--json", action="store_true")
    info.add_argument("--strict", action="store_true", help="exit 2 when a file's SHA-256 differs from the known one")
    info.set_defaults(func=_cmd_data_info)
    fetch = data_sub.add_parser("fetch", parents=[common],
                                help="download a dataset (or a published file set, e.g. ffa-results) from its public source")
    fetch.add_argument("name", choices=REAL_DATASETS + REFERENCE_DATA)
    fetch.set_defaults(func=_cmd_data_fetch)

    repro = sub.add_parser("repro", parents=[common],
                           help="reproduce a paper (batch of papermill notebooks), or verify a committed result")
    repro_sub = repro.add_subparsers(dest="paper", required=True)
    for paper in ("fairness", "trust"):
        batch = repro_sub.add_parser(paper, parents=[common], help=f"the {paper} paper's batch")
        batch.add_argument("--quick", action="store_true", help="small CPU-sized version")
        batch.add_argument("--conditions", default="*", help="glob over condition/experiment names")
        batch.add_argument("--repeats", type=_at_least_one, default=None, help="repeats per condition (fairness)")
        batch.add_argument("--mode", default=None,
                           help=f"fairness: {'|'.join(FAIRNESS_MODES)}; trust: {'|'.join(TRUST_MODES)}")
        batch.add_argument("--device", choices=["cpu", "cuda", "auto"], default="auto",
                           help="auto (default): CUDA when available, else CPU")
        batch.add_argument("--out", default=None, help="folder for run folders and executed notebooks")
        batch.add_argument("--jobs", type=_at_least_one, default=1, metavar="N",
                           help="run N conditions at once (parallel kernels; the cores are shared out, "
                                "several runs may share one GPU)")
        batch.add_argument("--strict", action="store_true", help=STRICT_HELP)
        batch.set_defaults(func=_cmd_repro)
    check = repro_sub.add_parser(
        "verify", parents=[common],
        help="rerun one repeat of a committed result and compare it round by round (exit 0 only when identical)")
    check.add_argument("target", metavar="CONDITION|EXPERIMENT",
                       help="a fairness condition (e.g. fedavg_nslkdd_100c_iid) or a trust experiment (exp1..exp5)")
    check.add_argument("--repeat", type=int, default=0, help="the repeat to rerun (default 0)")
    check.add_argument("--rounds", type=_at_least_one, default=None, metavar="N",
                       help="rerun and compare the first N rounds only")
    check.add_argument("--out", default=None, help="scratch folder of the rerun (default runs/verify/<name>-r<repeat>)")
    check.add_argument("--device", choices=["cpu", "cuda", "auto"], default=None,
                       help="default: the committed run's device type when recorded, else cpu")
    check.add_argument("--record", action="store_true",
                       help="keep the outcome in the paper folder's verified.json, which RESULTS.md lists")
    check.add_argument("--strict", action="store_true", help=STRICT_HELP)
    check.set_defaults(func=_cmd_verify)

    report = sub.add_parser("report", parents=[common],
                            help="one self-contained HTML page per paper (tables, figures, deviations; works offline)")
    report.add_argument("paper", nargs="?", choices=["fairness", "trust", "all"], default="all")
    report.add_argument("--quick", action="store_true", help="report on the quick batch (runs/repro/<paper>-quick/)")
    report.add_argument("--from", dest="batch_dir", default=None, metavar="DIR",
                        help="report on a batch folder (the --out of `fltrust repro`)")
    report.add_argument("--out", default=None,
                        help="HTML file (default: papers_repro/<paper>/report.html); with 'all', a folder")
    report.add_argument("--original-figures", action="store_true",
                        help="embed the PNG files as they are (default: 256-colour re-encoding when smaller)")
    report.set_defaults(func=_cmd_report)

    audit = sub.add_parser("audit", parents=[common],
                           help="verify a run folder's per-round model hash chain and its final model")
    audit.add_argument("run", help="a run folder (<out>/<run id>)")
    audit.set_defaults(func=_cmd_audit)
    return parser


EXIT_OK, EXIT_FAILURES, EXIT_USAGE, EXIT_FILESYSTEM, EXIT_RUN_FOLDER, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 70, 130
EXIT_BROKEN_PIPE = 141
EXIT_CODES_HELP = (
    "exit codes: 0 success, 1 some batch conditions failed (repro verify: the rerun differs), 2 usage/config/data error, "
    "3 filesystem error (permission, full disk, --out under a file), 4 run folder in use or corrupt, "
    "70 internal error, 130 interrupted (rerun the same command to resume), 141 output pipe closed "
    "(e.g. by head); -v shows tracebacks"
)
STRICT_HELP = "a data file whose SHA-256 differs from the known one is an error, not a warning (sets FLTRUST_STRICT=1)"


def _from_fltrust(exc: BaseException) -> bool:
    """True when ``exc``'s class is defined in fltrust or fltrust code raised it (a deliberate message)."""
    if type(exc).__module__.split(".")[0] == "fltrust":
        return True
    last = traceback.extract_tb(exc.__traceback__, limit=-1)  # the frame that raised it
    return bool(last) and last[0].filename.startswith(str(Path(__file__).resolve().parent) + os.sep)


def _non_directory_parent(path: str | None) -> str | None:
    """The first existing ancestor (or the path itself) of ``path`` that is not a directory."""
    if not path:
        return None
    for candidate in [Path(path), *Path(path).parents]:
        if candidate.exists() or candidate.is_symlink():
            return None if candidate.is_dir() else str(candidate)
    return None


def describe_error(exc: BaseException, args: argparse.Namespace | None = None) -> tuple[int, str]:
    """Exit code and the one-line message of a failure: THE place that maps errors to messages."""
    from fltrust.config import ConfigError
    from fltrust.data.base import DatasetError
    from fltrust.runs import RunFolderError

    out = getattr(args, "out", None)
    if isinstance(exc, KeyboardInterrupt):
        round_ = getattr(exc, "round", None)  # an interrupt that knows its last finished round says so
        after = f" after round {round_}" if isinstance(round_, int) else ""
        detail = f" ({exc.args[0]})" if exc.args and isinstance(exc.args[0], str) else ""  # e.g. a batch's jobs
        return EXIT_INTERRUPTED, f"interrupted{after}{detail}; rerun the same command to resume"
    code = getattr(exc, "exit_code", None)
    if isinstance(code, int) and not isinstance(code, bool) and not isinstance(exc, SystemExit):
        return code, f"error: {exc}"
    if isinstance(exc, ConfigError):
        return EXIT_USAGE, f"config error: {exc}"
    if isinstance(exc, DatasetError):
        return EXIT_USAGE, f"data error: {exc}"
    if isinstance(exc, RunFolderError):
        return EXIT_RUN_FOLDER, f"error: {exc}"
    if isinstance(exc, BrokenPipeError) and _stdout_closed():
        return EXIT_BROKEN_PIPE, ""
    if isinstance(exc, OSError):
        name = exc.filename or out
        where = f" {name}" if name else ""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return EXIT_FILESYSTEM, (f"error: no space left on device while writing{where}; "
                                     "free some space or pass --out a folder on another disk")
        if isinstance(exc, PermissionError) and _is_input(exc.filename, out):
            return EXIT_FILESYSTEM, (f"error: cannot read {exc.filename}: permission denied; make it readable "
                                     "(chmod u+r) or pass another file")
        if isinstance(exc, PermissionError) or exc.errno == errno.EROFS:
            why = "read-only file system" if exc.errno == errno.EROFS else "permission denied"
            return EXIT_FILESYSTEM, (f"error: cannot write{where}: {why}; pass --out a writable folder "
                                     "or fix the folder's permissions")
        if isinstance(exc, (NotADirectoryError, FileExistsError)) or exc.errno in (errno.ENOTDIR, errno.EEXIST):
            blocker = _non_directory_parent(exc.filename) or _non_directory_parent(out) or name
            return EXIT_FILESYSTEM, (f"error: cannot create the folder{where}: {blocker} is a regular file, "
                                     "not a folder; pass --out a folder path")
        if isinstance(exc, FileNotFoundError):
            if _on_out_path(exc.filename, out):  # making --out or a folder in it: /proc, a vanished mount
                return EXIT_FILESYSTEM, (f"error: cannot create {exc.filename}: no such file or folder (its parent does "
                                         "not take new folders, e.g. under /proc, or was removed); pass --out a folder "
                                         "on a writable disk")
            if exc.filename is None and _from_fltrust(exc):  # a deliberate message, e.g. "<run>/config.yaml is missing"
                return EXIT_USAGE, f"error: {exc}"
            return EXIT_USAGE, f"error:{where}: no such file or folder" + (f" ({exc})" if _from_fltrust(exc) else "")
        return EXIT_FILESYSTEM, f"error:{where}: {exc.strerror or exc}"
    if isinstance(exc, (ValueError, RuntimeError, KeyError, LookupError)) and _from_fltrust(exc):
        return EXIT_USAGE, f"error: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}"
    return EXIT_INTERNAL, f"internal error: {type(exc).__name__}: {exc} (run with -v for the traceback)"


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader went away (``poll`` reports an error on it),
    so that a broken pipe elsewhere (a socket, a child process) is still reported."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
    except (AttributeError, ValueError, OSError):  # no poll (Windows), or stdout is not a file (tests)
        return False
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _on_out_path(filename: str | None, out: str | None) -> bool:
    """Whether ``filename`` is ``out``, one of its parents or inside it (a folder or file being made)."""
    if not filename or not out:
        return False
    try:
        name, where = Path(os.path.abspath(filename)), Path(os.path.abspath(out))
    except (TypeError, ValueError):
        return False
    return name == where or name in where.parents or where in name.parents


def _is_input(filename: str | None, out: str | None) -> bool:
    """Whether a permission error on ``filename`` was a read of an existing input file.

    A write fails on a file or folder about to be made (atomic writes create a new temporary
    file) or inside ``--out``; an existing regular file elsewhere was being read.
    """
    if not filename or not os.path.isfile(filename):
        return False
    if out is None:
        return True
    try:
        Path(filename).resolve().relative_to(Path(out).resolve())
    except (ValueError, OSError, RuntimeError):
        return True
    return False


def _one_line_warnings(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the CLI: ``fltrust: warning: <message>`` on one line."""
    print(f"fltrust: warning: {message}", file=sys.stderr if file is None else file)


INTERRUPT_GRACE_S = 10.0
"""How long an interrupted command waits for library threads to end before it exits anyway."""


def leave_lingering_threads(code: int, *, grace_s: float = INTERRUPT_GRACE_S) -> None:
    """After an interrupt, exit with ``code`` even if a library's worker thread does not end.

    Python waits for every non-daemon thread before it exits. After a Ctrl-C, Flower's ServerApp
    thread can still be waiting for a reply from the runtime that was just stopped
    (:func:`fltrust.engines.flower.simulation.stop_with` makes its reply polls give up, but not every wait
    is a poll), and the command would hang after printing its one line until a second Ctrl-C.
    So the command waits up to ``grace_s`` seconds for such threads, then ends the process with
    ``os._exit``. By then every result file has been written: writes are atomic and the run was
    checkpointed after its last finished round. Only the command-line entry points call this (a
    ``main(argv)`` called in-process returns as usual).

    Parameters
    ----------
    code : int
        The exit status (only :data:`EXIT_INTERRUPTED` leads to the wait).
    grace_s : float
        Seconds to wait for the other non-daemon threads.
    """
    if code != EXIT_INTERRUPTED:
        return
    deadline = time.monotonic() + grace_s
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in others):
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run the command line: parse ``argv``, run the subcommand, turn errors into one line and an exit code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code (0 ok, 1 diverged or failed conditions, 2 usage, configuration or data
        error, 3 filesystem, 4 run folder in use or corrupt, 70 internal error, 130 interrupted).
    """
    code = _main(argv)
    if argv is None:  # the command line (`fltrust ...`, `python -m fltrust ...`), not an in-process call
        leave_lingering_threads(code)
    return code


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.data_dir = getattr(args, "data_dir", None)
    args.verbose = getattr(args, "verbose", False)
    args.strict = getattr(args, "strict", False)
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)  # a run raises the fltrust logger to INFO for its log file only
    previous_strict, previous_data = os.environ.get("FLTRUST_STRICT"), os.environ.get("FLTRUST_DATA")
    if args.strict:
        os.environ["FLTRUST_STRICT"] = "1"  # read by fltrust.data.registry, inherited by notebook kernels
    previous_showwarning = warnings.showwarning
    if not args.verbose:
        warnings.showwarning = _one_line_warnings
    try:
        if args.data_dir:
            os.environ["FLTRUST_DATA"] = _resolve_data_dir(args.data_dir)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a block-buffered pipe's EPIPE surfaces here, not at interpreter exit (exit 120)
        return code
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every failure becomes one line
        code, message = describe_error(exc, args)
        if code == EXIT_BROKEN_PIPE:  # nobody reads stdout any more: no message, and no second EPIPE at exit
            with contextlib.suppress(AttributeError, ValueError, OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return code
        if args.verbose:
            traceback.print_exc()
        print(f"fltrust: {message}", file=sys.stderr)
        return code
    finally:
        warnings.showwarning = previous_showwarning
        for name, previous in (("FLTRUST_STRICT", previous_strict), ("FLTRUST_DATA", previous_data)):
            if previous is None:  # --strict and --data-dir do not leak out of main (tests call it in-process)
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
