"""The one place that writes files atomically, and the one JSON conversion for numpy values.

Every file fltrust writes (run folders, caches, reports, RESULTS.md) goes through
:func:`atomic_write`: the content is written to a temporary file in the target folder, flushed,
and moved into place with ``os.replace``. A crash or Ctrl-C therefore never leaves half a file,
and a failed write removes its temporary file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np


_UMASK = os.umask(0)
os.umask(_UMASK)


def to_plain(value: Any) -> Any:
    """Convert numpy containers and scalars to plain JSON types; NaN/inf become ``None``."""
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if np.isfinite(f) else None
    if value is None or isinstance(value, (str, int)):
        return value
    return str(value)  # Paths and other objects: their text


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write(handle)`` on a temporary binary file next to ``path``, then move it into place.

    Parameters
    ----------
    path : str or pathlib.Path
        The file to (re)place; missing parent folders are created. The file gets mode
        ``0o666`` less the process umask.
    write : callable
        Called once with the open binary handle; what it writes becomes the file's content. If
        it raises, the temporary file is removed, ``path`` is left as it was and the error
        propagates.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; results are meant to be shared
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Atomic binary write.

    Parameters
    ----------
    path : str or pathlib.Path
        The file to (re)place (see :func:`atomic_write`).
    data : bytes
        Its content.
    """
    atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | Path, text: str) -> None:
    """Atomic text write (UTF-8).

    Parameters
    ----------
    path : str or pathlib.Path
        The file to (re)place (see :func:`atomic_write`).
    text : str
        Its content, encoded as UTF-8 (no newline translation).
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, data: Any) -> None:
    """Atomic JSON write; numpy values become plain types and NaN becomes ``null``.

    Parameters
    ----------
    path : str or pathlib.Path
        The file to (re)place (see :func:`atomic_write`).
    data : Any
        Converted by :func:`to_plain`, written indented by 2 with a final newline.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = Path(tmp) / "new" / "x.json"
    ...     atomic_write_json(target, {"n": np.int64(3), "loss": float("nan")})
    ...     print(target.read_text(), end="")
    {
      "n": 3,
      "loss": null
    }
    """
    atomic_write_text(path, json.dumps(to_plain(data), indent=2, allow_nan=False) + "\n")


def atomic_torch_save(path: str | Path, obj: Any) -> None:
    """Atomic ``torch.save``.

    Parameters
    ----------
    path : str or pathlib.Path
        The file to (re)place (see :func:`atomic_write`).
    obj : Any
        What ``torch.save`` serialises (fltrust saves plain data, readable with
        ``torch.load(weights_only=True)``).
    """
    import torch

    atomic_write(path, lambda handle: torch.save(obj, handle))  # the same bytes as saving to a BytesIO


def atomic_savez(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Atomic ``np.savez`` (uncompressed).

    Parameters
    ----------
    path : str or pathlib.Path
        The file to (re)place (see :func:`atomic_write`); written as given, no ``.npz`` added.
    arrays : dict of str to numpy.ndarray
        The archive's members, by name.
    """
    atomic_write(path, lambda handle: np.savez(handle, **arrays))


def stale_temporaries(folder: str | Path) -> list[Path]:
    """Temporary files an interrupted :func:`atomic_write` left in ``folder`` (``.name.*.tmp``)."""
    folder = Path(folder)
    return sorted(folder.glob(".*.tmp")) if folder.is_dir() else []


def remove_stale_temporaries(folder: str | Path) -> int:
    """Delete :func:`stale_temporaries`; returns how many were removed."""
    stale = stale_temporaries(folder)
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)
