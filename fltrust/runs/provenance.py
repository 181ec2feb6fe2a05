"""Provenance: which code, libraries, BLAS, threads and machine produced a run or a result.

:func:`provenance` is the one record of it. Every run's ``summary.json`` holds one (written by
:func:`fltrust.experiment.run_experiment`) and every paper result JSON holds its runs' records and
the writer's (:mod:`fltrust.repro.fairness.run`, :mod:`fltrust.repro.trust.run`). The record is
plain data:

===============  ==============================================================================
key              content
===============  ==============================================================================
``schema``       :data:`SCHEMA` (the layout's version)
``fltrust``      the package version
``code``         ``source`` (``"git"``: a checkout, ``"installed"``: no checkout, e.g. a wheel),
                 ``commit`` (HEAD, or None), ``dirty`` (the code differs from HEAD: a file under
                 ``fltrust/`` is changed or untracked, or a file of :data:`DEPENDENCY_FILES` is
                 changed; None without a checkout), ``dirty_files`` (the first
                 :data:`MAX_DIRTY_FILES` of them)
``libraries``    version of every distribution in :data:`LIBRARIES` (None when not installed)
``blas``         ``numpy``: numpy's BLAS library and kernels (:func:`fltrust.blas.numpy_blas`),
                 ``numpy_version``, ``torch``: torch's BLAS (``"mkl <version>"`` or ``"none"``),
                 ``torch_cpu_capability``: the vector unit torch's kernels use (``AVX2``, ``AVX512``)
``threads``      ``torch`` and ``torch_interop`` (torch's thread pools), ``blas`` (numpy's BLAS)
``device``       the run's device (``cpu``; ``cuda:0 (<GPU name>)``), and ``cuda`` / ``cudnn`` versions
``platform``     Python version, ``platform.platform()``, machine, CPU model, CPU count
``environment``  the variables of :data:`ENVIRONMENT` that are set (they choose kernels and threads)
===============  ==============================================================================

The record never enters a configuration's hash or a run id (those name *what* is run; this says
*where and with what*), so committed results keep their ids. Reading it never fails: without git or
a checkout the code is ``{"source": "installed", "commit": None, "dirty": None}``, and a result or
run written before provenance existed simply has none (:func:`describe` says ``not recorded``).

:data:`TRAINING_PATHS` is the one definition of the files whose change can change a run's numbers,
and :func:`changed_since` lists those that differ between a recorded commit and HEAD
(``git diff --name-only <commit> HEAD``); :func:`differences` names what differs between two
records (commit, BLAS kernels, threads, library versions, device).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DEPENDENCY_FILES",
    "ENVIRONMENT",
    "LIBRARIES",
    "MAX_DIRTY_FILES",
    "NOT_RECORDED",
    "SCHEMA",
    "SOURCE_GIT",
    "SOURCE_INSTALLED",
    "TRAINING_PATHS",
    "changed_since",
    "code_state",
    "commits_since",
    "describe",
    "differences",
    "git_head",
    "provenance",
    "short_commit",
]

SCHEMA = 1
"""Version of the record's layout."""

SOURCE_GIT, SOURCE_INSTALLED = "git", "installed"
"""``code.source``: a git checkout, or no checkout (an installed package)."""

NOT_RECORDED = "not recorded"
"""What a report says for a run or result written before provenance existed."""

LIBRARIES = (
    "torch", "numpy", "scipy", "pandas", "scikit-learn", "threadpoolctl", "flwr", "opacus",
    "adversarial-robustness-toolbox", "shap", "fairlearn", "codecarbon",
)
"""Distributions whose versions are recorded: the numerical stack, the engines' and the metrics' libraries."""

ENVIRONMENT = (
    "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR", "ATEN_CPU_CAPABILITY", "CUBLAS_WORKSPACE_CONFIG", "CUDA_VISIBLE_DEVICES", "FLTRUST_CUDA_GRAPH",
)
"""Environment variables recorded when set: they pick BLAS kernels, thread counts and GPU code paths."""

MAX_DIRTY_FILES = 20
"""At most this many changed files are named in ``code.dirty_files``."""

DEPENDENCY_FILES = ("requirements.txt", "constraints.txt", "pyproject.toml")
"""Files of the checkout, besides the package, whose change makes the code *dirty*. The rest of the
tree (results, RESULTS.md, figures, notebooks, documents) is not code: a batch rewrites its own result
files while it runs, and that must not mark its later runs dirty. A changed configuration changes the
run id instead."""

