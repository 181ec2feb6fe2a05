"""Source-file bookkeeping and the parsed-data cache shared by every loader.

Parsing text datasets is slow (the full NSL-KDD text files, twenty FEMNIST LEAF JSON shards), so
each loader parses a source once and keeps the parsed arrays in two places:

- on disk, as an uncompressed ``.npz`` (plain arrays only; strings are stored as numpy unicode
  arrays, so no pickle is ever needed) plus a small ``.json`` with non-array facts, in
  :func:`cache_dir` (``$FLTRUST_CACHE``, else ``~/.cache/fltrust/datasets``);
- in memory, in a small least-recently-used table, so a second load in the same process is instant.

The cache key is the parser name, a parser version, the parser options, and the SHA-256 of the
CONTENT of every source file -- never file times alone. A file edited in place and given back its old
modification time (``cp -p``, ``rsync -t``, ``os.utime``) therefore gets a new entry, and the
provenance (``file_record``, written to a run's ``dataset.json``) is the hash of what was parsed.
Deleting the cache directory is always safe. Writes are atomic (a temporary file in the same
directory, then :func:`os.replace`), so an interrupted run never leaves a half-written entry behind.
The ``.json`` records the SHA-256 of the cached arrays (:func:`arrays_sha256`); an entry whose
arrays no longer match it (edited, or damaged on disk) is discarded with a warning and the source
is parsed again, so a run never uses, or records the fingerprint of, anything but the parse of its
source. (Like any unkeyed hash, this catches accidents and casual edits, not someone who also
rewrites the recorded hash.)

Hashing cost and the SHA-256 memo
---------------------------------
Hashing runs at about 1.5 GB/s here (75 MB CIFAR npz: 0.05 s; the 83 MB of FEMNIST shards: 0.06 s),
negligible next to a parse, but the full N-BaIoT CSVs are several GB, so a digest is memoised in
memory and on disk under the file's :func:`fingerprint` ``(path, size, mtime_ns, ctime_ns, inode,
device)``. The inode change time ``ctime`` is set by the kernel on every write and every
``utime`` call and cannot be set back by users, so restoring the modification time does not
revive a stale digest. (On Windows ``st_ctime`` is the creation time; there, delete the cache
after editing data files in place.)

Arrays handed out by :func:`cached_arrays` are shared with the memory cache and are marked
read-only; loaders must build new arrays from them (they always do: scaling, one-hot encoding and
fancy indexing all copy).

This module also holds the helpers that describe source files (:func:`file_record`, with a
memoised SHA-256) and :class:`DatasetNotFoundError`, raised when expected files are absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.core.io import atomic_savez, atomic_write_bytes
from fltrust.data.base import DatasetError

CACHE_ENV = "FLTRUST_CACHE"
"""Environment variable that overrides the cache directory."""

CACHE_VERSION = 3
"""Bumped when the layout of cached entries changes (old entries are then simply ignored).
3: the ``.json`` is ``{"arrays_sha256": ..., "meta": ...}``."""

MEMORY_CACHE_BYTES = 2 * 1024**3
"""Upper bound on the bytes of parsed arrays kept in memory (least recently used are dropped)."""

Arrays = dict[str, np.ndarray]


class DatasetNotFoundError(DatasetError):
    """Files that a loader needs are absent (as opposed to present but corrupt).

    ``load_dataset`` falls back to the synthetic stand-in only for this error, and only when
    ``data.allow_synthetic_fallback`` is set.
    """


# -- source files ------------------------------------------------------------------------------

def require_files(folder: Path, names: Iterable[str], what: str) -> list[Path]:
    """Paths ``folder/name`` for every name; raise :class:`DatasetNotFoundError` naming the missing ones.

    Parameters
    ----------
    folder : Path
        Dataset folder.
    names : iterable of str
        File names relative to ``folder``.
    what : str
        Human description used in the message (for example ``"NSL-KDD text files"``).
    """
    paths = [folder / name for name in names]
    missing = [str(p.relative_to(folder)) for p in paths if not p.is_file()]
    if missing:
        raise DatasetNotFoundError(
            f"{what}: missing {missing} in {folder}; place the files there "
            f"(see `fltrust data fetch` for where to get them)"
        )
    return paths


Fingerprint = tuple[str, int, int, int, int, int]


def fingerprint(path: Path) -> Fingerprint:
    """State of a file for the SHA-256 memo: ``(resolved path, size, mtime_ns, ctime_ns, inode, device)``.

    Any write or ``utime`` call changes ``ctime_ns``, which users cannot restore (module docstring).
    """
    stat = path.stat()
    return (
        str(path.resolve()),
        int(stat.st_size),
        int(stat.st_mtime_ns),
        int(stat.st_ctime_ns),
        int(stat.st_ino),
        int(stat.st_dev),
    )


_SHA256_MEMO: dict[Fingerprint, str] = {}


def file_sha256(path: Path) -> str:
    """SHA-256 hex digest of a file's content, memoised in memory and on disk by :func:`fingerprint`."""
    key = fingerprint(path)
    if key in _SHA256_MEMO:
        return _SHA256_MEMO[key]
    store = cache_dir() / "sha256" / (_digest(key) + ".txt")
    try:
        digest = store.read_text().strip()
    except OSError:
        digest = ""
    if len(digest) != 64:
        with open(path, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        _try_atomic_write(store, digest.encode())
    _SHA256_MEMO[key] = digest
    return digest


def file_record(path: Path, folder: Path | None = None) -> dict[str, Any]:
    """Provenance of one source file: ``{"path", "bytes", "sha256"}`` (path relative to ``folder``)."""
    name = str(path.relative_to(folder)) if folder is not None else str(path)
    return {"path": name, "bytes": int(path.stat().st_size), "sha256": file_sha256(path)}


# -- cache location and atomic writes ----------------------------------------------------------

def cache_dir() -> Path:
    """Directory of cached parsed datasets: ``$FLTRUST_CACHE``, else ``~/.cache/fltrust/datasets``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "fltrust" / "datasets"


def _try_atomic_write(path: Path, payload: bytes) -> None:
    """Best-effort cache write: a read-only or full disk only costs speed, never correctness."""
    try:
        atomic_write_bytes(path, payload)
    except OSError as exc:
        warnings.warn(f"could not write dataset cache file {path}: {exc}", RuntimeWarning, stacklevel=3)



def _digest(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


# -- the cache ---------------------------------------------------------------------------------

_MEMORY: OrderedDict[str, tuple[Arrays, dict[str, Any]]] = OrderedDict()


def clear_memory_cache() -> None:
    """Forget every parsed dataset held in memory (the disk cache is kept)."""
    _MEMORY.clear()
    _SHA256_MEMO.clear()


def cache_key(kind: str, sources: Sequence[Path], options: dict[str, Any] | None = None) -> str:
    """Cache key of a parse: parser name + version + options + content SHA-256 of every source file."""
    identity = {"kind": kind, "version": CACHE_VERSION, "options": options or {}}
    return f"{kind}-" + _digest({**identity, "sources": [file_sha256(p) for p in sources]})


def cached_arrays(
    kind: str,
    sources: Sequence[Path],
    build: Callable[[], tuple[Arrays, dict[str, Any]]],
    *,
    options: dict[str, Any] | None = None,
    disk: bool = True,
) -> tuple[Arrays, dict[str, Any]]:
    """Return ``build()``'s arrays and metadata, parsing at most once per source state.

    Parameters
    ----------
    kind : str
        Parser name (part of the key and of the cache file name).
    sources : sequence of Path
        Every file the parse reads; their content hashes are part of the key.
    build : callable
        Parses the sources; returns ``(arrays, meta)`` where ``arrays`` maps names to numpy arrays
        (numeric or unicode, never object) and ``meta`` is JSON-serialisable.
    options : dict, optional
        Parser options that change the result (part of the key).
    disk : bool
        Also keep the result on disk (set False where the source is already a fast binary file).

    Returns
    -------
    arrays, meta
        The arrays are read-only views shared with the memory cache.
    """
    key = cache_key(kind, sources, options)
    if key in _MEMORY:
        _MEMORY.move_to_end(key)
        return _MEMORY[key]
    entry = _read_disk(key) if disk else None
    if entry is None:
        before = [fingerprint(p) for p in sources]
        arrays, meta = build()
        changed = [str(p) for p, state in zip(sources, before) if fingerprint(p) != state]
        if changed:  # the parse may mix old and new content; never cache or report it
            raise DatasetError(f"{changed[0]} changed while it was being read; rerun once the file is complete")
        arrays = {name: _plain_array(name, value) for name, value in arrays.items()}
        if disk:
            _write_disk(key, arrays, meta)
        entry = (arrays, meta)
    for value in entry[0].values():
        value.flags.writeable = False
    _remember(key, entry)
    return entry


def _plain_array(name: str, value: Any) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype == object:
        array = array.astype(str)
    if array.dtype.kind not in "biufU":
        raise TypeError(f"cached array {name!r} has unsupported dtype {array.dtype}")
    return array


def _remember(key: str, entry: tuple[Arrays, dict[str, Any]]) -> None:
    _MEMORY[key] = entry
    total = sum(a.nbytes for arrays, _ in _MEMORY.values() for a in arrays.values())
    while len(_MEMORY) > 1 and total > MEMORY_CACHE_BYTES:
        _, (old, _meta) = _MEMORY.popitem(last=False)
        total -= sum(a.nbytes for a in old.values())


def arrays_sha256(arrays: Arrays) -> str:
    """SHA-256 of named arrays: name, dtype, shape and bytes of each, in name order.

    >>> a = {"x": np.zeros(2, np.float32)}
    >>> arrays_sha256(a) == arrays_sha256({"x": np.zeros(2, np.float32)}) != arrays_sha256({"x": np.ones(2, np.float32)})
    True
    """
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}\0{array.dtype.str}{array.shape}\0".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _read_disk(key: str) -> tuple[Arrays, dict[str, Any]] | None:
    npz_path = cache_dir() / f"{key}.npz"
    meta_path = cache_dir() / f"{key}.json"
    if not (npz_path.is_file() and meta_path.is_file()):
        return None
    try:
        record = json.loads(meta_path.read_text())
        recorded, meta = record["arrays_sha256"], record["meta"]
        with np.load(npz_path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warnings.warn(f"ignoring unreadable dataset cache entry {npz_path}: {exc}", RuntimeWarning, stacklevel=3)
        return None
    if arrays_sha256(arrays) != recorded:
        warnings.warn(f"ignoring dataset cache entry {npz_path}: its arrays changed after they were written (their "
                      f"sha256 differs from the one in {meta_path.name}); parsing the source again",
                      RuntimeWarning, stacklevel=3)
        return None
    return arrays, meta


def _write_disk(key: str, arrays: Arrays, meta: dict[str, Any]) -> None:
    npz_path = cache_dir() / f"{key}.npz"
    try:
        atomic_savez(npz_path, arrays)
    except OSError as exc:
        warnings.warn(f"could not write dataset cache file {npz_path}: {exc}", RuntimeWarning, stacklevel=3)
        return
    # The JSON is written last: an entry counts only when both files exist.
    record = {"arrays_sha256": arrays_sha256(arrays), "meta": meta}
    _try_atomic_write(cache_dir() / f"{key}.json", json.dumps(record, sort_keys=True).encode())
