"""FEMNIST (LEAF, Caldas et al. 2018) with writers as natural clients.

Files
-----
LEAF JSON shards in ``<data root>/femnist/train/`` and ``<data root>/femnist/test/``, as written
by LEAF's ``preprocess.sh``, plain (``*.json``) or gzipped (``*.json.gz``, the unchanged JSON).
Each shard is an object with keys ``users`` (writer ids), ``num_samples`` and
``user_data = {user: {"x": [[784 floats in 0..1], ...], "y": [int, ...]}}``. LEAF splits every
writer's samples into train and test, so a writer appears in both splits.

And/or TensorFlow Federated's federated EMNIST, ``<data root>/femnist/fed_emnist_train.h5`` and
``fed_emnist_test.h5`` (:data:`TFF_H5_FILES`; ``fltrust data fetch femnist`` downloads them):
3,400 writers, 671,585 / 77,483 samples, 62 classes (TFF's figures: LEAF's preprocessing of EMNIST
grouped by writer, writers with fewer than two samples dropped, every writer in both splits).
Layout (TFF's ``HDF5ClientData``): a group ``examples`` with one subgroup per writer id holding
``pixels`` (float32, n x 28 x 28) and ``label`` (int32, n). Pixels follow LEAF's convention (TFF
built the files from LEAF's preprocessing: 8-bit gray / 255, background 1.0, ink 0.0) and labels
LEAF's class order, so they are read unchanged and checked like a shard. Writers of one h5 file are
read in sorted id order, as TFF lists them. Reading them needs ``h5py`` (pinned in
``requirements.txt``); it is imported only when an h5 file is read.

Several LEAF runs
-----------------
LEAF samples writers independently in every run, so shards of two runs (file names with different
prefixes, e.g. ``slz_all_data_3_...`` and ``all_data_3_...``) can hold the same writer id with
different samples (the last writer drawn into a shard is truncated). A writer's *copy* is its
samples in one train/test shard pair (the file names equal once ``_train_``/``_test_`` and ``.gz``
are dropped). :func:`load_femnist` keeps **one copy per writer id: the one with the most samples**
(train + test); ties go to the copy whose first file comes first in sorted path order. Every
other copy is dropped, and ``source["duplicate_copies_dropped"]`` counts them. A train/test h5
pair is one more copy of each of its writers, so a writer id found both in LEAF shards and in the
h5 files is kept once, from whichever copy is larger.

Output
------
- x: float32 (N, 1, 28, 28), pixel values exactly as stored by LEAF (in [0, 1]; LEAF's images
  are inverted, background near 1). No normalisation, as the fairness authors (fairness spec 6.6,
  docs/references.md#fairness-6-6).
- y: int64 in 0..61: 0-9 digits, 10-35 ``A``-``Z``, 36-61 ``a``-``z`` (:data:`CLASS_NAMES`).
- groups: writer index, the same index in train and test; ``group_names`` are the writer ids.
  Writers are numbered in order of first appearance, reading the train shards and then the test
  shards in natural file-name order (``all_data_2`` before ``all_data_10``), each split's TFF h5
  file after its LEAF shards.

Parsing the JSON is slow (tens of MB of decimal text), so each split is parsed once and cached
(:mod:`fltrust.data.cache`).

Hostile files
-------------
- A writer in a shard's ``user_data`` but not in its ``users`` list is an error naming the shard and
  the writer ids. LEAF's ``preprocess.sh`` writes ``users`` and the keys of ``user_data`` alike (all
  shards of the shared mirror do), and LEAF's own reader (``models/utils/model_utils.py``) trains on
  the keys of ``user_data``; skipping such a writer would silently train on less data than LEAF.
- A gzipped shard is inflated in 1 MiB chunks and refused once it passes :data:`MAX_DECODED_BYTES`
  (a gzip bomb fails before its bytes fill memory).
- In the h5 files, links to other files (external or soft links), datasets stored in other files
  (external storage, virtual datasets) and a writer whose pixels would take more than
  :data:`MAX_DECODED_BYTES` in memory are refused, naming the file and the writer.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import re
import string
import zlib
from collections.abc import Generator, Iterator
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
MAX_DECODED_BYTES = 512 * 1024**2
"""Most bytes a gzipped LEAF shard may inflate to, and a TFF h5 writer's pixels may take in memory
(as float64): 512 MiB. The largest real shard here inflates to 4.2 MB (``all_data_29_..._train_9.json``;
the largest gzipped one, ``slz_all_data_3_..._train_9.json.gz``, to 4.2 MB); an unsampled LEAF shard
(about 22,000 samples at about 5.4 KB of JSON each) is about 120 MB, and the largest TFF writer holds a
few hundred images (512 MiB is 85,598)."""
TFF_H5_FILES = {"train": "fed_emnist_train.h5", "test": "fed_emnist_test.h5"}
"""TensorFlow Federated's federated EMNIST (62 classes) by split, in the ``femnist`` folder itself."""