TRAINING_PATHS = (
    "fltrust",
    ":(exclude)fltrust/repro",
    ":(exclude)fltrust/viz",
    ":(exclude)fltrust/runs",
    ":(exclude)fltrust/cli.py",
    ":(exclude)fltrust/__main__.py",
    ":(exclude)fltrust/demo.py",
    ":(exclude)fltrust/configs",
    ":(exclude)fltrust/data/info.py",
    ":(exclude)fltrust/data/fetch.py",
    ":(exclude)fltrust/partition/plots.py",
)
"""Git pathspecs of the code that trains a model or computes its metrics: every module of the
package (engines, strategies, models, data loaders, partitioners, federation, config, metrics,
trust scoring) except reporting (``repro``, ``viz``), run-folder writing (``runs``), the command line
and the data tools that only describe or download files. Written as exclusions so that a module
moved or added inside the package is covered without editing this list."""

_PACKAGE = Path(__file__).resolve().parents[1]
"""The ``fltrust`` package folder; its checkout (when there is one) is the code of this process."""


def _git(args: list[str], cwd: Path, *, timeout: float = 20.0) -> str | None:
    """``git <args>`` in ``cwd``: its stdout, or None when git is missing or the command fails."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _checkout(package: Path) -> Path | None:
    """The git work tree that tracks ``package`` (the fltrust package folder), or None.

    A package installed into a virtual environment that happens to sit inside some git checkout is
    not that checkout's code: the package's ``__init__.py`` must be tracked by it.
    """
    top = _git(["rev-parse", "--show-toplevel"], package)
    if top is None:
        return None
    root = Path(top.strip())
    try:
        relative = (package / "__init__.py").resolve().relative_to(root.resolve())
    except ValueError:
        return None
    if _git(["ls-files", "--error-unmatch", "--", str(relative)], root) is None:
        return None
    return root


def code_state(package: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The code of this process: the checkout's commit and whether its tree was dirty.

    Parameters
    ----------
    package : path-like, optional
        The package folder whose checkout is read (default: this ``fltrust``).

    Returns
    -------
    dict
        ``source`` (``"git"`` or ``"installed"``), ``commit`` (40 hex digits, or None), ``dirty``
        (bool, or None without a checkout) and ``dirty_files`` (files inside the package that differ
        from HEAD or are untracked, and changed :data:`DEPENDENCY_FILES`; at most
        :data:`MAX_DIRTY_FILES`). Without git, or when the package is not in a checkout (an
        installed wheel), ``{"source": "installed", "commit": None, "dirty": None, "dirty_files": []}``.

    Examples
    --------
    >>> code_state("/")["source"]
    'installed'
    """
    folder = Path(package) if package is not None else _PACKAGE
    installed: dict[str, Any] = {"source": SOURCE_INSTALLED, "commit": None, "dirty": None, "dirty_files": []}
    root = _checkout(folder)
    if root is None:
        return installed
    head = git_head(root)
    status = _git(["status", "--porcelain=v1", "--untracked-files=all", "-z"], root)
    if head is None or status is None:
        return installed
    try:
        inside = folder.resolve().relative_to(root.resolve()).as_posix() + "/"
    except ValueError:
        inside = ""
    changed = []
    entries = iter(status.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # a rename or copy is followed by its source path
            next(entries, None)
        if path.startswith(inside) or (code != "??" and path in DEPENDENCY_FILES):
            changed.append(path)  # the rest (results, RESULTS.md, scratch files) is not code
    changed = sorted(set(changed))
    return {"source": SOURCE_GIT, "commit": head, "dirty": bool(changed),
            "dirty_files": changed[:MAX_DIRTY_FILES]}


def git_head(root: str | os.PathLike[str] | None = None) -> str | None:
    """HEAD's commit of the checkout at ``root`` (default: the package's checkout); None without git."""
    folder = _root(root)
    head = None if folder is None else _git(["rev-parse", "--verify", "HEAD"], folder)
    return head.strip() if head else None


def _root(root: str | os.PathLike[str] | None) -> Path | None:
    """``root``, or (None) the package's checkout; None without one."""
    return Path(root) if root is not None else _checkout(_PACKAGE)


def _version(distribution: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def _libraries() -> dict[str, str | None]:
    return {name: _version(name) for name in LIBRARIES}


@functools.cache
def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


@functools.cache
def _torch_blas() -> str:
    """torch's BLAS: ``"mkl <version>"``, ``"mkl"``, or ``"none"`` (e.g. an OpenBLAS or Accelerate build: ``"other"``)."""
    import torch

    if torch.backends.mkl.is_available():
        match = re.search(r"Math Kernel Library Version ([\w.\-]+)", torch.__config__.parallel_info())
        return f"mkl {match.group(1)}" if match else "mkl"
    return "other"


def _blas_threads() -> int | None:
    from threadpoolctl import threadpool_info

    return next((lib.get("num_threads") for lib in threadpool_info() if lib.get("user_api") == "blas"), None)


def _device(device: Any) -> dict[str, Any]:
    import torch

    name = str(device) if device is not None else "cpu"
    out: dict[str, Any] = {"name": name}
    if name.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(name).index
        out["name"] = f"{name} ({torch.cuda.get_device_name(index if index is not None else 0)})"
        out["cuda"] = torch.version.cuda
        out["cudnn"] = torch.backends.cudnn.version()
    return out


def provenance(device: Any = None, *, package: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The provenance record of this process (see the module docstring for its keys).

    Parameters
    ----------
    device : str or torch.device, optional
        The device the run trains on (default ``cpu``); a CUDA device adds its name and the CUDA
        and cuDNN versions.
    package : path-like, optional
        The package folder whose checkout is the code (default: this ``fltrust``; tests point it
        at a temporary checkout).

    Returns
    -------
    dict
        Plain data (JSON-ready).

    Examples
    --------
    >>> record = provenance("cpu")
    >>> sorted(record) == sorted(["schema", "fltrust", "code", "libraries", "blas", "threads", "device",
    ...                           "platform", "environment"])
    True
    >>> record["code"]["source"] in ("git", "installed")
    True
    """
    import numpy
    import torch

    import fltrust
    from fltrust.blas import numpy_blas

    return {
        "schema": SCHEMA,
        "fltrust": _version("fltrust") or fltrust.__version__,
        "code": code_state(package),
        "libraries": dict(_libraries()),
        "blas": {"numpy": numpy_blas(), "numpy_version": numpy.__version__, "torch": _torch_blas(),
                 "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "threads": {"torch": torch.get_num_threads(), "torch_interop": torch.get_num_interop_threads(),
                    "blas": _blas_threads()},
        "device": _device(device),
        "platform": {"python": platform.python_version(), "system": platform.platform(),
                     "machine": platform.machine(), "cpu": _cpu_model(), "cpu_count": os.cpu_count()},
        "environment": {key: os.environ[key] for key in ENVIRONMENT if key in os.environ},
    }


def short_commit(record: Mapping[str, Any] | None) -> str:
    """A record's commit as 10 hex digits with ``+dirty`` when its tree was dirty; ``installed`` (no
    checkout) or :data:`NOT_RECORDED` (no record).

    Examples
    --------
    >>> short_commit({"code": {"source": "git", "commit": "0123456789abcdef", "dirty": True}})
    '0123456789+dirty'
    >>> short_commit(None), short_commit({"code": {"source": "installed", "commit": None}})
    ('not recorded', 'installed')
    """
    if not record:
        return NOT_RECORDED
    code = record.get("code") or {}
    commit = code.get("commit")
    if not commit:
        return SOURCE_INSTALLED
    return commit[:10] + ("+dirty" if code.get("dirty") else "")


def describe(record: Mapping[str, Any] | None) -> str:
    """One line: commit, BLAS, threads, torch and numpy versions, device; :data:`NOT_RECORDED` for None.

    Examples
    --------
    >>> describe(None)
    'not recorded'
    """
    if not record:
        return NOT_RECORDED
    blas, threads, libs = record.get("blas") or {}, record.get("threads") or {}, record.get("libraries") or {}
    return (f"commit {short_commit(record)}; numpy BLAS {blas.get('numpy')}, torch BLAS {blas.get('torch')} "
            f"({blas.get('torch_cpu_capability')}); threads torch {threads.get('torch')}, BLAS {threads.get('blas')}; "
            f"torch {libs.get('torch')}, numpy {libs.get('numpy')}; device {(record.get('device') or {}).get('name')}")


def differences(recorded: Mapping[str, Any] | None, current: Mapping[str, Any] | None) -> list[str]:
    """What differs between two provenance records, one phrase each, most likely cause of a
    numerical difference first: commit, BLAS kernels, threads, library versions, device, CPU,
    Python, environment.

    Parameters
    ----------
    recorded, current : dict or None
        :func:`provenance` records (e.g. a committed result's and a rerun's).

    Returns
    -------
    list of str
        Empty when nothing recorded differs; ``["not recorded: ..."]`` when either is None.

    Examples
    --------
    >>> a = {"code": {"commit": "aaaaaaaaaaaa"}, "blas": {"numpy": "openblas Haswell"}, "threads": {"torch": 1}}
    >>> b = {"code": {"commit": "aaaaaaaaaaaa"}, "blas": {"numpy": "openblas SkylakeX"}, "threads": {"torch": 1}}
    >>> differences(a, b)
    ['other BLAS kernel: numpy BLAS openblas Haswell, now openblas SkylakeX']
    """
    if not recorded or not current:
        which = "the recorded run" if not recorded else "this run"
        return [f"{NOT_RECORDED}: {which} has no provenance record (written before provenance was recorded)"]
    out = []
    code_a, code_b = recorded.get("code") or {}, current.get("code") or {}
    if code_a.get("commit") != code_b.get("commit") or bool(code_a.get("dirty")) != bool(code_b.get("dirty")):
        out.append(f"other commit: {short_commit(recorded)}, now {short_commit(current)}")

    def compare(section: str, labels: Mapping[str, str] | None = None) -> str:
        a, b = recorded.get(section) or {}, current.get(section) or {}
        keys = tuple(labels) if labels is not None else tuple(sorted(set(a) | set(b)))
        return ", ".join(f"{(labels or {}).get(key, key)} {a.get(key)}, now {b.get(key)}"
                         for key in keys if a.get(key) != b.get(key))

    for cause, section, labels in (
        ("other BLAS kernel", "blas", {"numpy": "numpy BLAS", "torch": "torch BLAS",
                                       "torch_cpu_capability": "torch CPU kernels"}),
        ("other threads", "threads", {"torch": "torch", "torch_interop": "torch inter-op", "blas": "BLAS"}),
        ("other library version", "libraries", None),
        ("other device", "device", None),
        ("other machine", "platform", {"cpu": "CPU", "python": "Python", "machine": "machine"}),
        ("other environment", "environment", None),
    ):
        text = compare(section, labels)
        if text:
            out.append(f"{cause}: {text}")
    return out


def changed_since(commit: str | None, root: str | os.PathLike[str] | None = None,
                  paths: tuple[str, ...] = TRAINING_PATHS) -> list[str] | None:
    """Files of ``paths`` that differ between ``commit`` and HEAD (``git diff --name-only``).

    Parameters
    ----------
    commit : str or None
        A recorded commit.
    root : path-like, optional
        The checkout (default: the package's).
    paths : tuple of str
        Git pathspecs (default :data:`TRAINING_PATHS`).

    Returns
    -------
    list of str or None
        Sorted paths (empty: the training code is the same); None when it cannot be told (no
        commit recorded, no git, or the commit is not in this repository).
    """
    folder = _root(root) if commit else None
    if folder is None:
        return None
    out = _git(["diff", "--name-only", f"{commit}^{{commit}}", "HEAD", "--", *paths], folder)
    return None if out is None else sorted(line for line in out.splitlines() if line.strip())


def commits_since(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None,
                  paths: tuple[str, ...] = TRAINING_PATHS) -> tuple[str, list[str]] | None:
    """For a file without provenance: the commit that last wrote it, and the commits since then that
    changed ``paths`` (``<short hash> <subject>`` each, newest first).

    An upper bound on a committed result's code: the result was computed at or before the commit
    that last wrote the file.

    Parameters
    ----------
    path : path-like
        The file, relative to ``root`` or absolute.
    root : path-like, optional
        The checkout (default: the package's).
    paths : tuple of str
        Git pathspecs (default :data:`TRAINING_PATHS`).

    Returns
    -------
    tuple of (str, list of str) or None
        ``(commit, commits)``; None when git cannot tell (no checkout, the file is not committed).
    """
    folder = _root(root)
    if folder is None:
        return None
    commit = (_git(["log", "-1", "--format=%H", "--", str(path)], folder) or "").strip()
    log = _git(["log", "--format=%h %s", f"{commit}..HEAD", "--", *paths], folder) if commit else None
    return None if log is None else (commit, [line for line in log.splitlines() if line.strip()])
