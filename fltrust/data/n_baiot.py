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
  device names. A device is a natural client (FederatedTrust experiments 4 and 5, trust spec 7.1).
- Train/test: a seeded stratified split per device and class, 80/20 by default.
- ``balance=True``: before the split, each device keeps all rows of its minority class and an equal,
  seeded random draw of its majority class (50/50 benign/attack per client, trust experiment 5).
- x: float32 (N, 115), standardised per column with the mean and standard deviation of the training
  split, :math:`x' = (x - \\mu_j)/\\sigma_j` (a constant column keeps :math:`\\sigma_j = 1`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    try:
        header = tuple(str(c).strip() for c in pd.read_csv(path, nrows=0).columns)
    except (OSError, ValueError) as exc:
        raise unreadable(path, f"cannot read as CSV ({exc})", "n_baiot") from exc
    if header != FEATURE_NAMES:
        raise DatasetError(
            f"{path.name}: expected the {NUM_FEATURES}-column N-BaIoT header "
            f"({FEATURE_NAMES[0]}, ..., {FEATURE_NAMES[-1]}), "
            f"got {len(header)} columns starting {list(header[:3])}"
        )
    try:
        values = pd.read_csv(path, dtype=np.float64).to_numpy()
    except ValueError:  # a non-numeric field or a ragged row
        values = None
    if values is None or not np.isfinite(values).all():
        raise _first_bad_value(path)
    return {"x": values.astype(np.float32)}, {"rows": len(values)}


def _first_bad_value(path: Path) -> DatasetError:
    """Describe the first field of a rejected CSV that is not a finite number."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except ValueError as exc:
        return DatasetError(f"{path.name}: malformed CSV ({exc}); expected {NUM_FEATURES} fields per line")
    numbers = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.argwhere(~np.isfinite(numbers))
    if len(bad) == 0:
        return DatasetError(f"{path.name}: cannot parse as {NUM_FEATURES} numeric columns")
    row, col = (int(i) for i in bad[0])
    return DatasetError(
        f"{path.name} line {row + 2}: column {FEATURE_NAMES[col]} = {str(frame.iat[row, col])!r} "
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
    for device_index, (device, files) in enumerate(found.items()):
        for label, path in files:
            x = cached_arrays("n_baiot_csv", [path], lambda path=path: _parse_csv(path))[0]["x"]
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
    splits = {
        "train": ArraySplit(x_train, y_all[train_rows], g_all[train_rows], {"attack": a_all[train_rows]}),
        "test": ArraySplit(x_test, y_all[test_rows], g_all[test_rows], {"attack": a_all[test_rows]}),
    }
    return DatasetBundle(
        name="n_baiot",
        train=splits["train"],
        test=splits["test"],
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
