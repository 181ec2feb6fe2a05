"""CIFAR-10 (Krizhevsky 2009) as float32 NCHW images in [-1, 1].

Two layouts are read from ``<data root>/cifar10/``:

(a) the official python batches (the torchvision layout): ``data_batch_1`` ... ``data_batch_5`` and
    ``test_batch`` in ``cifar10/cifar-10-batches-py/`` or directly in ``cifar10/``. Each batch is a
    pickled dict with ``b"data"`` (N, 3072) uint8 (channel-major, so a reshape gives NCHW) and
    ``b"labels"``. Unpickling can run code, so a batch is only read when it is an official file:
    its SHA-256 must equal the official one (:data:`OFFICIAL_SHA256`), checked before anything is
    unpickled; any other file is one data error naming it (save your own images as an npz, which
    needs no pickle). Even then it is read with a restricted unpickler that rebuilds only what the
    official files hold (dicts, lists, bytes, str, numbers and uint8 numpy arrays).
(b) one or several ``.npz`` parts (plain arrays, no pickle): ``x_train`` uint8 (N, 32, 32, 3) NHWC,
    ``y_train`` (N,), ``x_test``, ``y_test`` and optionally ``client_train`` / ``client_test``
    (source-client ids, which become natural clients). Every ``*.npz`` in the folder is read, in
    sorted name order, and the parts are concatenated split by split; client ids are global, so one
    client may have rows in several parts. The shared mirror has three parts of one federated PFLlib
    partition (clients 0-49, clients 50-99, and a fill of client 75's train images): 59,799 of the
    60,000 real images, NOT the official train/test split (data/PROVENANCE.md#cifar10).

The official batches win when both are present. ``train_files`` may pick npz parts
(``["name.npz", ...]``) or name the batch files to read (with ``test_files``, default ``test_batch``).

Pixels are scaled as torchvision's ``ToTensor`` + ``Normalize(0.5, 0.5)`` did for the fairness
authors (fairness spec 6.5, docs/references.md#fairness-6-5): :math:`x' = (x/255 - 0.5)/0.5 \\in [-1, 1]` (the paper
says [0, 1]).
"""

from __future__ import annotations

import functools
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.data.base import ArraySplit, DatasetBundle, DatasetError, unreadable
from fltrust.data.cache import DatasetNotFoundError, cached_arrays, file_record, file_sha256, require_files

CLASS_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
INPUT_SHAPE = (3, 32, 32)
BATCHES_DIR = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCHES = ("test_batch",)
NPZ_REQUIRED = ("x_train", "y_train", "x_test", "y_test")


def normalise(images: np.ndarray) -> np.ndarray:
    """uint8 pixels -> float32 in [-1, 1]: ``(x / 255 - 0.5) / 0.5`` (ToTensor + Normalize(0.5, 0.5))."""
    return (images.astype(np.float32, order="C") / np.float32(255.0) - np.float32(0.5)) / np.float32(0.5)


# -- layout (a): python batches ----------------------------------------------------------------

def _batch_folder(folder: Path) -> Path | None:
    """The folder that holds the official batches, if any."""
    for candidate in (folder / BATCHES_DIR, folder):
        if all((candidate / name).is_file() for name in TRAIN_BATCHES + TEST_BATCHES):
            return candidate
    return None


OFFICIAL_SHA256 = {
    # SHA-256 of the files in the official cifar-10-python.tar.gz, as three independent public
    # projects pin them (torchvision pins the MD5s: data_batch_1 c99cafc152244af753f735de768cd75f, ...).
    "data_batch_1": "54636561a3ce25bd3e19253c6b0d8538147b0ae398331ac4a2d86c6d987368cd",
    "data_batch_2": "766b2cef9fbc745cf056b3152224f7cf77163b330ea9a15f9392beb8b89bc5a8",
    "data_batch_3": "0f00d98ebfb30b3ec0ad19f9756dc2630b89003e10525f5e148445e82aa6a1f9",
    "data_batch_4": "3f7bb240661948b8f4d53e36ec720d8306f5668bd0071dcb4e6c947f78e9682b",
    "data_batch_5": "d91802434d8376bbaeeadf58a737e3a1b12ac839077e931237e0dcd43adcb154",
    "test_batch": "f53d8d457504f7cff4ea9e021afcf0e0ad8e24a91f3fc42091b8adef61157831",
    "batches.meta": "f962466ef690d46b226450fb9aadc74ba4bc64a76aa526b5827fe4bc5c7125cb",
}
"""SHA-256 of the official python batches by file name (the registry's known checksums)."""


class _Refused(pickle.UnpicklingError):
    """A batch references something an official batch never does (it is not built)."""


