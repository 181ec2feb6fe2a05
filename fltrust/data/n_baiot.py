"""N-BaIoT (Meidan et al. 2018): IoT botnet traffic with devices as natural clients.

Files
-----
The UCI archive (dataset 442) has one folder per device (:data:`DEVICES`) in
``<data root>/n_baiot/``, each holding ``benign_traffic.csv`` and the extracted attack archives
``gafgyt_attacks/*.csv`` (combo, junk, scan, tcp, udp) and ``mirai_attacks/*.csv`` (ack, scan,
syn, udp, udpplain; absent for Ennio_Doorbell and Samsung_SNH_1011_N_Webcam). The flat layout of
the popular re-packaging (``<n>.benign.csv``, ``<n>.gafgyt.<attack>.csv``, ``<n>.mirai.<attack>.csv``,
device number n = 1..9 in :data:`DEVICES` order) is read too. Every CSV has the 115-column header
of the archive's ``demonstrate_structure.csv`` (:data:`FEATURE_NAMES`) and no label column.

Output
------
- y: 0 = benign, 1 = attack (any gafgyt or mirai file); ``extras["attack"]`` holds ``"benign"`` or
  ``"<family>.<attack>"`` (for example ``"gafgyt.udp"``).
- groups: device index among the devices found (in :data:`DEVICES` order); ``group_names`` the
  device names. A device is a natural client (FederatedTrust experiments 4 and 5, trust spec 7.1;
  docs/references.md#trust-7-1).
- Train/test: a seeded stratified split per device and class, 80/20 by default.
- ``balance=True``: before the split, each device keeps all rows of its minority class and an equal,
  seeded random draw of its majority class (50/50 benign/attack per client, trust experiment 5).
- x: float32 (N, 115), standardised per column with the mean and standard deviation of the training
  split, :math:`x' = (x - \\mu_j)/\\sigma_j` (a constant column keeps :math:`\\sigma_j = 1`).

Partial real files (``real_partial/``)
--------------------------------------
``<n_baiot folder>/real_partial/`` may hold real 115-feature files of single devices that are not a
complete UCI archive (the project's mirror: devices 1, 3 and 5, data/PROVENANCE.md#n-baiot-real-partial).
:func:`load_n_baiot` never reads them: they are too few devices for the federated experiments, and
configurations that fall back to the synthetic stand-in must keep doing so.
:func:`load_n_baiot_real_partial` reads them as raw rows (no split, no scaling), for ``fltrust data
info`` and for the stand-in comparison (:mod:`fltrust.repro.trust.n_baiot_compare`). File names carry the UCI
identity, device number n = 1..9:

- ``<n>.<traffic>.zip`` (traffic ``benign``, ``gafgyt.<attack>`` or ``mirai.<attack>``): a zip with
  exactly one CSV member (its own name may be generic, ``tcp.csv``), read in memory, never extracted;
  a member larger than :data:`MAX_ZIP_MEMBER_BYTES` uncompressed is refused (zip bomb guard);
- ``<n>.<traffic>.csv``: the same CSV, uncompressed;
- ``<n>.benign+<family>.<attack>[.<note>].csv``: a labelled CSV, the 115 features then a column
  ``Normal`` (1 = benign row, 0 = attack row of that attack).
"""

from __future__ import annotations

import functools
import io
import re
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from fltrust.data.base import ArraySplit, DatasetBundle, DatasetError, unreadable
from fltrust.data.cache import DatasetNotFoundError, cached_arrays, file_record

DEVICES = (
    "Danmini_Doorbell",
    "Ecobee_Thermostat",
    "Ennio_Doorbell",
    "Philips_B120N10_Baby_Monitor",
    "Provision_PT_737E_Security_Camera",
    "Provision_PT_838_Security_Camera",
    "Samsung_SNH_1011_N_Webcam",
    "SimpleHome_XCS7_1002_WHT_Security_Camera",
    "SimpleHome_XCS7_1003_WHT_Security_Camera",
)
"""The nine devices in UCI order (device number n of the flat layout is position n - 1)."""

GAFGYT_ATTACKS = ("combo", "junk", "scan", "tcp", "udp")
MIRAI_ATTACKS = ("ack", "scan", "syn", "udp", "udpplain")
FAMILIES = ("gafgyt", "mirai")

