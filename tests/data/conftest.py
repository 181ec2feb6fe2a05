"""Fixtures of the dataset tests: an isolated cache, a network guard and tiny dataset writers.

Every test here runs with ``$FLTRUST_CACHE`` in a per-session temporary folder (never the user's
cache) and with the downloader replaced by one that raises ``URLError``: no test touches the network.
The writers below reach the tests through the ``mk`` fixture (``mk.kdd_line(...)``); real-data tests
use ``mk.real_folder``, which skips when the files are absent.
"""

from __future__ import annotations

import json
import os
import pickle
import urllib.error
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fltrust.data import cache, fetch, n_baiot, nsl_kdd

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated_cache_and_no_network(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Session-wide temporary cache (real-data parses are shared) and a downloader that fails."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path_factory.getbasetemp() / "fltrust-data-cache"))

    def offline(url: str, dest: Path, timeout: float) -> None:
        raise urllib.error.URLError("network access is disabled in tests")

    monkeypatch.setattr(fetch, "_download", offline)


@pytest.fixture(autouse=True)
def official_test_batches(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A per-test copy of the official batch sums, which :func:`write_cifar_batch` extends."""
    from fltrust.data import cifar10

    sums = dict(cifar10.OFFICIAL_SHA256)
    monkeypatch.setattr(cifar10, "OFFICIAL_SHA256", sums)
    return sums


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory and an empty memory cache for this test only."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    cache.clear_memory_cache()
    yield folder
    cache.clear_memory_cache()


def real_folder(name: str, *required: str) -> Path:
    """``$FLTRUST_DATA/<name>`` when it holds ``required`` files, else skip the test."""
    root = Path(os.environ.get("FLTRUST_DATA", REPO / "data"))
    folder = root / name
    missing = [r for r in required if not (folder / r).exists()]
    if not folder.is_dir() or missing:
        pytest.skip(f"real {name} data not found in {folder} (missing {missing or [name]})")
    return folder


# -- NSL-KDD -----------------------------------------------------------------------------------

def kdd_line(
    protocol: str = "tcp",
    service: str = "http",
    flag: str = "SF",
    label: str = "normal",
    difficulty: int = 20,
    **continuous: float,
) -> str:
    """One NSL-KDD text line; continuous columns default to 0."""
    unknown = set(continuous) - set(nsl_kdd.CONTINUOUS_COLUMNS)
    assert not unknown, unknown
    values = {c: continuous.get(c, 0) for c in nsl_kdd.CONTINUOUS_COLUMNS}
    values.update(protocol_type=protocol, service=service, flag=flag)
    fields = [str(values[c]) for c in nsl_kdd.KDD_COLUMNS] + [label, str(difficulty)]
    return ",".join(fields)


def write_lines(path: Path, lines: list[str]) -> Path:
    """Write lines to a text file (creating its folder) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


# -- CIFAR-10 ----------------------------------------------------------------------------------

def write_cifar_batch(path: Path, data: np.ndarray, labels: list[int]) -> None:
    """A python batch like the official ones: pickled dict with b'data' (N, 3072) and b'labels'.

    The loader reads only batches whose SHA-256 is the official file's; the fixture
    ``official_test_batches`` lets a test's own batches pass that check by adding their sums to a
    per-test copy of :data:`fltrust.data.cifar10.OFFICIAL_SHA256`.
    """
    from fltrust.data import cifar10
    from fltrust.data.cache import file_sha256

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        pickle.dump({b"batch_label": b"test", b"labels": labels, b"data": data}, handle)
    cifar10.OFFICIAL_SHA256[path.name] = file_sha256(path)


def write_cifar_batches(folder: Path, per_batch: int = 2, test: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    """The six official batch files with random pixels; returns the raw arrays written."""
    rng = np.random.default_rng(seed)
    train = rng.integers(0, 256, size=(5 * per_batch, 3072), dtype=np.uint8)
    train_y = rng.integers(0, 10, size=5 * per_batch)
    for i in range(5):
        rows = slice(i * per_batch, (i + 1) * per_batch)
        write_cifar_batch(folder / f"data_batch_{i + 1}", train[rows], train_y[rows].tolist())
    test_x = rng.integers(0, 256, size=(test, 3072), dtype=np.uint8)
    test_y = rng.integers(0, 10, size=test)
    write_cifar_batch(folder / "test_batch", test_x, test_y.tolist())
    return {"x_train": train, "y_train": train_y, "x_test": test_x, "y_test": test_y}


# -- FEMNIST -----------------------------------------------------------------------------------

def leaf_shard(users: dict[str, tuple[np.ndarray, list[int]]]) -> dict[str, object]:
    """A LEAF JSON object from ``{user: (x (n, 784), y)}``."""
    return {
        "users": list(users),
        "num_samples": [len(y) for _, y in users.values()],
        "user_data": {u: {"x": np.asarray(x).tolist(), "y": list(y)} for u, (x, y) in users.items()},
    }


def write_json(path: Path, obj: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return path


def write_tff_h5(path: Path, writers: dict[str, tuple[np.ndarray, list[int]]], label_column: bool = False) -> Path:
    """A federated EMNIST h5 file in TFF's layout from ``{writer: (x (n, 784), y)}``: group ``examples``,
    one group per writer with ``label`` int32 (n,) (``label_column``: (n, 1)) and ``pixels`` float32
    (n, 28, 28). Needs h5py (tests that call it skip without it)."""
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as handle:
        examples = handle.create_group("examples")
        for writer, (x, y) in writers.items():
            group = examples.create_group(writer)
            labels = np.asarray(y, dtype=np.int32)
            group.create_dataset("label", data=labels.reshape(-1, 1) if label_column else labels)
            group.create_dataset("pixels", data=np.asarray(x, dtype=np.float32).reshape(-1, 28, 28))
    return path


# -- N-BaIoT -----------------------------------------------------------------------------------

def n_baiot_sample_rows(name: str, count: int, seed: int) -> np.ndarray:
    """Rows of a real N-BaIoT sample file (the shared format sample), else random rows."""
    sample = Path(os.environ.get("FLTRUST_DATA", REPO / "data")) / "n_baiot" / name
    if sample.is_file():
        rows = np.loadtxt(sample, delimiter=",", skiprows=1, max_rows=count)
        if len(rows) == count:
            return rows
    return np.random.default_rng(seed).gamma(2.0, 50.0, size=(count, n_baiot.NUM_FEATURES))


def write_n_baiot_csv(path: Path, rows: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ",".join(n_baiot.FEATURE_NAMES)
    body = "\n".join(",".join(repr(float(v)) for v in row) for row in rows)
    path.write_text(header + "\n" + body + ("\n" if len(rows) else ""))
    return path


N_BAIOT_FIXTURE = {
    # device -> {traffic label: (sample file, first row, row count)}
    "Danmini_Doorbell": {"benign": ("benign_traffic.csv", 0, 40), "gafgyt.udp": ("doorbell_udp.csv", 0, 50),
                         "mirai.scan": ("scan.csv", 0, 30)},
    "Ecobee_Thermostat": {"benign": ("benign_traffic.csv", 40, 25), "gafgyt.udp": ("thermostat_udp.csv", 0, 60)},
    "Ennio_Doorbell": {"benign": ("benign_traffic.csv", 65, 20), "gafgyt.scan": ("scan.csv", 30, 35)},
}  # fmt: skip


@pytest.fixture(scope="session")
def n_baiot_rows() -> dict[str, dict[str, np.ndarray]]:
    """The raw rows of the N-BaIoT fixture, by device and traffic label."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for d, (device, traffic) in enumerate(N_BAIOT_FIXTURE.items()):
        out[device] = {}
        for t, (label, (name, first, count)) in enumerate(traffic.items()):
            rows = n_baiot_sample_rows(name, first + count, seed=10 * d + t)
            out[device][label] = rows[first : first + count]
    return out


def write_n_baiot_uci(folder: Path, rows: dict[str, dict[str, np.ndarray]]) -> Path:
    """The UCI device-folder layout: <device>/benign_traffic.csv, <device>/<family>_attacks/<attack>.csv."""
    for device, traffic in rows.items():
        for label, values in traffic.items():
            if label == "benign":
                write_n_baiot_csv(folder / device / "benign_traffic.csv", values)
            else:
                family, attack = label.split(".")
                write_n_baiot_csv(folder / device / f"{family}_attacks" / f"{attack}.csv", values)
    return folder


def write_n_baiot_flat(folder: Path, rows: dict[str, dict[str, np.ndarray]]) -> Path:
    """The flat layout: <n>.benign.csv, <n>.<family>.<attack>.csv."""
    for device, traffic in rows.items():
        number = n_baiot.DEVICES.index(device) + 1
        for label, values in traffic.items():
            write_n_baiot_csv(folder / f"{number}.{label}.csv", values)
    return folder


@pytest.fixture(scope="session")
def mk() -> SimpleNamespace:
    """The dataset writers of this module as one namespace."""
    return SimpleNamespace(
        real_folder=real_folder,
        kdd_line=kdd_line,
        write_lines=write_lines,
        write_cifar_batch=write_cifar_batch,
        write_cifar_batches=write_cifar_batches,
        leaf_shard=leaf_shard,
        write_json=write_json,
        write_tff_h5=write_tff_h5,
        write_n_baiot_csv=write_n_baiot_csv,
        write_n_baiot_uci=write_n_baiot_uci,
        write_n_baiot_flat=write_n_baiot_flat,
    )


@pytest.fixture
def kdd_root(tmp_path, mk):
    """A data root with a tiny NSL-KDD folder: 10 training rows (normal / smurf), KDDTest+.txt (4 rows)
    and KDDTest-21.txt (1 row)."""
    folder = tmp_path / "root" / "nsl_kdd"
    train = [mk.kdd_line(src_bytes=i, label="normal" if i % 2 else "smurf") for i in range(10)]
    mk.write_lines(folder / "KDDTrain+.txt", train)
    mk.write_lines(folder / "KDDTest+.txt", [mk.kdd_line(src_bytes=i) for i in range(4)])
    mk.write_lines(folder / "KDDTest-21.txt", [mk.kdd_line(src_bytes=99)])
    return tmp_path / "root"
