"""The fairness authors' own runs beside ours: their 72 raw result files, read, checked and averaged.

The authors published one JSON file per condition and repeat (github.com/oscardilley/federated-fairness,
``Results/`` at the commit :data:`fltrust.data.registry.FFA_RESULTS_COMMIT`; ``fltrust data fetch
ffa-results`` puts them in ``<data root>/ffa_results/Results/``). :func:`authors_file_names` maps each of
the 24 conditions of :mod:`fltrust.repro.fairness.conditions` to its three files, the file name built
from the condition's own setup (``<Strategy>_<Dataset>_<iid|niid>_<N>C_<P>PC_<E>E_30R_v<1|2|3>.json``:
N clients, P = int(100 x fraction of clients per round), E local epochs), and the file's ``config``
block is checked against that setup when it is read.

:func:`read_authors_file` validates a file's layout (fairness spec 7 (docs/references.md#fairness-7): ``rounds``,
``general_fairness`` with f_j, f_g, f_r, f_o per round, ``config``, ``per_client_data`` with ``shap``, ``accuracy``,
``gains`` and ``avg_eop`` per round) and names the file and the field of the first problem in one
line. :meth:`AuthorsCondition.frame` is a notions frame as :func:`fltrust.repro.fairness.run.notions_frame`
builds ours (repeat = v - 1, round = list position + 1, F_T = the plain mean of the four notions,
mean local accuracy = the participants' mean ``accuracy``), so the Table 3 protocol is the one
:func:`fltrust.repro.fairness.run.window_means` applies to our runs: rounds 15-30 by list position,
per repeat and over repeats (fairness spec 8, docs/references.md#fairness-8). With it, the authors' three repeats
reproduce every published Table 3 value to two decimals.

:func:`compare_with_authors` sets our per-repeat F_T beside theirs, condition by condition, with
Welch's t-test (:func:`welch_test`, unequal variances) and the per-notion window-mean differences;
RESULTS.md shows it (:func:`fltrust.repro.fairness.report.results_markdown`) and Figures 4-8 can
overlay the authors' curves. Our seeds are what they are: nothing here chooses seeds to match.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fltrust.data.cache import file_sha256
from fltrust.data.registry import FFA_RESULTS_COMMIT, REFERENCE_SPECS, data_root
from fltrust.repro.fairness.conditions import CONDITIONS, DATASETS
from fltrust.metrics.fairness.notions import PAPER_NOTIONS
from fltrust.metrics.fairness.registry import GENERAL_FAIRNESS
from fltrust.repro.fairness.run import figure4_row, window_means

__all__ = [
    "AUTHORS_DATA",
    "AUTHORS_DATASETS",
    "AUTHORS_STRATEGIES",
    "AuthorsCondition",
    "AuthorsDataError",
    "AuthorsRun",
    "AuthorsRuns",
    "WelchTest",
    "authors_figure4_frame",
    "authors_file_names",
    "compare_with_authors",
    "load_authors_runs",
    "read_authors_file",
    "welch_test",
]

AUTHORS_DATA = "ffa-results"
"""The published file set (:data:`fltrust.data.registry.REFERENCE_SPECS`) holding the authors' runs."""

AUTHORS_STRATEGIES = {"fedavg": "FedAvg", "qfedavg": "q_FedAvg", "ditto": "Ditto"}
"""The authors' file-name prefix of each strategy."""

AUTHORS_DATASETS = {"cifar10": "CIFAR", "femnist": "FEMNIST", "nsl_kdd": "NSLKDD"}
"""The authors' file-name tag of each dataset (``DatasetSetup.data``)."""

AUTHORS_REPEATS = 3
AUTHORS_ROUNDS = 30
CONFIG_FIELDS = ("num_clients", "local_epochs", "num_rounds", "batch_size", "selection_rate", "sensitive_attributes")
PER_CLIENT_FIELDS = ("shap", "accuracy", "gains", "avg_eop")
CONSISTENT_P = 0.05
"""Welch's p-value at or above which our repeats are consistent with the authors' (95 %)."""

class AuthorsDataError(ValueError):
    """An authors' result file is not in the published layout (the message names the file and field)."""