_DECAYS = ("L5", "L3", "L1", "L0.1", "L0.01")
_ONE_D = ("weight", "mean", "variance")
_TWO_D = ("weight", "mean", "std", "magnitude", "radius", "covariance", "pcc")
FEATURE_NAMES = tuple(
    [f"MI_dir_{d}_{s}" for d in _DECAYS for s in _ONE_D]
    + [f"H_{d}_{s}" for d in _DECAYS for s in _ONE_D]
    + [f"HH_{d}_{s}" for d in _DECAYS for s in _TWO_D]
    + [f"HH_jit_{d}_{s}" for d in _DECAYS for s in _ONE_D]
    + [f"HpHp_{d}_{s}" for d in _DECAYS for s in _TWO_D]
)
"""The 115 feature columns (header of ``demonstrate_structure.csv``): damped-window statistics of
source MAC-IP (MI_dir), source IP (H), channel (HH), channel jitter (HH_jit) and socket (HpHp)
traffic over five decay factors."""

NUM_FEATURES = len(FEATURE_NAMES)
CLASS_NAMES = ["benign", "attack"]
TEST_FRACTION = 0.2


# -- discovering files -------------------------------------------------------------------------

def find_files(folder: Path) -> dict[str, list[tuple[str, Path]]]:
    """Map each device found to its ``(traffic label, csv path)`` list, benign first.

    Reads the UCI device-folder layout, or the flat ``<n>.<family>.<attack>.csv`` layout when no
    device folder exists.

    Raises
    ------
    DatasetNotFoundError
        If no device's files are found.
    DatasetError
        If a device folder lacks ``benign_traffic.csv`` or holds unextracted ``.rar`` archives.
    """
    found: dict[str, list[tuple[str, Path]]] = {}
    device_dirs = [d for d in DEVICES if (folder / d).is_dir()]
    for device in device_dirs:
        base = folder / device
        benign = base / "benign_traffic.csv"
        if not benign.is_file():
            raise DatasetError(
                f"n_baiot/{device}: missing benign_traffic.csv; expected the UCI device folder layout"
            )
        files = [("benign", benign)]
        for family in FAMILIES:
            attacks = sorted((base / f"{family}_attacks").glob("*.csv"))
            if not attacks and (base / f"{family}_attacks.rar").is_file():
                raise DatasetError(
                    f"n_baiot/{device}/{family}_attacks.rar is not extracted; extract it into "
                    f"n_baiot/{device}/{family}_attacks/ "
                    f"(for example `unrar x {family}_attacks.rar {family}_attacks/`)"
                )
            files += [(f"{family}.{p.stem}", p) for p in attacks]
        found[device] = files
    if not device_dirs:
        for number, device in enumerate(DEVICES, start=1):
            benign = folder / f"{number}.benign.csv"
            attacks = sorted(p for family in FAMILIES for p in folder.glob(f"{number}.{family}.*.csv"))
            if benign.is_file():
                # "1.gafgyt.udp.csv" -> "gafgyt.udp"
                found[device] = [("benign", benign)] + [(p.name[len(f"{number}.") : -len(".csv")], p) for p in attacks]
            elif attacks:
                raise DatasetError(f"n_baiot: {attacks[0].name} has no matching {number}.benign.csv")
    if not found:
        raise DatasetNotFoundError(
            f"N-BaIoT not found in {folder}: expected the UCI layout <device>/benign_traffic.csv, "
            f"<device>/gafgyt_attacks/*.csv, <device>/mirai_attacks/*.csv for devices {list(DEVICES)}, "
            f"or the flat files 1.benign.csv, 1.gafgyt.<attack>.csv, 1.mirai.<attack>.csv, ...; "
            f"run `fltrust data fetch n_baiot`"
        )
    return found