class _BatchUnpickler(pickle.Unpickler):
    """Rebuilds only what an official batch holds: the pickle's own dicts, lists, bytes, str and
    numbers, and numpy arrays (``_reconstruct``, ``ndarray``, ``dtype``; ``numpy.core`` as the
    official files were written, ``numpy._core`` as NumPy 2 writes them). Any other global -- a
    class, ``os.system`` -- is refused before it is looked up, so nothing in the file runs."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise _Refused(f"it references {module}.{name}, which an official batch never does; it was "
                           "refused, so nothing in the file ran")
        if name == "_reconstruct":
            try:
                from numpy._core.multiarray import _reconstruct
            except ImportError:  # NumPy 1
                from numpy.core.multiarray import _reconstruct
            return _reconstruct
        return getattr(np, name)

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("it holds a persistent reference, which an official batch never does")


def _parse_batches(paths: list[Path]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Concatenate python batches into ``x`` uint8 (N, 3, 32, 32) and ``y`` int64 (restricted unpickler)."""
    images, labels = [], []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                batch = _BatchUnpickler(handle, encoding="bytes").load()
        except _Refused as exc:  # not corrupt: planted, or not a CIFAR-10 batch at all
            raise DatasetError(f"{path}: not a CIFAR-10 python batch: {exc}") from None
        except Exception as exc:  # EOFError, ValueError, ... : any failure is a bad file
            raise unreadable(path, f"not a CIFAR-10 python batch ({type(exc).__name__}: {exc})", "cifar10") from exc
        if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
            raise DatasetError(f"{path.name}: expected a pickled dict with keys b'data' and b'labels'")
        data = np.asarray(batch[b"data"])
        if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
            raise DatasetError(f"{path.name}: b'data' must be uint8 (N, 3072), got {data.dtype} {data.shape}")
        label = np.asarray(batch[b"labels"], dtype=np.int64)
        if label.shape != (len(data),):
            raise DatasetError(f"{path.name}: {len(label)} labels for {len(data)} images")
        images.append(data.reshape(-1, *INPUT_SHAPE))
        labels.append(label)
    return {"x": np.concatenate(images), "y": np.concatenate(labels)}, {}


def _check_labels(y: np.ndarray, where: str) -> None:
    if len(y) and (y.min() < 0 or y.max() >= len(CLASS_NAMES)):
        raise DatasetError(f"{where}: labels must lie in 0..9, found {int(y.min())}..{int(y.max())}")


def check_official(paths: list[Path]) -> None:
    """Refuse (one :class:`DatasetError`) any python batch that is not an official file, before it
    is unpickled: its name must be an official batch's and its SHA-256 that batch's."""
    for path in paths:
        expected = OFFICIAL_SHA256.get(path.name)
        digest = file_sha256(path)
        if digest != expected:
            why = (f"sha256 {digest} differs from the official {path.name}'s {expected}" if expected
                   else f"{path.name!r} is not an official batch name ({', '.join(TRAIN_BATCHES + TEST_BATCHES)})")
            raise DatasetError(
                f"{path}: {why}; python batches run code when unpickled, so only the official files are read: "
                "re-fetch them with `fltrust data fetch cifar10`, or save your own images as an npz (no pickle)"
            )


def _load_batches(batch_dir: Path, folder: Path, train_files: list[str], test_files: list[str]) -> DatasetBundle:
    train_paths = require_files(batch_dir, train_files, "CIFAR-10 python batches")
    test_paths = require_files(batch_dir, test_files, "CIFAR-10 python batches")
    check_official(train_paths + test_paths)
    splits = {}
    for split, paths in (("train", train_paths), ("test", test_paths)):
        arrays, _ = cached_arrays("cifar10_batches", paths, functools.partial(_parse_batches, paths), disk=False)
        _check_labels(arrays["y"], f"{batch_dir.name} {split} batches")
        splits[split] = ArraySplit(x=normalise(arrays["x"]), y=arrays["y"].copy())
    return _bundle(splits, "python_batches", folder, train_paths + test_paths)


def _bundle(splits: dict[str, ArraySplit], layout: str, folder: Path, paths: list[Path],
            group_names: list[str] | None = None) -> DatasetBundle:
    """The CIFAR-10 bundle of the ``train`` and ``test`` splits read from ``paths`` in one layout."""
    return DatasetBundle(
        name="cifar10",
        train=splits["train"],
        test=splits["test"],
        num_classes=10,
        input_shape=INPUT_SHAPE,
        group_names=group_names,
        class_names=list(CLASS_NAMES),
        source={"loader": "cifar10", "layout": layout, "folder": str(folder),
                "files": [file_record(p, folder) for p in paths]},
    )


# -- layout (b): npz ---------------------------------------------------------------------------

