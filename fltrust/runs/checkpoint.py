"""Safe checkpoint I/O: ``checkpoint.pt`` and ``final_model.pt`` as plain data.

:func:`read_plain_torch` loads with torch's restricted unpickler (``weights_only=True``), so
nothing in a ``.pt`` file runs when it is read; :func:`write_checkpoint` / :func:`read_checkpoint`
turn an engine's numpy state into tensors and back, bit for bit; :func:`load_final_model` reads a
run's final ``state_dict``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.core.io import atomic_torch_save
from fltrust.runs.folder import RunFolderError

__all__ = ["load_final_model", "read_checkpoint", "read_plain_torch", "write_checkpoint"]


def read_plain_torch(path: str | Path, what: str, *, map_location: Any = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``, with one line naming the file when it fails.

    Only tensors, dicts, lists, tuples, numbers, strings, booleans and None are rebuilt: torch's
    restricted unpickler refuses every other global (a class, ``os.system``, a numpy array)
    before anything is constructed, so nothing in the file runs.

    Parameters
    ----------
    path : str or Path
        A ``.pt`` file fltrust wrote (``checkpoint.pt``, ``final_model.pt``).
    what : str
        What the file is, for the message (``"checkpoint"``, ``"final model"``).
    map_location : optional
        Passed to ``torch.load``.

    Raises
    ------
    RunFolderError
        The file is unreadable, or it references anything but plain data.
    """
    import pickle
    import re
    import warnings

    import torch

    path = Path(path)
    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of a file it then refuses
            warnings.simplefilter("ignore", UserWarning)
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found is None:
            reason = "not a torch file fltrust wrote: its pickle has instructions that plain data never uses"
            raise RunFolderError(f"{path}: unreadable {what} ({reason}); it was not unpickled, so nothing in it "
                                 "ran") from None
        raise RunFolderError(f"{path}: not a plain-data {what}: it references {found.group(1)}, which fltrust "
                             "never writes (a file from an older fltrust, or a planted one); it was not "
                             "unpickled, so nothing in it ran") from None
    except Exception as exc:  # noqa: BLE001 - a truncated zip, garbage bytes, ...: the file is unreadable
        reason = (str(exc).splitlines() or [""])[0].split(". ")[0][:200]  # torch's first sentence
        raise RunFolderError(f"{path}: unreadable {what} ({type(exc).__name__}: {reason})") from None


def _map_leaves(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``leaf`` applied to every value inside nested dicts, lists and tuples (their types kept)."""
    if isinstance(value, dict):
        return {k: _map_leaves(v, leaf) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_map_leaves(v, leaf) for v in value)
    return leaf(value)


def _to_tensor(value: Any) -> Any:
    """A numpy array -> a tensor (same dtype and bytes), a numpy scalar -> a Python number."""
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, copy=True, order="C"))
    return value.item() if isinstance(value, np.generic) else value


def write_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Save an engine's state as plain data (numpy arrays become tensors), atomically."""
    atomic_torch_save(path, _map_leaves(state, _to_tensor))


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load :func:`write_checkpoint`'s state (tensors become numpy arrays again, bit for bit).

    Raises
    ------
    RunFolderError
        The file is unreadable, not plain data (:func:`read_plain_torch`), or not a dict.
    """
    import torch

    state = read_plain_torch(path, "checkpoint")
    if not isinstance(state, dict):
        raise RunFolderError(f"{path}: not an fltrust checkpoint (a {type(state).__name__}, not a dict)")
    return _map_leaves(state, lambda value: value.numpy() if isinstance(value, torch.Tensor) else value)


def load_final_model(path: str | Path, *, map_location: Any = "cpu") -> dict[str, Any]:
    """``final_model.pt``: the ``state_dict`` (name -> tensor) of a run's final global model.

    Raises
    ------
    RunFolderError
        The file is unreadable, not plain data, or not a mapping of names to tensors.
    """
    import torch

    state = read_plain_torch(path, "final model", map_location=map_location)
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise RunFolderError(f"{path}: not a model state_dict (expected a mapping of parameter names to tensors)")
    return state