def authors_file_names(condition: str) -> list[str]:
    """The authors' three result files (v1, v2, v3) of one of the 24 conditions.

    Parameters
    ----------
    condition : str
        A Table 3 condition, e.g. ``qfedavg_femnist_205c_niid``.

    Returns
    -------
    list of str
        File names, built from the condition's setup: N clients, P = int(100 x fraction of
        clients per round) (FEMNIST's 2.5 % is the authors' ``2PC``), E local epochs.

    Examples
    --------
    >>> authors_file_names("qfedavg_femnist_205c_niid")[0]
    'q_FedAvg_FEMNIST_niid_205C_2PC_5E_30R_v1.json'
    >>> authors_file_names("ditto_cifar10_10c_iid")[2]
    'Ditto_CIFAR_iid_10C_50PC_10E_30R_v3.json'
    """
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; choose one of {sorted(CONDITIONS)}")
    strategy, key, setting = CONDITIONS[condition]
    setup = DATASETS[key]
    percent = int(setup.fraction_fit * 100 + 1e-9)
    stem = (f"{AUTHORS_STRATEGIES[strategy]}_{AUTHORS_DATASETS[setup.data]}_{setting}_{setup.num_clients}C_"
            f"{percent}PC_{setup.local_epochs}E_{AUTHORS_ROUNDS}R")
    return [f"{stem}_v{v}.json" for v in range(1, AUTHORS_REPEATS + 1)]


# -- one file ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class AuthorsRun:
    """One of the authors' result files, validated.

    Attributes
    ----------
    path : Path
        The file.
    repeat : int
        0-based repeat (file ``v1`` is repeat 0).
    notions : dict of str to list of float
        f_j, f_g, f_r, f_o per round; list position p is server round p + 1.
    accuracy : list of list of float
        Per round, the participants' accuracy after local training (x_{n,k}).
    config : dict
        The file's ``config`` block.
    sha256 : str
        SHA-256 of the file's content.
    """

    path: Path
    repeat: int
    notions: dict[str, list[float]]
    accuracy: list[list[float]]
    config: dict[str, Any]
    sha256: str


def _fail(path: Path, field_name: str, problem: str) -> AuthorsDataError:
    return AuthorsDataError(f"{path}: field {field_name} {problem}; replace the file with the published one "
                            f"(fltrust data fetch {AUTHORS_DATA})")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _numbers(path: Path, field_name: str, values: Any, length: int | None = None) -> list[float]:
    """``values`` as floats, or the error naming the field: not a list, wrong length, or a non-number."""
    if not isinstance(values, list):
        raise _fail(path, field_name, f"is {type(values).__name__}, not a list of numbers")
    if length is not None and len(values) != length:
        raise _fail(path, field_name, f"has {len(values)} entries, expected {length}")
    for i, value in enumerate(values):
        if not _is_number(value):
            raise _fail(path, f"{field_name}[{i}]", f"is {value!r}, not a finite number")
    return [float(v) for v in values]


