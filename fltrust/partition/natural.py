"""Natural partitioning: one client per natural group (FEMNIST writer, N-BaIoT device)."""

from __future__ import annotations

import logging

import numpy as np

from fltrust.partition.base import Partitioner, PartitionError, check_labels

logger = logging.getLogger(__name__)


class NaturalPartitioner(Partitioner):
    """One client per natural group id, as Flower Datasets' ``NaturalIdPartitioner``.

    With G natural groups in ``groups`` and C = ``num_partitions`` clients:

    - C = G: client ``c`` holds the samples of the ``c``-th smallest group id;
    - C < G: C groups are drawn uniformly without replacement (seeded), then sorted; the
      chosen ids are stored in :attr:`selected_groups_` and logged (the fairness paper picks
      205 random FEMNIST writers, fairness spec 6.6; docs/references.md#fairness-6-6);
    - C > G: :class:`~fltrust.partition.base.PartitionError`.

    Each client's indices are in dataset order. Samples of unchosen groups belong to no client.

    Parameters
    ----------
    num_partitions : int
        Number of clients C.
    seed : int
        Seed of the group draw when C < G.

    Attributes
    ----------
    selected_groups_ : np.ndarray
        Natural group id of each client (set by :meth:`partition`).

    Examples
    --------
    >>> groups = np.array([7, 3, 7, 5, 3])
    >>> NaturalPartitioner(num_partitions=3, seed=0).partition(np.zeros(5, dtype=int), groups)
    [array([1, 4]), array([3]), array([0, 2])]
    """

    def __init__(self, num_partitions: int, seed: int) -> None:
        super().__init__(num_partitions, seed)
        self.selected_groups_: np.ndarray | None = None

    def partition(self, y: np.ndarray, groups: np.ndarray | None = None) -> list[np.ndarray]:
        """Indices of each chosen natural group (see the class docstring)."""
        if groups is None:
            raise PartitionError(
                "partition.scheme='natural' needs the natural client of every sample, but this dataset "
                "has no natural clients (groups is None); use partition.scheme='iid' or 'dirichlet'"
            )
        check_labels(y, groups)
        groups = np.asarray(groups)
        if groups.ndim != 1:
            raise PartitionError(f"groups must be one-dimensional, got shape {groups.shape}")
        available = np.unique(groups)
        if self.num_partitions > len(available):
            raise PartitionError(
                f"partition.num_clients={self.num_partitions} exceeds the {len(available)} natural clients "
                f"available in this dataset; set partition.num_clients <= {len(available)}"
            )
        if self.num_partitions < len(available):
            chosen = np.sort(self._rng().choice(available, size=self.num_partitions, replace=False))
            logger.info(
                "natural partition: %d of %d natural clients chosen (seed %d): %s",
                self.num_partitions,
                len(available),
                self.seed,
                chosen.tolist(),
            )
        else:
            chosen = available
        self.selected_groups_ = chosen
        # A stable sort keeps each group's samples in dataset order.
        by_group = np.argsort(groups, kind="stable").astype(np.int64)
        sorted_groups = groups[by_group]
        starts = np.searchsorted(sorted_groups, chosen, side="left")
        ends = np.searchsorted(sorted_groups, chosen, side="right")
        return [by_group[s:e] for s, e in zip(starts, ends)]