def _parse_csv(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read one N-BaIoT CSV into ``x`` float32 (N, 115), checking the header and the values."""
    values = _read_numeric_csv(lambda: path, path.name, FEATURE_NAMES, path)
    return {"x": values.astype(np.float32)}, {"rows": len(values)}


def _read_numeric_csv(
    open_source: Callable[[], Path | IO[bytes]], name: str, columns: tuple[str, ...], where: Any
) -> np.ndarray:
    """float64 values of a CSV whose header must be ``columns`` and whose fields must be finite numbers.

    ``open_source`` gives a fresh path or byte stream per read; ``name`` is used in messages,
    ``where`` in the "unreadable" message.
    """
    try:
        header = tuple(str(c).strip() for c in pd.read_csv(open_source(), nrows=0).columns)
    except (OSError, ValueError) as exc:
        raise unreadable(where, f"cannot read as CSV ({exc})", "n_baiot") from exc
    if header != columns:
        extra = "" if columns == FEATURE_NAMES else f" then {list(columns[NUM_FEATURES:])}"
        raise DatasetError(
            f"{name}: expected the {NUM_FEATURES}-column N-BaIoT header "
            f"({FEATURE_NAMES[0]}, ..., {FEATURE_NAMES[-1]}){extra}, "
            f"got {len(header)} columns starting {list(header[:3])}"
        )
    try:
        values = pd.read_csv(open_source(), dtype=np.float64).to_numpy()
    except ValueError:  # a non-numeric field or a ragged row
        values = None
    if values is None or not np.isfinite(values).all():
        raise _ragged_line(open_source(), name, columns) or _first_bad_value(open_source(), name, columns)
    if not len(values):  # a header alone would silently drop a class (benign, or one attack)
        raise DatasetError(f"{name}: has the N-BaIoT header but no rows; every traffic file needs at least one row")
    return values


def _ragged_line(source: Path | IO[bytes], name: str, columns: tuple[str, ...]) -> DatasetError | None:
    """The first line of a rejected CSV with another number of fields than the header (pandas would
    take a longer first row's extra field as an index and blame the next line)."""
    handle = open(source, "rb") if isinstance(source, Path) else source
    with handle:
        for number, line in enumerate(handle, start=1):
            fields = line.count(b",") + 1
            if line.strip() and fields != len(columns):
                return DatasetError(f"{name} line {number}: {fields} comma-separated fields, expected {len(columns)} "
                                    f"(the header's); fix or remove that line")
    return None


def _first_bad_value(source: Path | IO[bytes], name: str, columns: tuple[str, ...]) -> DatasetError:
    """Describe the first field of a rejected CSV that is not a finite number."""
    try:
        frame = pd.read_csv(source, dtype=str, keep_default_na=False)
    except ValueError as exc:
        return DatasetError(f"{name}: malformed CSV ({exc}); expected {len(columns)} fields per line")
    numbers = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.argwhere(~np.isfinite(numbers))
    if len(bad) == 0:
        return DatasetError(f"{name}: cannot parse as {len(columns)} numeric columns")
    row, col = (int(i) for i in bad[0])
    return DatasetError(
        f"{name} line {row + 2}: column {columns[col]} = {str(frame.iat[row, col])!r} "
        f"is not a finite number"
    )


# -- splitting, balancing, scaling (shared with the synthetic stand-in) ------------------------

def balance_per_group(y: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows kept when every group is balanced 50/50 between label 0 and label 1.

    Within each group the minority class is kept whole and the majority class is downsampled to the
    same count by a draw without replacement from ``rng``. A group with only one class keeps nothing
    of it (it cannot be balanced). Returns sorted row indices (the original order is kept).
    """
    keep = []
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        by_class = [rows[y[rows] == label] for label in (0, 1)]
        n = min(len(part) for part in by_class)
        keep += [part if len(part) == n else rng.choice(part, size=n, replace=False) for part in by_class]
    return np.sort(np.concatenate(keep)) if keep else np.array([], dtype=np.int64)


def stratified_split(
    y: np.ndarray, groups: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split of every (group, label) cell: ``round(test_fraction * n)`` rows go to test.

    Returns sorted train and test row indices.
    """
    if not 0 < test_fraction < 1:
        raise DatasetError(f"test_fraction={test_fraction!r} must lie in (0, 1)")
    train, test = [], []
    for group in np.unique(groups):
        for label in np.unique(y[groups == group]):
            rows = rng.permutation(np.flatnonzero((groups == group) & (y == label)))
            n_test = int(round(test_fraction * len(rows)))
            test.append(rows[:n_test])
            train.append(rows[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """z-score both splits with the training mean and standard deviation (constant column: std 1)."""
    mean = train.mean(axis=0, dtype=np.float64)
    std = train.std(axis=0, dtype=np.float64)
    std = np.where(std > 0, std, 1.0)
    return ((train - mean) / std).astype(np.float32), ((test - mean) / std).astype(np.float32)


# -- entry point -------------------------------------------------------------------------------

def load_n_baiot(
    folder: str | Path,
    *,
    seed: int = 0,
    balance: bool = False,
    test_fraction: float = TEST_FRACTION,
) -> DatasetBundle:
    """Load N-BaIoT with one natural client per device (module docstring).

    Parameters
    ----------
    folder : str or Path
        The ``n_baiot`` folder.
    seed : int
        Seed of the balancing draw and of the train/test split.
    balance : bool
        Balance benign/attack 50/50 within each device before splitting.
    test_fraction : float
        Share of each (device, class) cell that goes to the test split.

    Returns
    -------
    DatasetBundle
        x float32 (N, 115) standardised on the training split; y binary; groups = device.
    """
    folder = Path(folder)
    found = find_files(folder)
    xs, ys, groups, attacks, records = [], [], [], [], []
    for device_index, files in enumerate(found.values()):
        for label, path in files:
            x = cached_arrays("n_baiot_csv", [path], functools.partial(_parse_csv, path))[0]["x"]
            xs.append(x)
            ys.append(np.full(len(x), 0 if label == "benign" else 1, dtype=np.int64))
            groups.append(np.full(len(x), device_index, dtype=np.int64))
            attacks.append(np.full(len(x), label, dtype=object))
            records.append(file_record(path, folder))
    x_all = np.concatenate(xs)
    y_all, g_all, a_all = np.concatenate(ys), np.concatenate(groups), np.concatenate(attacks).astype(str)
    rng = np.random.default_rng(seed)
    rows = balance_per_group(y_all, g_all, rng) if balance else np.arange(len(y_all))
    if len(rows) == 0:
        raise DatasetError(f"N-BaIoT in {folder}: no rows to load (balancing needs benign and attack rows per device)")
    train_rows, test_rows = stratified_split(y_all[rows], g_all[rows], test_fraction, rng)
    train_rows, test_rows = rows[train_rows], rows[test_rows]
    x_train, x_test = standardise(x_all[train_rows], x_all[test_rows])
    return DatasetBundle(
        name="n_baiot",
        train=ArraySplit(x_train, y_all[train_rows], g_all[train_rows], {"attack": a_all[train_rows]}),
        test=ArraySplit(x_test, y_all[test_rows], g_all[test_rows], {"attack": a_all[test_rows]}),
        num_classes=2,
        input_shape=(NUM_FEATURES,),
        group_names=list(found),
        class_names=list(CLASS_NAMES),
        source={
            "loader": "n_baiot",
            "folder": str(folder),
            "files": records,
            "seed": seed,
            "balance": balance,
            "test_fraction": test_fraction,
        },
    )


# -- partial real files (real_partial/) --------------------------------------------------------

REAL_PARTIAL_DIR = "real_partial"
"""Subfolder of the N-BaIoT folder with partial real files (module docstring)."""

MAX_ZIP_MEMBER_BYTES = 512 * 1024**2
"""Largest uncompressed member read or extracted from an N-BaIoT zip: 512 MiB. Used by the
``real_partial/`` reader and by ``fltrust data fetch n_baiot`` (:mod:`fltrust.data.fetch`). UCI CSVs
hold about 563 bytes per row (the mirror's gafgyt tcp/udp members: 57-59 MB for about 104,000 rows),
so the largest UCI CSV (Danmini_Doorbell mirai udp, 237,665 rows) is about 134 MB and the largest
benign file (Philips_B120N10_Baby_Monitor, 175,240 rows) about 99 MB; the archive's per-device
``.rar`` files are compressed and smaller than the CSVs they hold."""

MAX_ZIP_TOTAL_BYTES = 8 * 1024**3
"""Most bytes ``fltrust data fetch n_baiot`` extracts from the UCI archive in all: 8 GiB. Every one of
the 7,062,606 UCI rows as CSV is about 4.0 GB, so the archive (benign CSVs and compressed ``.rar`` files)
is well below it."""

LABEL_COLUMN = "Normal"
"""Label column of a labelled CSV: 1 = benign, 0 = attack."""

META_COLUMNS = ("device", "traffic", "label", "file")
"""Columns of :func:`load_n_baiot_real_partial` before the 115 features."""

_ATTACK = rf"gafgyt\.(?:{'|'.join(GAFGYT_ATTACKS)})|mirai\.(?:{'|'.join(MIRAI_ATTACKS)})"
_UNLABELLED_NAME = re.compile(rf"(?P<n>[1-9])\.(?P<traffic>benign|{_ATTACK})\.(?:csv|zip)")
_LABELLED_NAME = re.compile(rf"(?P<n>[1-9])\.benign\+(?P<traffic>{_ATTACK})(?:\.[A-Za-z0-9_-]+)?\.csv")


def find_real_partial_files(folder: str | Path) -> list[tuple[str, str, Path]]:
    """``(device, traffic, path)`` of every partial real file in ``<folder>/real_partial``, by name.

    ``traffic`` is ``"benign"``, ``"<family>.<attack>"`` or, for a labelled CSV,
    ``"benign+<family>.<attack>"``. Other files (``SHA256SUMS``, notes) are ignored, but a ``.csv``
    or ``.zip`` whose name does not follow the module docstring is an error.

    Parameters
    ----------
    folder : str or Path
        The ``n_baiot`` folder.

    Returns
    -------
    list of tuple
        Sorted by file name.

    Raises
    ------
    DatasetNotFoundError
        If ``real_partial/`` is absent or holds no such file.
    DatasetError
        If a ``.csv``/``.zip`` there has a name the loader cannot place.
    """
    base = Path(folder) / REAL_PARTIAL_DIR
    found = []
    for path in sorted(base.iterdir()) if base.is_dir() else []:
        if not path.is_file() or path.suffix.lower() not in (".csv", ".zip"):
            continue
        match = _UNLABELLED_NAME.fullmatch(path.name) or _LABELLED_NAME.fullmatch(path.name)
        if match is None:
            raise DatasetError(
                f"{path}: cannot tell its device and traffic from the name; rename it "
                f"<n>.<traffic>.zip, <n>.<traffic>.csv or <n>.benign+<family>.<attack>[.<note>].csv "
                f"(n = device number 1-9, traffic = benign, gafgyt.<attack> or mirai.<attack>)"
            )
        labelled = match.re is _LABELLED_NAME
        traffic = f"benign+{match['traffic']}" if labelled else match["traffic"]
        found.append((DEVICES[int(match["n"]) - 1], traffic, path))
    if not found:
        raise DatasetNotFoundError(
            f"no partial real N-BaIoT files in {base}: expected <n>.<traffic>.zip (one CSV inside), "
            f"<n>.<traffic>.csv or a labelled <n>.benign+<family>.<attack>.csv"
        )
    return found


def read_zip_member(path: Path, max_bytes: int = MAX_ZIP_MEMBER_BYTES) -> tuple[str, bytes]:
    """Name and bytes of the single CSV member of a zip, read in memory (never extracted).

    Parameters
    ----------
    path : Path
        The zip file.
    max_bytes : int
        Refuse a member whose declared uncompressed size is larger. :mod:`zipfile` never inflates
        past the declared size and then checks the CRC, so a member that understates its size fails
        as corrupt instead of filling memory.

    Returns
    -------
    name, data : str, bytes
        The member's name inside the zip and its content.

    Raises
    ------
    DatasetError
        Not a readable zip, not exactly one ``.csv`` member, or a member over ``max_bytes``.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = [m for m in archive.infolist() if not m.is_dir()]
            if len(members) != 1 or not members[0].filename.lower().endswith(".csv"):
                raise DatasetError(
                    f"{path}: expected exactly one CSV member, found {[m.filename for m in members]}; "
                    f"put one N-BaIoT CSV in each zip"
                )
            member = members[0]
            if member.file_size > max_bytes:
                raise DatasetError(
                    f"{path}: member {member.filename} is larger than {max_bytes:,} bytes uncompressed "
                    f"(declared {member.file_size:,}); refused as a possible zip bomb (not an N-BaIoT CSV)"
                )
            with archive.open(member) as handle:
                data = handle.read()
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        raise unreadable(path, f"cannot read as a zip ({exc})", "n_baiot") from exc
    return member.filename, data


def _parse_real_partial(path: Path, traffic: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``x`` float32 (N, 115) and ``y`` (0 benign, 1 attack) of one partial real file."""
    labelled = traffic.startswith("benign+")  # only a .csv name can say so
    if path.suffix.lower() == ".zip":
        member, data = read_zip_member(path)
        values = _read_numeric_csv(lambda: io.BytesIO(data), f"{path.name}:{member}", FEATURE_NAMES, path)
    else:
        values = _read_numeric_csv(lambda: path, path.name, FEATURE_NAMES + ((LABEL_COLUMN,) if labelled else ()), path)
    y = np.full(len(values), 0 if traffic == "benign" else 1, dtype=np.int64)
    if labelled:
        normal = values[:, -1]
        if not np.isin(normal, (0, 1)).all():
            row = int(np.flatnonzero(~np.isin(normal, (0, 1)))[0])
            raise DatasetError(
                f"{path.name} line {row + 2}: column {LABEL_COLUMN} = {float(normal[row]):g}; "
                f"expected 1 (benign) or 0 (attack)"
            )
        values, y = values[:, :-1], (normal == 0).astype(np.int64)
    return {"x": values.astype(np.float32), "y": y}, {"rows": len(values)}


def load_n_baiot_real_partial(folder: str | Path) -> pd.DataFrame:
    """Every row of the partial real files in ``<folder>/real_partial`` (module docstring), unscaled.

    Parameters
    ----------
    folder : str or Path
        The ``n_baiot`` folder.

    Returns
    -------
    pandas.DataFrame
        One row per traffic row, files in name order and rows in file order. Columns
        :data:`META_COLUMNS` -- ``device`` (name), ``traffic`` (``"benign"`` or
        ``"<family>.<attack>"``, also for the rows of a labelled CSV), ``label`` (0 benign, 1 attack),
        ``file`` (path relative to ``folder``) -- then the 115 :data:`FEATURE_NAMES` as float32.

    Raises
    ------
    DatasetNotFoundError
        No partial real files.
    DatasetError
        A file is unreadable, has another header, a non-numeric value, a bad label or (zip) not
        exactly one CSV member.
    """
    folder = Path(folder)
    parts = []
    for device, traffic, path in find_real_partial_files(folder):
        # disk=False: these parse in well under a second, and a disk entry would copy ~48 MB per flood file
        arrays = cached_arrays("n_baiot_real_partial", [path], functools.partial(_parse_real_partial, path, traffic),
                               options={"traffic": traffic}, disk=False)[0]
        attack = traffic.removeprefix("benign+")
        meta = pd.DataFrame({
            "device": device,
            "traffic": np.where(arrays["y"] == 0, "benign", attack),
            "label": arrays["y"].astype(np.int8),
            "file": str(path.relative_to(folder)),
        })
        parts.append(pd.concat([meta, pd.DataFrame(np.array(arrays["x"]), columns=list(FEATURE_NAMES))], axis=1))
    frame = pd.concat(parts, ignore_index=True)
    for column in ("device", "traffic", "file"):
        frame[column] = frame[column].astype("category")
    return frame


def real_partial_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Row counts of :func:`load_n_baiot_real_partial`'s frame (``fltrust data info``).

    Parameters
    ----------
    frame : pandas.DataFrame
        The partial real rows.

    Returns
    -------
    dict
        ``rows``, ``benign_rows``, ``attack_rows``, ``devices`` (device -> traffic -> rows, in
        :data:`DEVICES` order) and ``files`` (relative path -> rows).

    Examples
    --------
    >>> rows = pd.DataFrame({"device": ["Danmini_Doorbell"] * 3, "traffic": ["benign", "benign", "gafgyt.scan"],
    ...                      "label": [0, 0, 1], "file": ["real_partial/a.csv"] * 3})
    >>> real_partial_summary(rows)["devices"]
    {'Danmini_Doorbell': {'benign': 2, 'gafgyt.scan': 1}}
    """
    devices: dict[str, dict[str, int]] = {}
    for (device, traffic), n in frame.groupby(["device", "traffic"], observed=True).size().items():
        devices.setdefault(str(device), {})[str(traffic)] = int(n)
    return {
        "rows": len(frame),
        "benign_rows": int((frame["label"] == 0).sum()),
        "attack_rows": int((frame["label"] == 1).sum()),
        "devices": {d: devices[d] for d in DEVICES if d in devices},
        "files": {str(k): int(v) for k, v in frame.groupby("file", observed=True).size().items()},
    }
