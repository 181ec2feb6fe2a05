"""A small in-process memo of the trust observer's costly, deterministic post-training measurements.

The FederatedTrust reproduction scores one final model several times in one process: the run's own
observer, the replay of every other scoring mode (:func:`fltrust.repro.trust.run.mode_factsheet`)
and the extended-mode observer riding along in the run (or a companion run, whose training --
same configuration, seed and data -- ends in the same
parameters). CLEVER (:func:`fltrust.trust.measures.robustness.clever_score`) and the SHAP values
(:func:`fltrust.trust.measures.explainability.shap_values`) depend only on the model, the samples and their
settings (both are seeded), so each is computed once and then reused.

The key (:func:`digest`) is the SHA-256 of the model's class, structure and every parameter and
buffer, of every input array, and of the settings; a model that differs in one bit gets its own
entry. The memo keeps the :data:`MEMO_SIZE` most recent results and hands out copies.

>>> import torch
>>> calls = []
>>> net = torch.nn.Linear(2, 1)
>>> key = digest("demo", net, torch.zeros(1, 2), seed=0)
>>> remembered(key, lambda: calls.append(1) or 0.5), remembered(key, lambda: calls.append(1) or 0.5), len(calls)
(0.5, 0.5, 1)
"""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

__all__ = ["MEMO_SIZE", "clear", "digest", "remembered"]

MEMO_SIZE = 16
"""Results kept (least recently used are dropped); each is a float or a small SHAP array."""

T = TypeVar("T")
_memo: OrderedDict[str, Any] = OrderedDict()
_lock = threading.Lock()


def _array_bytes(value: Any) -> tuple[str, tuple[int, ...], bytes]:
    arr = value.detach().cpu().contiguous().numpy() if isinstance(value, torch.Tensor) else np.ascontiguousarray(value)
    return str(arr.dtype), tuple(arr.shape), arr.tobytes()


def digest(kind: str, model: nn.Module, *arrays: Any, **settings: Any) -> str:
    """Return the key of one measurement.

    The key covers ``kind``, the model (class, structure, device, parameters and buffers), the
    input arrays and the settings.

    Parameters
    ----------
    kind : str
        What is measured (``"clever"``, ``"shap"``).
    model : nn.Module
        The model measured.
    *arrays : torch.Tensor or np.ndarray
        Its inputs.
    **settings
        Every other argument of the measurement (their ``repr`` enters the key).

    Returns
    -------
    str
        A SHA-256 hex digest.
    """
    h = hashlib.sha256(kind.encode())
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    h.update(f"{type(model).__module__}.{type(model).__qualname__}|{device}\n{model}".encode())
    for name, value in [*model.state_dict().items(), *(("input", array) for array in arrays)]:
        dtype, shape, data = _array_bytes(value)
        h.update(f"{name}|{dtype}|{shape}".encode())
        h.update(data)
    h.update(repr(sorted(settings.items())).encode())
    return h.hexdigest()


def remembered(key: str, compute: Callable[[], T]) -> T:
    """Return the result stored under ``key``, else ``compute()`` (stored); always a copy.

    Parameters
    ----------
    key : str
        :func:`digest` of the measurement.
    compute : callable
        Computes the result when it is not stored (an exception is passed on, nothing is stored).

    Returns
    -------
    object
        The result.
    """
    with _lock:
        if key in _memo:
            _memo.move_to_end(key)
            return copy.deepcopy(_memo[key])
    value = compute()
    with _lock:
        _memo[key] = copy.deepcopy(value)
        while len(_memo) > MEMO_SIZE:
            _memo.popitem(last=False)
    return value


def clear() -> None:
    """Forget every stored result."""
    with _lock:
        _memo.clear()