def shard_files(folder: Path, split: str) -> list[Path]:
    """The files one split is read from: the LEAF ``*.json`` and ``*.json.gz`` shards of
    ``folder/split`` in natural name order, then TFF's ``folder/fed_emnist_<split>.h5`` if present.

    Raises
    ------
    DatasetNotFoundError
        If there is neither a shard nor the h5 file.
    """
    where = folder / split
    paths = sorted((p for p in where.iterdir() if p.name.endswith(SHARD_SUFFIXES)), key=_natural_key) \
        if where.is_dir() else []
    h5 = folder / TFF_H5_FILES[split]
    if h5.is_file():
        paths.append(h5)
    if not paths:
        raise DatasetNotFoundError(
            f"femnist/{split}: no LEAF *.json or *.json.gz files found in {where} and no {h5}; expected the "
            f"output of LEAF's femnist preprocess.sh (data/{split}/*.json, keys users/num_samples/user_data) "
            f"copied to {where}, or TensorFlow Federated's {h5.name}; see `fltrust data fetch femnist`"
        )
    return paths


def _inflate(path: Path, max_bytes: int) -> bytearray:
    """The content of a gzip file, read in 1 MiB chunks; refused once it passes ``max_bytes``."""
    data = bytearray()
    with gzip.open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            data += chunk
            if len(data) > max_bytes:
                raise DatasetError(
                    f"{path}: inflates to more than {max_bytes:,} bytes (femnist.MAX_DECODED_BYTES); refused "
                    f"as a possible gzip bomb: a LEAF shard is far smaller (the largest known about 120 MB)"
                )
    return data


def _read_shard(path: Path) -> Any:
    try:
        if path.name.endswith(".gz"):
            return json.loads(_inflate(path, MAX_DECODED_BYTES))
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, EOFError, ValueError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        if isinstance(exc, DatasetError):
            raise
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


def _leaf_users(path: Path) -> Generator[tuple[str, int | None, np.ndarray, np.ndarray], None, None]:
    """``(user, num_samples, x (n, 784) float64, raw labels)`` of each user of a LEAF shard."""
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
    if not all(isinstance(u, str) for u in users):
        bad = next(u for u in users if not isinstance(u, str))
        raise DatasetError(f"{path.name}: 'users' must list writer ids (strings), found {str(bad)[:40]}")
    repeated = [u for u in dict.fromkeys(users) if users.count(u) > 1]
    if repeated:
        raise DatasetError(f"{path.name}: user {repeated[0]!r} is listed {users.count(repeated[0])} times in 'users'")
    user_data = shard["user_data"]
    if not isinstance(user_data, dict):
        raise DatasetError(f"{path.name}: 'user_data' must map each writer id to its 'x' and 'y'")
    unlisted = [u for u in user_data if u not in set(users)]
    if unlisted:
        shown = ", ".join(repr(u[:40]) for u in unlisted[:5]) + (f" and {len(unlisted) - 5} more" if len(unlisted) > 5 else "")
        raise DatasetError(
            f"{path.name}: user_data holds {len(unlisted)} writer(s) missing from 'users' ({shown}); LEAF lists "
            f"every writer in both: add them to 'users' (and their counts to 'num_samples') or remove their data"
        )
    for user, count in zip(users, counts):
        record = user_data.get(user)
        if not isinstance(record, dict) or "x" not in record or "y" not in record:
            raise DatasetError(f"{path.name}: user_data[{user!r}] must hold 'x' and 'y'")
        try:
            x = np.asarray(record["x"], dtype=np.float64)
            y_raw = np.asarray(record["y"])
        except (TypeError, ValueError) as exc:
            raise DatasetError(f"{path.name}: user {user!r} has non-numeric x or y ({exc})") from exc
        yield user, count, x, y_raw


