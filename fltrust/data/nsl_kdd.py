"""NSL-KDD intrusion detection data (Tavallaee et al. 2009) as 122 features and a binary label.

Files
-----
The official text release of the Canadian Institute for Cybersecurity (UNB): ``KDDTrain+.txt``,
``KDDTest+.txt`` and the subsets ``KDDTrain+_20Percent.txt`` / ``KDDTest-21.txt``, in
``<data root>/nsl_kdd/``. Each line holds 43 comma-separated fields, no header: the 41 KDD
features (:data:`KDD_COLUMNS`), the attack label (``normal`` or an attack name) and the difficulty
level (0-21, dropped). Several files given for one split are concatenated in the given order; the
fairness authors' Hugging Face copy equals ``KDDTrain+ + KDDTrain+_20Percent`` and
``KDDTest+ + KDDTest-21`` (fairness spec 6.7, docs/references.md#fairness-6-7).

Features (122, float32)
-----------------------
1. The 38 continuous columns (:data:`CONTINUOUS_COLUMNS`, KDD order), min-max scaled:

   - ``scaling="fit_train"`` (default): :math:`x' = \\mathrm{clip}((x - m_j) / (M_j - m_j), 0, 1)`
     with :math:`m_j, M_j` the minimum and maximum of column j over the training split (a constant
     column is divided by 1). The usual "min-max normalisation fitted on the training data".
   - ``scaling="fixed"``: the fairness authors' table (fairness spec 6.7,
     :data:`FIXED_MAXIMA`): :math:`x' = x / M_j` with every minimum 0; not clipped, exactly as
     in their code (the table was computed over train and test of their copy, so the official
     files stay within [0, 1]; other files may not).

2. One-hot blocks of ``protocol_type`` (3), ``service`` (70) and ``flag`` (11) in ONE fixed global
   column order, the category lists :data:`PROTOCOL_TYPES`, :data:`SERVICES`, :data:`FLAGS`
   (the authors' lists; the 70 services are exactly the union over the four official files).
   The order never depends on which file or partition is loaded.

:data:`FEATURE_NAMES` names the 122 columns.

Labels and extras
-----------------
``y = 0`` for ``normal``, 1 for any attack; ``class_names = ["normal", "attack"]``. The label must
be ``normal`` exactly, as in the official files and the fairness authors' code (``'normal'`` -> 0,
anything else -> 1): a label that differs from it only in case or spaces (``Normal``, ``NORMAL``)
is an error naming the line, since reading it either way would silently change the classes.
``extras`` keeps per-sample strings: ``attack`` (raw label), ``attack_category``
(normal/DoS/Probe/R2L/U2R by :data:`ATTACK_CATEGORIES`, unknown names map to ``"unknown"``), and
the raw ``protocol_type``, ``service`` and ``flag`` (needed by :func:`per_partition_column_order`).

The authors' column-order bug
-----------------------------
The fairness authors one-hot encoded every partition separately with ``pandas.get_dummies``, so
the dummy columns of a partition are the categories present in it, sorted, followed by the absent
ones appended as all-zero columns; feature positions therefore differ between clients and the
server's auxiliary set (fairness spec 6.7 and 9, item 7; docs/references.md#fairness-9-item-7). Their
``apply_transforms`` ran separately on the auxiliary set, on each client's train split and on each client's validation
split, so a client's validation rows are laid out differently even from its own training rows.
:func:`per_partition_column_order` reproduces that layout for one set of rows. It is a
faithful-only option (``data.onehot_order="per_split"``, what produced the published numbers;
``"per_partition"`` encodes a client's train and validation rows together); the loader itself
always returns the global order, and :func:`fltrust.federation.prepare_federation` applies the
permutation to each encoded set.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fltrust.data.base import ArraySplit, DatasetBundle, DatasetError, unreadable
from fltrust.data.cache import cached_arrays, file_record, require_files
from fltrust.names import FEATURE_SCALINGS, ONEHOT_ORDERS, FeatureScaling, OnehotOrder

KDD_COLUMNS = (
    "duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in", "num_compromised",
    "root_shell", "su_attempted", "num_root", "num_file_creations", "num_shells",
    "num_access_files", "num_outbound_cmds", "is_host_login", "is_guest_login", "count",
    "srv_count", "serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate",
    "same_srv_rate", "diff_srv_rate", "srv_diff_host_rate", "dst_host_count",
    "dst_host_srv_count", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
    "dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate",
)  # fmt: skip
"""The 41 KDD feature names in file order."""

CATEGORICAL_COLUMNS = ("protocol_type", "service", "flag")
CONTINUOUS_COLUMNS = tuple(c for c in KDD_COLUMNS if c not in CATEGORICAL_COLUMNS)
"""The 38 continuous columns, KDD order."""

FILE_COLUMNS = KDD_COLUMNS + ("label", "difficulty")
"""The 43 fields of one line of the text files."""

PROTOCOL_TYPES = ("tcp", "udp", "icmp")
SERVICES = (
    "aol", "auth", "bgp", "courier", "csnet_ns", "ctf", "daytime", "discard", "domain",
    "domain_u", "echo", "eco_i", "ecr_i", "efs", "exec", "finger", "ftp", "ftp_data", "gopher",
    "harvest", "hostnames", "http", "http_2784", "http_443", "http_8001", "imap4", "IRC",
    "iso_tsap", "klogin", "kshell", "ldap", "link", "login", "mtp", "name", "netbios_dgm",
    "netbios_ns", "netbios_ssn", "netstat", "nnsp", "nntp", "ntp_u", "other", "pm_dump", "pop_2",
    "pop_3", "printer", "private", "red_i", "remote_job", "rje", "shell", "smtp", "sql_net",
    "ssh", "sunrpc", "supdup", "systat", "telnet", "tftp_u", "tim_i", "time", "urh_i", "urp_i",
    "uucp", "uucp_path", "vmnet", "whois", "X11", "Z39_50",
)  # fmt: skip
FLAGS = ("OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH")
CATEGORIES = {"protocol_type": PROTOCOL_TYPES, "service": SERVICES, "flag": FLAGS}
"""Category lists of the one-hot blocks, in the global column order (the fairness authors' lists,
``source/load_nslkdd.py``); absent categories are appended in this order by the per-partition bug."""

FEATURE_NAMES = CONTINUOUS_COLUMNS + tuple(f"{f}={value}" for f, values in CATEGORIES.items() for value in values)
"""Names of the 122 feature columns in the global order."""

NUM_FEATURES = len(FEATURE_NAMES)

FIXED_MAXIMA = {
    "duration": 57715.0, "src_bytes": 1379963888.0, "dst_bytes": 1309937401.0, "wrong_fragment": 3.0,
    "urgent": 3.0, "hot": 101.0, "num_failed_logins": 5.0, "num_compromised": 7479.0, "su_attempted": 2.0,
    "num_root": 7468.0, "num_file_creations": 100.0, "num_shells": 5.0, "num_access_files": 9.0,
    "count": 511.0, "srv_count": 511.0, "dst_host_count": 255.0, "dst_host_srv_count": 255.0,
}  # fmt: skip
"""The fairness authors' fixed min-max table (fairness spec 6.7): all minima 0; every continuous
column not listed has maximum 1 (``num_outbound_cmds``, always 0, was forced to [0, 1])."""

ATTACK_CATEGORIES = {
    "normal": "normal",
    **dict.fromkeys(
        ("back", "land", "neptune", "pod", "smurf", "teardrop", "apache2", "mailbomb", "processtable",
         "udpstorm", "worm"), "DoS"),
    **dict.fromkeys(("ipsweep", "nmap", "portsweep", "satan", "mscan", "saint"), "Probe"),
    **dict.fromkeys(
        ("ftp_write", "guess_passwd", "imap", "multihop", "phf", "spy", "warezclient", "warezmaster",
         "named", "sendmail", "snmpgetattack", "snmpguess", "xlock", "xsnoop", "httptunnel"), "R2L"),
    **dict.fromkeys(("buffer_overflow", "loadmodule", "perl", "rootkit", "ps", "sqlattack", "xterm"), "U2R"),
}  # fmt: skip
"""Attack name -> category: the DARPA 1998 categories (DoS, Probe, R2L, U2R) commonly used with
NSL-KDD, covering the 39 attack names of the four official files."""

DEFAULT_TRAIN_FILES = ("KDDTrain+.txt",)
DEFAULT_TEST_FILES = ("KDDTest+.txt",)
CLASS_NAMES = ["normal", "attack"]


# -- parsing -----------------------------------------------------------------------------------

def _parse_kdd_file(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Parse one NSL-KDD text file into raw columns (no scaling, no encoding).

    Returns arrays ``continuous`` (float64, (N, 38)), ``protocol_type``, ``service``, ``flag``,
    ``attack`` (str, (N,)) and ``difficulty`` (int64, (N,)).

    Raises
    ------
    DatasetError
        Naming the file and line of the first malformed row, empty, missing (``nan``) or infinite
        value, unknown category or mis-spelt ``normal`` label.
    """
    dtypes: dict[str, Any] = {c: str if c in CATEGORICAL_COLUMNS + ("label",) else "float64" for c in FILE_COLUMNS}
    try:
        frame = pd.read_csv(path, header=None, names=list(FILE_COLUMNS), dtype=dtypes, skipinitialspace=True)
    except (ValueError, pd.errors.ParserError) as exc:
        raise _first_bad_line(path) or unreadable(path, f"cannot parse as NSL-KDD text ({exc})", "nsl_kdd") from exc
    missing = frame.isna().to_numpy()  # short rows are padded with NaN by pandas; 'nan', 'NA' read as NaN
    if missing.any():
        raise _first_bad_line(path) or _bad_cell(path, missing, "is empty or reads as a missing value")
    if len(frame) == 0:
        raise unreadable(path, "no rows; expected 43 comma-separated fields per line", "nsl_kdd")
    numeric = frame.columns.isin(list(CONTINUOUS_COLUMNS) + ["difficulty"])
    infinite = np.zeros(missing.shape, dtype=bool)
    infinite[:, numeric] = ~np.isfinite(frame.loc[:, numeric].to_numpy(dtype=np.float64))
    if infinite.any():  # 'inf' parses as a float, and min-max scaling would turn its column into NaN
        raise _bad_cell(path, infinite, "is not a finite number")
    for column in CATEGORICAL_COLUMNS:
        values = frame[column].to_numpy(dtype=str)
        unknown = ~np.isin(values, CATEGORIES[column])
        if unknown.any():
            row = int(np.flatnonzero(unknown)[0])
            raise DatasetError(
                f"{path.name} line {_line_of_row(path, row)[0]}: unknown {column} {str(values[row])!r}; "
                f"expected one of {list(CATEGORIES[column])}"
            )
    labels = frame["label"].to_numpy(dtype=str)
    misspelt = (np.char.lower(np.char.strip(labels)) == "normal") & (labels != "normal")
    if misspelt.any():
        row = int(np.flatnonzero(misspelt)[0])
        raise DatasetError(
            f"{path.name} line {_line_of_row(path, row)[0]}: label {str(labels[row])!r}; the normal class is "
            f"spelt 'normal' (lower case, as in the official files), any other label is an attack: fix the label"
        )
    arrays = {
        "continuous": frame[list(CONTINUOUS_COLUMNS)].to_numpy(dtype=np.float64),
        **{c: frame[c].to_numpy(dtype=str) for c in CATEGORICAL_COLUMNS},
        "attack": frame["label"].to_numpy(dtype=str),
        "difficulty": frame["difficulty"].to_numpy(dtype=np.int64),
    }
    return arrays, {"rows": len(frame)}


