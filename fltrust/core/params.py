"""Facts about a model's parameters that every layer may need: their hash (the run record's model
hash chain) and their count (the FactSheet's model size). Engine-neutral: numpy, hashlib and torch
only, so metrics and trust use them without importing the run folders or the model zoo.
"""

from __future__ import annotations

import hashlib

import numpy as np
from torch import nn

from fltrust.core.records import Params

__all__ = ["chain_hash", "count_parameters", "params_hash"]


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
