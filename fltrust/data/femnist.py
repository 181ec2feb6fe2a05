"""FEMNIST (LEAF, Caldas et al. 2018) with writers as natural clients.

Files
-----
LEAF JSON shards in ``<data root>/femnist/train/`` and ``<data root>/femnist/test/``, as written
by LEAF's ``preprocess.sh``, plain (``*.json``) or gzipped (``*.json.gz``, the unchanged JSON).
Each shard is an object with keys ``users`` (writer ids), ``num_samples`` and
``user_data = {user: {"x": [[784 floats in 0..1], ...], "y": [int, ...]}}``. LEAF splits every
writer's samples into train and test, so a writer appears in both splits.

Several LEAF runs
-----------------
LEAF samples writers independently in every run, so shards of two runs (file names with different
prefixes, e.g. ``slz_all_data_3_...`` and ``all_data_3_...``) can hold the same writer id with
different samples (the last writer drawn into a shard is truncated). A writer's *copy* is its
samples in one train/test shard pair (the file names equal once ``_train_``/``_test_`` and ``.gz``
are dropped). :func:`load_femnist` keeps **one copy per writer id: the one with the most samples**
(train + test); ties go to the copy whose first file comes first in sorted path order. Every
other copy is dropped, and ``source["duplicate_copies_dropped"]`` counts them.

Output
------
- x: float32 (N, 1, 28, 28), pixel values exactly as stored by LEAF (in [0, 1]; LEAF's images
  are inverted, background near 1). No normalisation, as the fairness authors (spec 6.6).
- y: int64 in 0..61: 0-9 digits, 10-35 ``A``-``Z``, 36-61 ``a``-``z`` (:data:`CLASS_NAMES`).
- groups: writer index, the same index in train and test; ``group_names`` are the writer ids.
  Writers are numbered in order of first appearance, reading the train shards and then the test
  shards in natural file-name order (``all_data_2`` before ``all_data_10``).

Parsing the JSON is slow (tens of MB of decimal text), so each split is parsed once and cached
(:mod:`fltrust.data.cache`).
"""

from __future__ import annotations

import gzip
import json
import re
import string
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.data.base import ArraySplit, DatasetBundle, DatasetError, unreadable
from fltrust.data.cache import DatasetNotFoundError, cached_arrays, file_record, require_files

CLASS_NAMES = list(string.digits + string.ascii_uppercase + string.ascii_lowercase)
"""The 62 FEMNIST classes: digits, upper-case letters, lower-case letters."""
INPUT_SHAPE = (1, 28, 28)
PIXELS = 28 * 28
SPLITS = ("train", "test")


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


SHARD_SUFFIXES = (".json", ".json.gz")


def shard_files(folder: Path, split: str) -> list[Path]:
    """The LEAF ``*.json`` and ``*.json.gz`` shards of one split in natural name order.

    Raises
    ------
    DatasetNotFoundError
        If ``folder/split`` holds no shard.
    """
    where = folder / split
    paths = sorted((p for p in where.iterdir() if p.name.endswith(SHARD_SUFFIXES)), key=_natural_key) \
        if where.is_dir() else []
    if not paths:
        raise DatasetNotFoundError(
            f"femnist/{split}: no LEAF *.json or *.json.gz files found in {where}; expected the output of "
            f"LEAF's femnist preprocess.sh (data/{split}/*.json, keys users/num_samples/user_data) "
            f"copied to {where}; see `fltrust data fetch femnist`"
        )
    return paths


def _read_shard(path: Path) -> Any:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return json.load(handle)
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, EOFError, ValueError) as exc:  # gzip.BadGzipFile is an OSError
        raise unreadable(path, f"not readable LEAF JSON ({exc})", "femnist") from exc