def _line_of_row(path: Path, row: int) -> tuple[int, list[str]]:
    """Line number (1-based) and fields of data row ``row`` (pandas skips blank lines)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        rows = (item for item in enumerate(handle, start=1) if item[1].strip())
        for index, (number, line) in enumerate(rows):
            if index == row:
                return number, line.rstrip("\r\n").split(",")
    return row + 1, []


def _bad_cell(path: Path, mask: np.ndarray, what: str) -> DatasetError:
    """The error for the first True cell of ``mask`` (rows x :data:`FILE_COLUMNS`): file, line, field."""
    row, column = (int(i) for i in np.argwhere(mask)[0])
    number, fields = _line_of_row(path, row)
    raw = fields[column].strip() if column < len(fields) else ""
    return _field_error(path, number, column, raw, f"{what}; fix or remove that line")


def _field_error(path: Path, number: int, column: int, text: str, what: str) -> DatasetError:
    """The error for field ``column`` of line ``number`` (shown quoted, at most 40 characters)."""
    shown = repr(text) if len(text) <= 40 else repr(text[:37]) + "..."
    return DatasetError(f"{path.name} line {number}: field {column + 1} ({FILE_COLUMNS[column]}) = {shown} {what}")


def _first_bad_line(path: Path) -> DatasetError | None:
    """Scan a file that pandas rejected and describe its first malformed line."""
    numeric = {i for i, c in enumerate(FILE_COLUMNS) if c not in CATEGORICAL_COLUMNS + ("label",)}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return DatasetError(f"{path.name} line {number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                                    f"{exc.start + 1}); the official files are ASCII: re-fetch it or fix that line")
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split(",")
            if len(fields) != len(FILE_COLUMNS):
                return DatasetError(
                    f"{path.name} line {number}: expected {len(FILE_COLUMNS)} comma-separated fields "
                    f"(41 features, label, difficulty), got {len(fields)}"
                )
            for i in sorted(numeric):
                try:
                    problem = None if np.isfinite(float(fields[i])) else "is not a finite number; fix or remove that line"
                except ValueError:
                    problem = "is not a number"
                if problem:
                    return _field_error(path, number, i, fields[i], problem)
    return None


def read_kdd_files(
    folder: Path, names: list[str] | tuple[str, ...]
) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """Raw columns of several NSL-KDD files concatenated in order (each file parsed once, cached).

    Returns the concatenated raw arrays (see :func:`_parse_kdd_file`) and the provenance records.
    """
    if not names:
        raise DatasetError("NSL-KDD: empty file list; name at least one file such as 'KDDTrain+.txt'")
    paths = require_files(folder, names, "NSL-KDD text files")
    parts = [cached_arrays("nsl_kdd_file", [p], functools.partial(_parse_kdd_file, p))[0] for p in paths]
    raw = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    return raw, [file_record(p, folder) for p in paths]


# -- features ----------------------------------------------------------------------------------

def scale_continuous(
    train: np.ndarray, test: np.ndarray, scaling: FeatureScaling = "fit_train"
) -> tuple[np.ndarray, np.ndarray]:
    """Min-max scale the 38 continuous columns of train and test (see the module docstring).

    Parameters
    ----------
    train, test : np.ndarray
        Raw continuous columns, shape (N, 38), KDD order.
    scaling : {"fit_train", "fixed"}
        ``"fit_train"``: minima/maxima of ``train``, results clipped to [0, 1].
        ``"fixed"``: the fairness authors' table :data:`FIXED_MAXIMA` (minima 0), not clipped.
    """
    if scaling == "fit_train":
        low, high = train.min(axis=0), train.max(axis=0)
        span = np.where(high > low, high - low, 1.0)
        return np.clip((train - low) / span, 0.0, 1.0), np.clip((test - low) / span, 0.0, 1.0)
    if scaling == "fixed":
        maxima = np.array([FIXED_MAXIMA.get(c, 1.0) for c in CONTINUOUS_COLUMNS])
        return train / maxima, test / maxima
    raise DatasetError(f"NSL-KDD scaling={scaling!r} is not allowed; choose one of {list(FEATURE_SCALINGS)}")


def one_hot(raw: dict[str, np.ndarray]) -> np.ndarray:
    """The 84 one-hot columns (protocol_type, service, flag) in the global order, float32."""
    blocks = [np.eye(len(values), dtype=np.float32)[pd.Categorical(raw[field], categories=list(values)).codes]
              for field, values in CATEGORIES.items()]
    return np.concatenate(blocks, axis=1)


def attack_category(attack: np.ndarray) -> np.ndarray:
    """Category (normal/DoS/Probe/R2L/U2R, else ``"unknown"``) of each attack name."""
    names, inverse = np.unique(np.asarray(attack, dtype=str), return_inverse=True)
    categories = np.array([ATTACK_CATEGORIES.get(name, "unknown") for name in names] or [""], dtype=str)
    return categories[inverse.reshape(-1)] if len(names) else np.array([], dtype=str)


def build_split(raw: dict[str, np.ndarray], continuous: np.ndarray) -> ArraySplit:
    """One split from raw NSL-KDD columns and already scaled continuous columns (global order)."""
    x = np.concatenate([continuous.astype(np.float32), one_hot(raw)], axis=1)
    extras = {
        "attack": raw["attack"].copy(),
        "attack_category": attack_category(raw["attack"]),
        **{c: raw[c].copy() for c in CATEGORICAL_COLUMNS},
    }
    return ArraySplit(x=x, y=(raw["attack"] != "normal").astype(np.int64), extras=extras)


def load_nsl_kdd(
    folder: str | Path,
    train_files: list[str] | tuple[str, ...] | None = None,
    test_files: list[str] | tuple[str, ...] | None = None,
    onehot_order: OnehotOrder = "global",
    scaling: FeatureScaling = "fit_train",
) -> DatasetBundle:
    """Load NSL-KDD from its official text files.

    Parameters
    ----------
    folder : str or Path
        The ``nsl_kdd`` folder holding the text files.
    train_files, test_files : list of str, optional
        Files concatenated (in order) into each split; default ``KDDTrain+.txt`` / ``KDDTest+.txt``.
    onehot_order : {"global", "per_split", "per_partition"}
        Recorded in ``source``. The returned features are always in the global order; otherwise
        the partitioning step applies :func:`per_partition_column_order` to every encoded set
        (the fairness authors' bug, faithful mode only).
    scaling : {"fit_train", "fixed"}
        Continuous-column scaling (module docstring); ``"fixed"`` is the authors' table.

    Returns
    -------
    DatasetBundle
        122 float32 features, binary labels, ``extras`` as in the module docstring.
    """
    if onehot_order not in ONEHOT_ORDERS:
        raise DatasetError(f"NSL-KDD onehot_order={onehot_order!r}; choose one of {list(ONEHOT_ORDERS)}")
    if scaling not in FEATURE_SCALINGS:
        raise DatasetError(f"NSL-KDD scaling={scaling!r} is not allowed; choose one of {list(FEATURE_SCALINGS)}")
    folder = Path(folder)
    train_raw, train_records = read_kdd_files(folder, train_files or DEFAULT_TRAIN_FILES)
    test_raw, test_records = read_kdd_files(folder, test_files or DEFAULT_TEST_FILES)
    train_cont, test_cont = scale_continuous(train_raw["continuous"], test_raw["continuous"], scaling)
    return DatasetBundle(
        name="nsl_kdd",
        train=build_split(train_raw, train_cont),
        test=build_split(test_raw, test_cont),
        num_classes=2,
        input_shape=(NUM_FEATURES,),
        class_names=list(CLASS_NAMES),
        source={
            "loader": "nsl_kdd",
            "folder": str(folder),
            "train_files": train_records,
            "test_files": test_records,
            "scaling": scaling,
            "onehot_order": onehot_order,
        },
    )


# -- the authors' per-partition column order ---------------------------------------------------

def per_partition_column_order(split: ArraySplit, index: np.ndarray) -> np.ndarray:
    """Column permutation that reproduces the fairness authors' per-partition one-hot layout.

    The authors called ``pandas.get_dummies`` on each partition separately and then appended every
    category absent from the partition as an all-zero column (``source/load_nslkdd.py``,
    ``apply_transforms``). Their feature columns for a partition P are therefore

    1. the 38 continuous columns (KDD order, unchanged);
    2. for ``protocol_type``, ``service``, ``flag`` in turn: the categories present in P, sorted
       lexicographically by code point (upper case before lower case, as ``get_dummies`` sorts);
    3. then the absent categories: those of ``protocol_type``, of ``service``, of ``flag``, each in
       list order (:data:`CATEGORIES`).

    So ``x[:, perm]`` turns globally ordered rows of P into the authors' misaligned rows: the same
    column position can mean different categories in different partitions (fairness spec 6.7, 9).
    Faithful-only; the global order is the correct one.

    Parameters
    ----------
    split : ArraySplit
        An NSL-KDD split with ``extras`` ``protocol_type``, ``service`` and ``flag``.
    index : np.ndarray
        Rows of ``split`` that form the partition.

    Returns
    -------
    np.ndarray
        int64 permutation of the 122 columns: position j of the authors' layout holds global column
        ``perm[j]``.
    """
    missing = [c for c in CATEGORICAL_COLUMNS if c not in split.extras]
    if missing:
        raise DatasetError(
            f"per_partition_column_order needs NSL-KDD extras {missing}; load the split with load_nsl_kdd"
        )
    index = np.asarray(index, dtype=np.int64)
    position = {name: i for i, name in enumerate(FEATURE_NAMES)}
    present_cols: list[int] = []
    absent_cols: list[int] = []
    for field, values in CATEGORIES.items():
        present = set(np.unique(split.extras[field][index]).tolist())
        present_cols += [position[f"{field}={v}"] for v in sorted(present)]
        absent_cols += [position[f"{field}={v}"] for v in values if v not in present]
    perm = np.concatenate([np.arange(len(CONTINUOUS_COLUMNS)), present_cols, absent_cols]).astype(np.int64)
    assert len(perm) == NUM_FEATURES
    return perm