TFF_LAYOUT = ("expected TensorFlow Federated's federated EMNIST layout: a group 'examples' with one group per "
              "writer holding the datasets 'pixels' (n x 28 x 28) and 'label' (n)")


@contextlib.contextmanager
def _tff_h5_writers(path: Path) -> Iterator[tuple[Any, Any]]:
    """The open file's ``examples`` group and a function giving a writer's checked ``(pixels, label)``
    datasets (names, numeric dtypes, shapes; no pixel is read)."""
    try:  # h5py only when an h5 file is read (the rest of fltrust does not need it)
        import h5py
    except ImportError as exc:
        raise DatasetError(
            f"{path.name}: reading TensorFlow Federated's h5 files needs h5py, which is not installed; "
            f"install the pinned version (`pip install h5py==3.16.0`, as in requirements.txt)"
        ) from exc
    try:
        handle = h5py.File(path, "r")
    except OSError as exc:
        raise unreadable(path, f"not a readable HDF5 file ({exc})", "femnist") from exc
    with handle:
        _refuse_link(h5py, path, handle, "examples")
        examples = handle.get("examples")
        if not isinstance(examples, h5py.Group):
            raise DatasetError(f"{path.name}: no group 'examples'; {TFF_LAYOUT}")

        def datasets(user: str) -> tuple[Any, Any]:
            _refuse_link(h5py, path, examples, user, "examples/")
            group = examples[user]
            for name in ("pixels", "label"):
                if isinstance(group, h5py.Group):
                    _refuse_link(h5py, path, group, name, f"examples/{user}/")
            pixels = group.get("pixels") if isinstance(group, h5py.Group) else None
            label = group.get("label") if isinstance(group, h5py.Group) else None
            if not isinstance(pixels, h5py.Dataset) or not isinstance(label, h5py.Dataset):
                raise DatasetError(f"{path.name}: examples/{user} lacks the dataset 'pixels' or 'label'; {TFF_LAYOUT}")
            for name, data in (("pixels", pixels), ("label", label)):
                if data.external or data.is_virtual:
                    raise DatasetError(f"{path.name}: examples/{user}/{name} keeps its data in other files "
                                       f"({'virtual dataset' if data.is_virtual else 'external storage'}); "
                                       f"TFF's files hold their data themselves: re-fetch them")
            if pixels.dtype.kind not in "iuf" or label.dtype.kind not in "iuf":
                raise DatasetError(
                    f"{path.name}: user {user!r} pixels and label must be numeric, got {pixels.dtype} and {label.dtype}"
                )
            if pixels.ndim != 3 or pixels.shape[1:] != INPUT_SHAPE[1:]:
                raise DatasetError(f"{path.name}: user {user!r} pixels must be n x 28 x 28 images, got shape {pixels.shape}")
            if len(pixels) * PIXELS * 8 > MAX_DECODED_BYTES:
                raise DatasetError(
                    f"{path.name}: user {user!r} declares {len(pixels):,} images, more than "
                    f"{MAX_DECODED_BYTES // (PIXELS * 8):,} (femnist.MAX_DECODED_BYTES of pixels in memory); "
                    f"a FEMNIST writer holds a few hundred: the file is not TFF's"
                )
            if label.shape not in {(len(pixels),), (len(pixels), 1)}:
                raise DatasetError(
                    f"{path.name}: user {user!r} has {len(pixels)} images but labels of shape {label.shape}; they must agree"
                )
            return pixels, label

        yield examples, datasets


def _refuse_link(h5py: Any, path: Path, group: Any, name: str, where: str = "") -> None:
    """Refuse ``group[name]`` when it is a soft or external link (it would read another object or file)."""
    link = group.get(name, getlink=True)
    if link is not None and not isinstance(link, h5py.HardLink):
        target = f"{link.filename}:{link.path}" if isinstance(link, h5py.ExternalLink) else link.path
        raise DatasetError(f"{path.name}: {where}{name} is a link to {str(target)[:80]}, not data stored in the file; "
                           f"TFF's files hold no links: re-fetch them")


