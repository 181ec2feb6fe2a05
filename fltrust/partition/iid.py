"""IID partitioning: shuffle, then cut into C contiguous near-equal shards."""

from __future__ import annotations

import numpy as np

from fltrust.partition.base import Partitioner, check_enough_samples, check_labels


class IidPartitioner(Partitioner):
    """Shuffle the samples, then cut them into ``num_partitions`` contiguous shards.

    Shard sizes differ by at most one: with :math:`N = qC + r` samples the first :math:`r`
    clients get :math:`q + 1` samples and the others :math:`q` (``np.array_split``). This is
    what Flower Datasets' ``IidPartitioner`` does on a dataset that ``FederatedDataset`` has
    shuffled first (Hugging Face ``Dataset.shard(contiguous=True)``), the setting of the
    fairness paper (fairness spec 6.5, 6.7: NSL-KDD 151,165 rows over 100 clients gives
    1,511-1,512 rows each; docs/references.md#fairness-6-5, #fairness-6-7).

    Parameters
    ----------
    num_partitions : int
        Number of clients C.
    seed : int
        Seed of the shuffle.

    Notes
    -----
    The authors shuffled with the Hugging Face dataset shuffle (seed 42); this class shuffles
    with ``np.random.default_rng(seed).permutation``, so the same seed does not give the same
    clients as their runs, only the same kind of partition.

    Examples
    --------
    >>> parts = IidPartitioner(num_partitions=3, seed=0).partition(np.zeros(10, dtype=int))
    >>> [len(p) for p in parts]
    [4, 3, 3]
    """

    def partition(self, y: np.ndarray, groups: np.ndarray | None = None) -> list[np.ndarray]:
        """Shuffled contiguous shards (see the class docstring); ``groups`` is ignored."""
        y = check_labels(y, groups)
        check_enough_samples(len(y), self.num_partitions)
        order = self._rng().permutation(len(y)).astype(np.int64)
        return list(np.array_split(order, self.num_partitions))
