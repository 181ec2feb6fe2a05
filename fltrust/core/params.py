"""Facts about a model's parameters that every layer may need: their hash (the run record's model
hash chain), their count (the FactSheet's model size) and a run's system figures (both engines and
the Flower integration record them). Engine-neutral: numpy, hashlib and torch
only, so metrics and trust use them without importing the run folders or the model zoo.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from torch import nn

from fltrust.core.records import Params, RoundRecord

__all__ = ["chain_hash", "count_parameters", "params_hash", "system_figures"]


def params_hash(params: Params) -> str:
    """SHA-256 of a model's parameters (dtype, shape and bytes of every array, in order).

    Parameters
    ----------
    params : list of numpy.ndarray
        The model's parameters.

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> params_hash([np.zeros(2, dtype=np.float32)]) == params_hash([np.zeros(2, dtype=np.float32)])
    True
    >>> params_hash([np.zeros(2, dtype=np.float32)]) == params_hash([np.zeros(2, dtype=np.float64)])
    False
    """
    digest = hashlib.sha256()
    for array in params:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def chain_hash(previous: str, model_hash: str) -> str:
    """One link of the run's model hash chain: ``sha256(previous chain hash + model hash)``.

    Parameters
    ----------
    previous : str
        The chain hash so far (the first link's previous is ``""``).
    model_hash : str
        :func:`params_hash` of this round's model.

    Returns
    -------
    str
    """
    return hashlib.sha256((previous + model_hash).encode()).hexdigest()


def count_parameters(model: nn.Module) -> tuple[int, int]:
    """Number of trainable scalar parameters and of trainable parameter tensors.

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    tuple of (int, int)

    Examples
    --------
    >>> count_parameters(nn.Linear(3, 2))
    (8, 2)
    """
    params = [p for p in model.parameters() if p.requires_grad]
    return sum(p.numel() for p in params), len(params)


def system_figures(model: nn.Module, records: list[RoundRecord], params: Params) -> dict[str, Any]:
    """``model_num_params``, ``model_num_tensors``, ``model_bytes`` and traffic/time totals.

    Parameters
    ----------
    model : torch.nn.Module
        The architecture (parameter and tensor counts).
    records : list of RoundRecord
        The run's rounds; their ``bytes_sent``, ``bytes_received`` and ``train_time_s`` client
        metrics are summed into ``bytes_up_total``, ``bytes_down_total`` (bytes) and
        ``train_time_s_total`` (seconds).
    params : Params
        The final global model (``model_bytes``).

    Returns
    -------
    dict of str to Any
        The six figures named above.
    """
    n_params, n_tensors = count_parameters(model)

    def total(key: str) -> float:
        return float(sum(np.sum(r.client_metrics[key]) for r in records if key in r.client_metrics))

    return {"model_num_params": n_params, "model_num_tensors": n_tensors,
            "model_bytes": int(sum(np.asarray(p).nbytes for p in params)), "bytes_up_total": total("bytes_sent"),
            "bytes_down_total": total("bytes_received"), "train_time_s_total": total("train_time_s")}