def _parse_npz(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read and check a CIFAR npz; images stay uint8 NHWC."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except Exception as exc:  # EOFError (empty), BadZipFile (truncated), zlib.error, ...
        reason = f"not a readable npz without pickles ({type(exc).__name__}: {str(exc) or 'no data'})"
        raise unreadable(path, reason, "cifar10") from exc
    for name in NPZ_REQUIRED:
        if name not in arrays:
            raise DatasetError(
                f"{path.name}: missing array {name!r}; "
                f"expected {list(NPZ_REQUIRED)} (+ optional client_train/client_test)"
            )
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.dtype != np.uint8 or x.ndim != 4 or x.shape[1:] != (32, 32, 3):
            raise DatasetError(
                f"{path.name}: x_{split} must be uint8 (N, 32, 32, 3) NHWC, got {x.dtype} {x.shape}"
            )
        if y.ndim != 1 or len(y) != len(x) or y.dtype.kind not in "iu":
            raise DatasetError(
                f"{path.name}: y_{split} must be integer (N,) with N = {len(x)}, got {y.dtype} {y.shape}"
            )
        _check_labels(y, f"{path.name} y_{split}")
        client = arrays.get(f"client_{split}")
        if client is not None and (client.shape != y.shape or client.dtype.kind not in "iu"):
            raise DatasetError(
                f"{path.name}: client_{split} must be integer (N,) like y_{split}, got {client.dtype} {client.shape}"
            )
    if ("client_train" in arrays) != ("client_test" in arrays):
        raise DatasetError(f"{path.name}: give both client_train and client_test or neither")
    return {k: v for k, v in arrays.items() if k in NPZ_REQUIRED + ("client_train", "client_test")}, {}


def _load_npz(paths: list[Path], folder: Path) -> DatasetBundle:
    """Read the npz ``paths`` (each checked and cached on its own) and concatenate them by split."""
    parts = [cached_arrays("cifar10_npz", [path], functools.partial(_parse_npz, path), disk=False)[0] for path in paths]
    with_ids = ["client_train" in part for part in parts]
    if any(with_ids) and not all(with_ids):
        bare = next(p.name for p, has in zip(paths, with_ids) if not has)
        raise DatasetError(
            f"{bare}: no client_train/client_test while other npz parts have them; give every part client ids or none"
        )
    arrays = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    groups: dict[str, np.ndarray | None] = {"train": None, "test": None}
    group_names = None
    if "client_train" in arrays:
        ids = np.union1d(arrays["client_train"], arrays["client_test"])
        groups = {s: np.searchsorted(ids, arrays[f"client_{s}"]).astype(np.int64) for s in ("train", "test")}
        group_names = [f"client_{int(i)}" for i in ids]
    splits = {
        s: ArraySplit(
            x=normalise(arrays[f"x_{s}"].transpose(0, 3, 1, 2)),
            y=arrays[f"y_{s}"].astype(np.int64),
            groups=groups[s],
        )
        for s in ("train", "test")
    }
    return _bundle(splits, "npz", folder, paths, group_names)


# -- entry point -------------------------------------------------------------------------------

def find_cifar10(folder: Path) -> tuple[str, list[Path]]:
    """Which layout ``folder`` holds: ``("python_batches", [batch folder])`` or ``("npz", parts)``.

    Raises
    ------
    DatasetNotFoundError
        If neither the six official batches nor any ``.npz`` is present.
    """
    batch_dir = _batch_folder(folder)
    if batch_dir is not None:
        return "python_batches", [batch_dir]
    npz = sorted(folder.glob("*.npz")) if folder.is_dir() else []
    if npz:
        return "npz", npz
    raise DatasetNotFoundError(
        f"CIFAR-10 not found in {folder}: expected the official python batches "
        f"({', '.join(TRAIN_BATCHES + TEST_BATCHES)}) in {folder / BATCHES_DIR} or {folder}, "
        f"or .npz parts with arrays {list(NPZ_REQUIRED)}; run `fltrust data fetch cifar10`"
    )


def load_cifar10(
    folder: str | Path,
    *,
    train_files: list[str] | None = None,
    test_files: list[str] | None = None,
) -> DatasetBundle:
    """Load CIFAR-10 from the official python batches or a CIFAR npz (module docstring).

    Parameters
    ----------
    folder : str or Path
        The ``cifar10`` folder.
    train_files : list of str, optional
        ``["<name>.npz", ...]`` picks npz parts in ``folder`` (default: every ``*.npz`` there);
        otherwise python batch names, read from ``folder/cifar-10-batches-py`` if that exists,
        else ``folder``.
    test_files : list of str, optional
        Python batch names of the test split (default ``["test_batch"]``); not used with an npz.

    Returns
    -------
    DatasetBundle
        x float32 (N, 3, 32, 32) in [-1, 1]; with an npz that has client ids, ``groups`` and
        ``group_names`` (``client_<id>``) give the natural clients.
    """
    folder = Path(folder)
    if train_files:
        if all(name.endswith(".npz") for name in train_files):
            if test_files:
                raise DatasetError("cifar10: with npz parts give only data.train_files, no data.test_files")
            return _load_npz(require_files(folder, train_files, "CIFAR-10 npz"), folder)
        batch_dir = folder / BATCHES_DIR if (folder / BATCHES_DIR).is_dir() else folder
        return _load_batches(batch_dir, folder, list(train_files), list(test_files or TEST_BATCHES))
    if test_files:
        raise DatasetError("cifar10: data.test_files needs data.train_files (python batch names)")
    layout, where = find_cifar10(folder)
    if layout == "python_batches":
        return _load_batches(where[0], folder, list(TRAIN_BATCHES), list(TEST_BATCHES))
    return _load_npz(where, folder)
