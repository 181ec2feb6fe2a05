"""The partitioner interface: how a training split becomes federated clients.

Every scheme (:mod:`~fltrust.partition.iid`, :mod:`~fltrust.partition.dirichlet`,
:mod:`~fltrust.partition.natural`) is a :class:`Partitioner` with one method,
:meth:`Partitioner.partition`, that maps the label vector ``y`` (and, for natural clients, the
group id of every sample) to one array of sample indices per client.

Conventions (as in Flower Datasets' partitioners):

- all randomness comes from the one ``seed`` given to the constructor, through
  ``np.random.default_rng(seed)``; a new generator is made on every call, so calling
  :meth:`~Partitioner.partition` twice gives the same result;
- indices are ``int64`` positions into ``y``; a sample belongs to at most one client
  (exactly one for the iid and Dirichlet schemes);
- bad input raises :class:`PartitionError` (a ``ValueError``) whose message names the
  config field to change.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class PartitionError(ValueError):
    """Data cannot be partitioned as asked; the message names the setting and the fix."""


class Partitioner(ABC):
    """Base class of all partitioners.

    Parameters
    ----------
    num_partitions : int
        Number of clients C (``partition.num_clients``), at least 1.
    seed : int
        Seed of the ``numpy.random.default_rng`` generator behind every random choice.
    """

    def __init__(self, num_partitions: int, seed: int) -> None:
        if isinstance(num_partitions, bool) or not isinstance(num_partitions, (int, np.integer)):
            raise PartitionError(f"partition.num_clients={num_partitions!r} must be an integer")
        if num_partitions < 1:
            raise PartitionError(f"partition.num_clients={num_partitions} must be at least 1")
        self.num_partitions = int(num_partitions)
        self.seed = int(seed)

    @abstractmethod
    def partition(self, y: np.ndarray, groups: np.ndarray | None = None) -> list[np.ndarray]:
        """Assign samples to clients.

        Parameters
        ----------
        y : np.ndarray
            Integer labels, shape ``(N,)``.
        groups : np.ndarray or None
            Natural client id of every sample, shape ``(N,)`` (FEMNIST writer, N-BaIoT device);
            only :class:`~fltrust.partition.natural.NaturalPartitioner` needs it.

        Returns
        -------
        list of np.ndarray
            ``num_partitions`` int64 arrays; entry ``c`` holds the indices of client ``c``'s
            samples.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_partitions={self.num_partitions}, seed={self.seed})"

    def _rng(self) -> np.random.Generator:
        """A fresh generator from the seed (same seed, same partition on every call)."""
        return np.random.default_rng(self.seed)


def check_labels(y: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Validate the label vector (and the group vector, when given) and return ``y``.

    Parameters
    ----------
    y : np.ndarray
        Labels; must be one-dimensional, non-empty and integer-valued.
    groups : np.ndarray or None
        Must have the same length as ``y`` when given.

    Returns
    -------
    np.ndarray
        ``y`` as a one-dimensional ``int64`` array.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise PartitionError(f"labels must be one-dimensional, got shape {y.shape}")
    if len(y) == 0:
        raise PartitionError("cannot partition an empty training split (0 labels)")
    if not np.issubdtype(y.dtype, np.integer):
        raise PartitionError(f"labels must be integers, got dtype {y.dtype}")
    if groups is not None and len(np.asarray(groups)) != len(y):
        raise PartitionError(f"groups has {len(np.asarray(groups))} entries but y has {len(y)}")
    return y.astype(np.int64, copy=False)


def check_enough_samples(num_samples: int, num_partitions: int) -> None:
    """Raise when there are fewer samples than clients (some client would get nothing)."""
    if num_partitions > num_samples:
        raise PartitionError(
            f"partition.num_clients={num_partitions} exceeds the {num_samples} training samples; "
            "lower partition.num_clients or use more data"
        )
