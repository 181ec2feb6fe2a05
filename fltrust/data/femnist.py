"""FEMNIST (LEAF, Caldas et al. 2018) with writers as natural clients.

Files
-----
LEAF JSON shards in ``<data root>/femnist/train/*.json`` and ``<data root>/femnist/test/*.json``,
as written by LEAF's ``preprocess.sh``. Each shard is an object with keys ``users`` (writer ids),
``num_samples`` and ``user_data = {user: {"x": [[784 floats], ...], "y": [int, ...]}}``.
LEAF splits every writer's samples into train and test, so a writer appears in both splits.

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


def shard_files(folder: Path, split: str) -> list[Path]:
    """The LEAF ``*.json`` shards of one split in natural name order.

    Raises
    ------
    DatasetNotFoundError
        If ``folder/split`` holds no ``*.json`` file.
    """
    paths = sorted((folder / split).glob("*.json"), key=_natural_key) if (folder / split).is_dir() else []
    if not paths:
        raise DatasetNotFoundError(
            f"femnist/{split}: no LEAF *.json files found in {folder / split}; expected the output of "
            f"LEAF's femnist preprocess.sh (data/{split}/*.json, keys users/num_samples/user_data) "
            f"copied to {folder / split}; see `fltrust data fetch femnist`"
        )
    return paths


def _parse_shards(paths: list[Path]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read LEAF shards into ``x`` float32 (N, 784), ``y`` int64 and ``writer`` str per sample."""
    xs, ys, writers = [], [], []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                shard = json.load(handle)
        except (OSError, ValueError) as exc:
            raise unreadable(path, f"not readable LEAF JSON ({exc})", "femnist") from exc
        if not isinstance(shard, dict) or not {"users", "user_data"} <= set(shard):
            raise DatasetError(
                f"{path.name}: expected a LEAF object with keys 'users', 'num_samples', 'user_data'"
            )
        counts = shard.get("num_samples", [None] * len(shard["users"]))
        for user, count in zip(shard["users"], counts):
            record = shard["user_data"].get(user)
            if not isinstance(record, dict) or "x" not in record or "y" not in record:
                raise DatasetError(f"{path.name}: user_data[{user!r}] must hold 'x' and 'y'")
            try:
                x = np.asarray(record["x"], dtype=np.float32)
                y = np.asarray(record["y"], dtype=np.int64)
            except (TypeError, ValueError) as exc:
                raise DatasetError(f"{path.name}: user {user!r} has non-numeric x or y ({exc})") from exc
            if x.ndim != 2 or x.shape[1] != PIXELS:
                raise DatasetError(
                    f"{path.name}: user {user!r} x must be a list of {PIXELS}-value images, got shape {x.shape}"
                )
            if y.shape != (len(x),) or (count is not None and count != len(x)):
                raise DatasetError(
                    f"{path.name}: user {user!r} has {len(x)} images, {len(y)} labels, "
                    f"num_samples {count}; they must agree"
                )
            if len(y) and (y.min() < 0 or y.max() >= len(CLASS_NAMES)):
                raise DatasetError(f"{path.name}: user {user!r} labels must lie in 0..61")
            xs.append(x)
            ys.append(y)
            writers.append(np.full(len(y), user, dtype=object))
    if not xs:
        raise DatasetError(f"{paths[0].parent}: the LEAF shards hold no users")
    arrays = {"x": np.concatenate(xs), "y": np.concatenate(ys), "writer": np.concatenate(writers).astype(str)}
    return arrays, {"samples": int(len(arrays["y"]))}


def load_femnist(
    folder: str | Path,
    *,
    train_files: list[str] | None = None,
    test_files: list[str] | None = None,
) -> DatasetBundle:
    """Load FEMNIST from LEAF JSON shards (module docstring).

    Parameters
    ----------
    folder : str or Path
        The ``femnist`` folder with ``train/`` and ``test/``.
    train_files, test_files : list of str, optional
        Shards to read, relative to ``folder`` (for example ``["train/all_data_0_niid_05_keep_0_train_9.json"]``);
        default: every ``*.json`` of ``train/`` and ``test/``.

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
    raw = {s: cached_arrays("femnist_leaf", paths[s], lambda s=s: _parse_shards(paths[s]))[0] for s in SPLITS}
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
        },
    )