def _object(path: Path, field_name: str, value: Any, keys: Sequence[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, field_name, f"is {type(value).__name__}, not an object")
    missing = [k for k in keys if k not in value]
    if missing:
        raise _fail(path, f"{field_name}.{missing[0]}" if field_name else missing[0], "is missing")
    return value


def _rows(path: Path, field_name: str, value: Any, rounds: int) -> list[Any]:
    if not isinstance(value, list) or len(value) != rounds:
        size = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise _fail(path, field_name, f"has {size}, expected one list per round ({rounds})")
    return value


def read_authors_file(path: str | os.PathLike[str], *, repeat: int = 0) -> AuthorsRun:
    """Read and validate one of the authors' result files (layout: fairness spec 7).

    Parameters
    ----------
    path : str or Path
        The JSON file.
    repeat : int
        Its 0-based repeat (file ``v<repeat + 1>``).

    Returns
    -------
    AuthorsRun

    Raises
    ------
    AuthorsDataError
        One line naming the file and the first field that is missing or malformed: not JSON, a
        missing key, a list of the wrong length (every per-round list has one entry per round,
        ``shap`` one value per client, ``gains`` and ``avg_eop`` one per participant), or a value
        that is not a finite number.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthorsDataError(f"{path}: cannot read the file ({exc}); fetch it: fltrust data fetch {AUTHORS_DATA}") from exc
    except json.JSONDecodeError as exc:
        raise AuthorsDataError(f"{path}: not valid JSON ({exc}); replace the file with the published one "
                               f"(fltrust data fetch {AUTHORS_DATA})") from exc
    _object(path, "", data, ("rounds", "general_fairness", "config", "per_client_data"))
    config = _object(path, "config", data["config"], CONFIG_FIELDS)
    for key in ("num_clients", "local_epochs", "num_rounds", "batch_size"):
        if not isinstance(config[key], int) or isinstance(config[key], bool) or config[key] < 1:
            raise _fail(path, f"config.{key}", f"is {config[key]!r}, not a positive integer")
    if not _is_number(config["selection_rate"]) or not 0 < config["selection_rate"] <= 1:
        raise _fail(path, "config.selection_rate", f"is {config['selection_rate']!r}, not a fraction in (0, 1]")
    rounds = config["num_rounds"]
    labels = data["rounds"]
    if not isinstance(labels, list) or len(labels) != rounds or not all(
            isinstance(r, int) and not isinstance(r, bool) for r in labels):
        raise _fail(path, "rounds", f"is not a list of {rounds} round numbers (config.num_rounds)")
    fairness = _object(path, "general_fairness", data["general_fairness"], PAPER_NOTIONS)
    notions = {k: _numbers(path, f"general_fairness.{k}", fairness[k], rounds) for k in PAPER_NOTIONS}
    per_client = _object(path, "per_client_data", data["per_client_data"], PER_CLIENT_FIELDS)
    shap, accuracy, gains, eop = (_rows(path, f"per_client_data.{k}", per_client[k], rounds) for k in PER_CLIENT_FIELDS)
    clients = config["num_clients"]
    accuracy_rows = []
    for k in range(rounds):
        _numbers(path, f"per_client_data.shap[{k}]", shap[k], clients)
        row = _numbers(path, f"per_client_data.accuracy[{k}]", accuracy[k])
        if not row:
            raise _fail(path, f"per_client_data.accuracy[{k}]", "is empty (a round without participants)")
        _numbers(path, f"per_client_data.gains[{k}]", gains[k], len(row))
        if not isinstance(eop[k], list) or len(eop[k]) != len(row):
            raise _fail(path, f"per_client_data.avg_eop[{k}]", f"is not a list of {len(row)} objects (one per participant)")
        for n, entry in enumerate(eop[k]):
            if not isinstance(entry, dict) or not all(_is_number(v) for v in entry.values()):
                raise _fail(path, f"per_client_data.avg_eop[{k}][{n}]", "is not an object of finite numbers")
        accuracy_rows.append(row)
    return AuthorsRun(path=path, repeat=repeat, notions=notions, accuracy=accuracy_rows, config=dict(config),
                      sha256=file_sha256(path))


# -- one condition, all conditions --------------------------------------------------------------

@dataclass(frozen=True)
class AuthorsCondition:
    """The authors' repeats of one condition."""

    condition: str
    runs: tuple[AuthorsRun, ...]

    def frame(self) -> pd.DataFrame:
        """A notions frame of the authors' repeats (columns of :func:`fltrust.repro.fairness.run.notions_frame`).

        Returns
        -------
        pandas.DataFrame
            One row per (repeat, round): round = list position + 1, f_j..f_o as stored, F_T their
            plain mean, ``mean_local_accuracy`` the participants' mean accuracy (their f_o), no
            ``aux_accuracy`` (NaN: the files do not hold it).
        """
        return pd.DataFrame([{"repeat": run.repeat, "round": p + 1, **{k: run.notions[k][p] for k in PAPER_NOTIONS},
                              "F_T": float(np.mean([run.notions[k][p] for k in PAPER_NOTIONS])),
                              "mean_local_accuracy": float(np.mean(run.accuracy[p])), "aux_accuracy": math.nan}
                             for run in self.runs for p in range(len(run.notions["f_j"]))])

    def table3(self, first_round: int = 15, last_round: int = 30) -> dict[str, Any]:
        """:func:`fltrust.repro.fairness.run.window_means` of :meth:`frame` (Table 3: rounds 15-30)."""
        return window_means(self.frame(), first_round, last_round)


@dataclass(frozen=True)
class AuthorsRuns:
    """What :func:`load_authors_runs` found: the conditions with all three files, and what is missing.

    Attributes
    ----------
    folder : Path
        Where the files were looked for (``<data root>/ffa_results/Results``).
    conditions : dict of str to AuthorsCondition
        The conditions whose three files are there, in Table 3 order.
    missing : tuple of str
        File names not found.
    checksum_mismatch : tuple of dict
        ``{"path", "sha256", "expected"}`` per file read whose SHA-256 differs from the published one.
    """

    folder: Path
    conditions: dict[str, AuthorsCondition] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    checksum_mismatch: tuple[dict[str, str], ...] = ()

    @property
    def found(self) -> bool:
        """True when at least one condition has all three files."""
        return bool(self.conditions)

    def fetch_hint(self, *, portable: bool = False) -> str:
        """One line: what is missing from where, and the command that fetches it.

        Parameters
        ----------
        portable : bool
            Name the folder as ``<data root>/ffa_results/Results/`` (Markdown code) instead of this machine's path
            (for pages that are handed around: RESULTS.md, the HTML report).

        Returns
        -------
        str
        """
        total = len(CONDITIONS) * AUTHORS_REPEATS
        where = f"`<data root>/{self.folder.parent.name}/{self.folder.name}/`" if portable else f"{self.folder}/"
        return (f"{len(self.missing)} of {total} files missing from {where}: `fltrust data fetch {AUTHORS_DATA}` "
                f"downloads them (github.com/oscardilley/federated-fairness at {FFA_RESULTS_COMMIT[:7]}, SHA-256 checked)")


def load_authors_runs(root: str | os.PathLike[str] | None = None) -> AuthorsRuns:
    """The authors' runs of every condition whose three files are under the data root.

    Parameters
    ----------
    root : str or Path, optional
        Data root (default :func:`fltrust.data.registry.data_root`: ``$FLTRUST_DATA``, else ``./data``).

    Returns
    -------
    AuthorsRuns
        Empty (``found`` False) when no condition has its files; each file read is compared with
        the published SHA-256 (differences are listed, not raised).

    Raises
    ------
    AuthorsDataError
        A file is malformed (:func:`read_authors_file`), or its ``config`` is not the condition's
        (clients, local epochs, fraction per round, 30 rounds).
    """
    spec = REFERENCE_SPECS[AUTHORS_DATA]
    base = data_root(root) / spec.folder
    folder = base / "Results"
    known = spec.expected_sha256()
    conditions, missing, mismatch = {}, [], []
    for name, (_, key, _) in CONDITIONS.items():
        files = [folder / f for f in authors_file_names(name)]
        absent = [f.name for f in files if not f.is_file()]
        if absent:
            missing += absent
            continue
        runs = tuple(read_authors_file(f, repeat=i) for i, f in enumerate(files))
        for run in runs:
            _check_config(run, name, DATASETS[key])
            expected = known.get(str(run.path.relative_to(base)))
            if expected is not None and run.sha256 != expected:
                mismatch.append({"path": str(run.path), "sha256": run.sha256, "expected": expected})
        conditions[name] = AuthorsCondition(name, runs)
    return AuthorsRuns(folder=folder, conditions=conditions, missing=tuple(missing), checksum_mismatch=tuple(mismatch))


def _check_config(run: AuthorsRun, condition: str, setup: Any) -> None:
    expected = {"num_clients": setup.num_clients, "local_epochs": setup.local_epochs, "num_rounds": AUTHORS_ROUNDS,
                "selection_rate": setup.fraction_fit}
    for key, value in expected.items():
        if abs(run.config[key] - value) > 1e-9:  # the integers exactly, the fraction per round to rounding
            raise _fail(run.path, f"config.{key}", f"is {run.config[key]}, but condition {condition} has {value}")


# -- comparison --------------------------------------------------------------------------------

@dataclass(frozen=True)
class WelchTest:
    """Welch's t-test of two sets of repeat means.

    Attributes
    ----------
    t, p : float
        Statistic and two-sided p-value (NaN when a side has fewer than 2 values or neither varies).
    consistent : bool or None
        ``p >= 0.05``: the two sets are not distinguishable at 95 % (None when p is NaN).
    """

    t: float
    p: float
    consistent: bool | None


def welch_test(ours: Sequence[float | None], authors: Sequence[float | None], *, alpha: float = CONSISTENT_P) -> WelchTest:
    """Welch's unequal-variance t-test (``scipy.stats.ttest_ind(equal_var=False)``) of our repeat
    means against the authors'.

    Parameters
    ----------
    ours, authors : sequence of float or None
        Per-repeat values (None and NaN entries are left out).
    alpha : float
        Level: consistent when ``p >= alpha`` (default 0.05, i.e. 95 %).

    Returns
    -------
    WelchTest

    Examples
    --------
    >>> w = welch_test([0.5, 0.6, 0.7], [0.5, 0.6, 0.7])
    >>> w.t, w.p, w.consistent
    (0.0, 1.0, True)
    """
    from scipy import stats

    def finite(values: Sequence[float | None]) -> np.ndarray:
        return np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)

    a, b = finite(ours), finite(authors)
    if len(a) < 2 or len(b) < 2 or (np.var(a) == 0 and np.var(b) == 0):
        return WelchTest(math.nan, math.nan, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_ind(a, b, equal_var=False)
    t, p = float(result.statistic), float(result.pvalue)
    return WelchTest(t, p, None if math.isnan(p) else bool(p >= alpha))


COMPARISON_COLUMNS = (
    "condition", "authors_F_T_per_repeat", "authors_F_T", "ours_F_T_per_repeat", "ours_F_T", "welch_t", "welch_p",
    "consistent", *(f"delta_{k}" for k in (*PAPER_NOTIONS, GENERAL_FAIRNESS)),
)


def compare_with_authors(results: Sequence[dict[str, Any]], authors: AuthorsRuns) -> pd.DataFrame:
    """Our faithful, full-length condition results beside the authors' runs of the same condition.

    Parameters
    ----------
    results : sequence of dict
        Condition results (:func:`fltrust.repro.fairness.run.condition_result`); quick and
        corrected-mode results are left out (the authors ran the faithful definitions for 30 rounds).
    authors : AuthorsRuns
        :func:`load_authors_runs`.

    Returns
    -------
    pandas.DataFrame
        One row per compared condition (:data:`COMPARISON_COLUMNS`): the authors' per-repeat and
        mean F_T over rounds 15-30, ours, Welch's t and p of the two sets of repeat means and
        whether they are consistent at 95 %, and ours minus the authors' window mean of each
        notion and of F_T.
    """
    rows = []
    for res in results:
        name = res["condition"]
        if res["quick"] or res["mode"] != "faithful" or name not in authors.conditions:
            continue
        theirs = authors.conditions[name].table3()
        ours = res["table3"]
        welch = welch_test(ours["F_T_per_repeat"], theirs["F_T_per_repeat"])
        rows.append({
            "condition": name,
            "authors_F_T_per_repeat": list(theirs["F_T_per_repeat"]),
            "authors_F_T": theirs["F_T"],
            "ours_F_T_per_repeat": [math.nan if v is None else float(v) for v in ours["F_T_per_repeat"]],
            "ours_F_T": math.nan if ours["F_T"] is None else float(ours["F_T"]),
            "welch_t": welch.t,
            "welch_p": welch.p,
            "consistent": welch.consistent,
            **{f"delta_{k}": (math.nan if ours[k] is None else float(ours[k])) - theirs[k]
               for k in (*PAPER_NOTIONS, GENERAL_FAIRNESS)},
        })
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))


def authors_figure4_frame(authors: AuthorsRuns, first_round: int = 21, last_round: int = 30) -> pd.DataFrame:
    """The authors' Figure 4 points: per condition F_T and mean local accuracy over rounds 21-30.

    The columns of :func:`fltrust.repro.fairness.run.figure4_frame` (``mode`` faithful); the means
    are :func:`fltrust.repro.fairness.run.window_means` of :meth:`AuthorsCondition.frame`.
    """
    return pd.DataFrame([figure4_row(name, DATASETS[CONDITIONS[name][1]].num_clients, "faithful",
                                     cond.table3(first_round, last_round), (first_round, last_round))
                         for name, cond in authors.conditions.items()])