def _check_user(path: Path, user: str, x: np.ndarray, y_raw: np.ndarray) -> np.ndarray:
    """The user's labels as int64, after checking images and labels (errors name file, user, row)."""
    where = f"{path.name}: user {user!r}"
    if x.ndim != 2 or x.shape[1] != PIXELS:
        raise DatasetError(f"{where} x must be a list of {PIXELS}-value images, got shape {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1) | (x < 0).any(axis=1) | (x > 1).any(axis=1))
    if len(bad):
        row = int(bad[0])
        raise DatasetError(
            f"{where} row {row}: pixels must be finite and lie in [0, 1] (LEAF's scale), "
            f"found {float(x[row][~np.isfinite(x[row]) | (x[row] < 0) | (x[row] > 1)][0])}"
        )
    if y_raw.ndim != 1 or y_raw.dtype.kind not in "iuf":
        raise DatasetError(f"{where} y must be a list of integer labels")
    fractional = np.flatnonzero(y_raw != np.round(y_raw)) if y_raw.dtype.kind == "f" else []
    if len(fractional):
        raise DatasetError(f"{where} row {int(fractional[0])}: label {y_raw[fractional[0]]} is not an integer")
    y = y_raw.astype(np.int64)
    out_of_range = np.flatnonzero((y < 0) | (y >= len(CLASS_NAMES)))
    if len(out_of_range):
        raise DatasetError(f"{where} row {int(out_of_range[0])}: label {int(y[out_of_range[0]])} must lie in 0..61")
    return y


def _parse_shards(paths: list[Path]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read LEAF shards into ``x`` float32 (N, 784), ``y`` int64, ``writer`` str and ``shard``
    (index into ``paths``) per sample."""
    xs, ys, writers, shards = [], [], [], []
    for number, path in enumerate(paths):
        shard = _read_shard(path)
        if not isinstance(shard, dict) or not {"users", "user_data"} <= set(shard):
            raise DatasetError(
                f"{path.name}: expected a LEAF object with keys 'users', 'num_samples', 'user_data'"
            )
        users = shard["users"]
        counts = shard.get("num_samples", [None] * len(users))
        if not isinstance(users, list) or not isinstance(counts, list) or len(counts) != len(users):
            raise DatasetError(
                f"{path.name}: 'num_samples' must list one count per entry of 'users' "
                f"({len(counts) if isinstance(counts, list) else 'no list'} counts for "
                f"{len(users) if isinstance(users, list) else 'no list of'} users)"
            )
        repeated = [u for u in dict.fromkeys(users) if users.count(u) > 1]
        if repeated:
            raise DatasetError(f"{path.name}: user {repeated[0]!r} is listed {users.count(repeated[0])} times in 'users'")
        for user, count in zip(users, counts):
            record = shard["user_data"].get(user)
            if not isinstance(record, dict) or "x" not in record or "y" not in record:
                raise DatasetError(f"{path.name}: user_data[{user!r}] must hold 'x' and 'y'")
            try:
                x = np.asarray(record["x"], dtype=np.float64)
                y_raw = np.asarray(record["y"])
            except (TypeError, ValueError) as exc:
                raise DatasetError(f"{path.name}: user {user!r} has non-numeric x or y ({exc})") from exc
            y = _check_user(path, user, x, y_raw)
            if y.shape != (len(x),) or (count is not None and count != len(x)):
                raise DatasetError(
                    f"{path.name}: user {user!r} has {len(x)} images, {len(y)} labels, "
                    f"num_samples {count}; they must agree"
                )
            xs.append(x.astype(np.float32))
            ys.append(y)
            writers.append(np.full(len(y), user, dtype=object))
            shards.append(np.full(len(y), number, dtype=np.int64))
    if not xs:
        raise DatasetError(f"{paths[0].parent}: the LEAF shards hold no users")
    arrays = {
        "x": np.concatenate(xs),
        "y": np.concatenate(ys),
        "writer": np.concatenate(writers).astype(str),
        "shard": np.concatenate(shards),
    }
    return arrays, {"samples": int(len(arrays["y"]))}


def copy_key(path: Path) -> str:
    """The train/test pair a shard belongs to: its name without ``_train_``/``_test_`` and ``.gz``.

    >>> copy_key(Path("train/slz_all_data_3_niid_05_keep_0_train_9.json.gz"))
    'slz_all_data_3_niid_05_keep_0_9.json'
    """
    return re.sub(r"_(train|test)_", "_", path.name.removesuffix(".gz"))


def keep_largest_copies(
    raw: dict[str, dict[str, np.ndarray]], paths: dict[str, list[Path]], folder: Path
) -> tuple[dict[str, np.ndarray], int]:
    """Per split, the mask of samples that belong to each writer's kept copy (module docstring).

    Parameters
    ----------
    raw : dict
        Per split, the parsed arrays (``writer`` and ``shard`` per sample).
    paths : dict
        Per split, the shard paths that ``shard`` indexes.
    folder : Path
        The ``femnist`` folder (paths are ordered relative to it).

    Returns
    -------
    masks, dropped
        Boolean masks per split, and the number of writer copies dropped.
    """
    sizes: dict[tuple[str, str], int] = {}
    first_file: dict[tuple[str, str], str] = {}
    copies = {}
    for split in SPLITS:
        keys = np.array([copy_key(p) for p in paths[split]], dtype=object)[raw[split]["shard"]]
        rel = np.array([str(p.relative_to(folder)) if p.is_relative_to(folder) else str(p)
                        for p in paths[split]], dtype=object)[raw[split]["shard"]]
        copies[split] = list(zip(raw[split]["writer"].tolist(), keys.tolist()))
        for copy, path in zip(copies[split], rel.tolist()):
            sizes[copy] = sizes.get(copy, 0) + 1
            first_file[copy] = min(first_file.get(copy, path), path)
    best: dict[str, tuple[str, str]] = {}
    for copy in sorted(sizes, key=lambda c: (-sizes[c], first_file[c])):
        best.setdefault(copy[0], copy)
    masks = {s: np.array([best[c[0]] == c for c in copies[s]], dtype=bool) for s in SPLITS}
    return masks, len(sizes) - len(best)


def load_femnist(
    folder: str | Path,
    *,
    train_files: list[str] | None = None,
    test_files: list[str] | None = None,
) -> DatasetBundle:
    """Load FEMNIST from LEAF JSON shards, one copy per writer id (module docstring).

    Parameters
    ----------
    folder : str or Path
        The ``femnist`` folder with ``train/`` and ``test/``.
    train_files, test_files : list of str, optional
        Shards to read, relative to ``folder`` (for example ``["train/all_data_0_niid_05_keep_0_train_9.json"]``);
        default: every ``*.json`` and ``*.json.gz`` of ``train/`` and ``test/``.

    Returns
    -------
    DatasetBundle
        x float32 (N, 1, 28, 28) in [0, 1]; 62 classes; groups = writer index.
    """
    folder = Path(folder)
    chosen = {"train": train_files, "test": test_files}
    paths = {
        s: require_files(folder, chosen[s], "FEMNIST LEAF shards") if chosen[s] else shard_files(folder, s)
        for s in SPLITS
    }
    parsed = {s: cached_arrays("femnist_leaf_v2", paths[s], lambda s=s: _parse_shards(paths[s]))[0] for s in SPLITS}
    masks, dropped = keep_largest_copies(parsed, paths, folder)
    raw = {s: {k: v[masks[s]] for k, v in parsed[s].items()} for s in SPLITS}
    writer_ids = list(dict.fromkeys(np.concatenate([raw["train"]["writer"], raw["test"]["writer"]]).tolist()))
    index = {w: i for i, w in enumerate(writer_ids)}
    splits = {
        s: ArraySplit(
            x=raw[s]["x"].reshape(-1, *INPUT_SHAPE).copy(),
            y=raw[s]["y"].copy(),
            groups=np.array([index[w] for w in raw[s]["writer"]], dtype=np.int64),
        )
        for s in SPLITS
    }
    return DatasetBundle(
        name="femnist",
        train=splits["train"],
        test=splits["test"],
        num_classes=len(CLASS_NAMES),
        input_shape=INPUT_SHAPE,
        group_names=writer_ids,
        class_names=list(CLASS_NAMES),
        source={
            "loader": "femnist",
            "folder": str(folder),
            "train_files": [file_record(p, folder) for p in paths["train"]],
            "test_files": [file_record(p, folder) for p in paths["test"]],
            "duplicate_copies_dropped": dropped,
        },
    )