def check_tff_h5(path: Path) -> dict[str, int]:
    """Check that a file is in TFF's federated EMNIST layout (module docstring) without reading pixels.

    Parameters
    ----------
    path : Path
        ``fed_emnist_train.h5`` or ``fed_emnist_test.h5``.

    Returns
    -------
    dict
        ``{"writers", "samples"}``.

    Raises
    ------
    DatasetError
        Not HDF5, not that layout (the message names the file and writer), or h5py missing.
    """
    with _tff_h5_writers(path) as (examples, datasets):
        samples = sum(len(datasets(user)[0]) for user in examples)
        return {"writers": len(examples), "samples": int(samples)}


def _tff_h5_users(path: Path) -> Generator[tuple[str, int | None, np.ndarray, np.ndarray], None, None]:
    """``(user, n, x (n, 784) float64, labels (n,))`` of each writer of a TFF federated EMNIST h5
    file in sorted writer-id order, as TFF lists them; ``label`` may be stored as (n,) or (n, 1)."""
    with _tff_h5_writers(path) as (examples, datasets):
        for user in sorted(examples):
            pixels, label = datasets(user)
            try:
                x = np.asarray(pixels[()], dtype=np.float64).reshape(len(pixels), PIXELS)
                y_raw = np.asarray(label[()]).reshape(len(pixels))
            except OSError as exc:
                raise unreadable(path, f"cannot read examples/{user} ({exc})", "femnist") from exc
            yield user, len(x), x, y_raw


def _parse_shards(paths: list[Path]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read LEAF shards and TFF h5 files into ``x`` float32 (N, 784), ``y`` int64, ``writer`` str and
    ``shard`` (index into ``paths``) per sample."""
    xs, ys, writers, shards = [], [], [], []
    for number, path in enumerate(paths):
        reader = _tff_h5_users if path.suffix == ".h5" else _leaf_users
        with contextlib.closing(reader(path)) as users:
            for user, count, x, y_raw in users:
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
    """The train/test pair a shard belongs to: its name without ``_train_``/``_test_`` (before
    ``.h5``: ``_train``/``_test``) and ``.gz``.

    >>> copy_key(Path("train/slz_all_data_3_niid_05_keep_0_train_9.json.gz"))
    'slz_all_data_3_niid_05_keep_0_9.json'
    >>> copy_key(Path("fed_emnist_test.h5"))
    'fed_emnist.h5'
    """
    return re.sub(r"_(?:train|test)(_|\.h5$)", r"\1", path.name.removesuffix(".gz"))


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
    """Load FEMNIST from LEAF JSON shards and/or TFF's h5 files, one copy per writer id (module docstring).

    Parameters
    ----------
    folder : str or Path
        The ``femnist`` folder with ``train/`` and ``test/`` and/or ``fed_emnist_train.h5`` and
        ``fed_emnist_test.h5``.
    train_files, test_files : list of str, optional
        Files to read, relative to ``folder`` (for example ``["train/all_data_0_niid_05_keep_0_train_9.json"]``
        or ``["fed_emnist_train.h5"]``); default: every ``*.json`` and ``*.json.gz`` of ``train/`` and
        ``test/``, then ``fed_emnist_<split>.h5`` when present (:func:`shard_files`).

    Returns
    -------
    DatasetBundle
        x float32 (N, 1, 28, 28) in [0, 1]; 62 classes; groups = writer index. ``source["layout"]``
        is ``"tff_h5"`` when only h5 files were read and ``"leaf+tff_h5"`` when both kinds were.
    """
    folder = Path(folder)
    paths = {s: require_files(folder, chosen, "FEMNIST LEAF shards or TFF h5 files") if chosen else shard_files(folder, s)
             for s, chosen in zip(SPLITS, (train_files, test_files))}
    parsed = {s: cached_arrays("femnist_leaf_v2", paths[s], functools.partial(_parse_shards, paths[s]))[0] for s in SPLITS}
    masks, dropped = keep_largest_copies(parsed, paths, folder)
    raw = {s: {k: v if masks[s].all() else v[masks[s]] for k, v in parsed[s].items()} for s in SPLITS}
    h5_read = {p.suffix == ".h5" for s in SPLITS for p in paths[s]}
    layout = {} if True not in h5_read else {"layout": "tff_h5" if h5_read == {True} else "leaf+tff_h5"}
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
            **layout,
        },
    )
