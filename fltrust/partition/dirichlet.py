"""Label-skewed partitioning with per-class Dirichlet proportions (Hsu et al. 2019)."""

from __future__ import annotations

import logging

import numpy as np

from fltrust.partition.base import Partitioner, PartitionError, check_enough_samples, check_labels

logger = logging.getLogger(__name__)


class DirichletPartitioner(Partitioner):
    """Split every class over the clients in proportions drawn from a Dirichlet distribution.

    For each class :math:`k` (in ascending label order) draw
    :math:`p_k \\sim \\mathrm{Dir}(\\alpha \\mathbf{1}_C)` and give client :math:`c` the share
    :math:`p_{k,c}` of the class's samples (Hsu et al. 2019, Sec. 3). Small :math:`\\alpha`
    gives clients few classes (strong label skew); large :math:`\\alpha` approaches iid.

    The procedure follows Flower Datasets' ``DirichletPartitioner`` step by step:

    1. shuffle the dataset once (``FederatedDataset`` shuffles before partitioning);
    2. for each class, draw :math:`p_k`; with ``self_balancing``, set :math:`p_{k,c} = 0` for
       every client that already holds more than :math:`N / C` samples and renormalise;
    3. cut the class's (shuffled) indices at ``int(cumsum(p_k) * n_k)``;
    4. if some client has fewer than ``min_partition_size`` samples, redraw everything (at most
       ``max_attempts`` draws, then :class:`~fltrust.partition.base.PartitionError`);
    5. shuffle the indices within each client.

    Parameters
    ----------
    num_partitions : int
        Number of clients C.
    alpha : float
        Dirichlet concentration :math:`\\alpha > 0` (the same for every client).
    seed : int
        Seed of the one generator used for the shuffle, the draws and the final shuffles.
    min_partition_size : int, optional
        Smallest allowed client (default: 10, as in Flower Datasets).
    self_balancing : bool, optional
        Stop giving classes to clients above the average size (default: True).
    max_attempts : int, optional
        Number of Dirichlet draws before giving up (default: 10).

    Attributes
    ----------
    attempts_ : int
        Draws the last :meth:`partition` call needed (set after the call).

    Notes
    -----
    Self-balancing is not in Hsu et al. (2019); it comes from the code of Yurochkin et al.
    (2019), "Bayesian Nonparametric Federated Learning of Neural Networks" (arXiv:1905.12022),
    which Flower Datasets copied, and the fairness authors used it (``self_balancing=True``,
    fairness spec 6.5 and 6.7; docs/references.md#fairness-6-5, #fairness-6-7). It makes classes late in the label order
    sparser than :math:`\\alpha` alone suggests, because large clients stop receiving samples.

    Flower Datasets allows 11 draws (it raises on the 11th failure) and visits classes in
    order of first appearance in the shuffled dataset; here the classes are visited in
    ascending order and ``max_attempts`` draws are allowed. A draw in which every client that
    may still receive a class has proportion zero (possible only through floating-point
    underflow at tiny :math:`\\alpha`) counts as a failed attempt instead of dividing by zero.

    References
    ----------
    T.-M. H. Hsu, H. Qi, M. Brown, "Measuring the Effects of Non-Identical Data Distribution
    for Federated Visual Classification", arXiv:1909.06335, 2019.

    Examples
    --------
    >>> y = np.repeat(np.arange(4), 50)
    >>> parts = DirichletPartitioner(num_partitions=4, alpha=0.5, seed=1).partition(y)
    >>> sum(len(p) for p in parts)
    200
    """

    def __init__(
        self,
        num_partitions: int,
        alpha: float,
        seed: int,
        min_partition_size: int = 10,
        self_balancing: bool = True,
        *,
        max_attempts: int = 10,
    ) -> None:
        super().__init__(num_partitions, seed)
        if not np.isfinite(alpha) or alpha <= 0:
            raise PartitionError(f"partition.alpha={alpha!r} must be a finite number > 0")
        if min_partition_size < 0:
            raise PartitionError(f"partition.min_partition_size={min_partition_size} must be >= 0")
        if max_attempts < 1:
            raise PartitionError(f"max_attempts={max_attempts} must be at least 1")
        self.alpha = float(alpha)
        self.min_partition_size = int(min_partition_size)
        self.self_balancing = bool(self_balancing)
        self.max_attempts = int(max_attempts)
        self.attempts_: int | None = None

    def __repr__(self) -> str:
        return (
            f"DirichletPartitioner(num_partitions={self.num_partitions}, alpha={self.alpha}, "
            f"seed={self.seed}, min_partition_size={self.min_partition_size}, "
            f"self_balancing={self.self_balancing})"
        )

    def partition(self, y: np.ndarray, groups: np.ndarray | None = None) -> list[np.ndarray]:
        """Label-skewed partition of ``y`` (see the class docstring); ``groups`` is ignored."""
        y = check_labels(y, groups)
        n, num_clients = len(y), self.num_partitions
        check_enough_samples(n, num_clients)
        if num_clients * self.min_partition_size > n:
            raise PartitionError(
                f"partition.min_partition_size={self.min_partition_size} times "
                f"partition.num_clients={num_clients} exceeds the {n} training samples; "
                "lower one of them"
            )
        rng = self._rng()
        order = rng.permutation(n)  # the dataset shuffle
        shuffled_labels = y[order]
        class_indices = [order[shuffled_labels == k] for k in np.unique(y)]

        smallest = 0
        for attempt in range(1, self.max_attempts + 1):
            clients = self._draw(class_indices, n, rng)
            smallest = min(len(c) for c in clients) if clients is not None else 0
            if clients is not None and smallest >= self.min_partition_size:
                self.attempts_ = attempt
                break
            logger.debug("draw %d: smallest partition %d < %d", attempt, smallest, self.min_partition_size)
        else:
            raise PartitionError(
                f"DirichletPartitioner: after {self.max_attempts} draws some client still had fewer than "
                f"partition.min_partition_size={self.min_partition_size} samples (smallest: {smallest}) "
                f"with partition.alpha={self.alpha} and partition.num_clients={num_clients}; "
                "raise alpha, lower min_partition_size or use fewer clients"
            )
        out = [np.asarray(indices, dtype=np.int64) for indices in clients]
        for indices in out:
            rng.shuffle(indices)
        return out

    def _draw(
        self, class_indices: list[np.ndarray], n: int, rng: np.random.Generator
    ) -> list[list[int]] | None:
        """One Dirichlet assignment of all classes; ``None`` if balancing left no client."""
        num_clients = self.num_partitions
        average = n / num_clients
        clients: list[list[int]] = [[] for _ in range(num_clients)]
        for indices in class_indices:
            proportions = rng.dirichlet(np.full(num_clients, self.alpha))
            if self.self_balancing:
                sizes = np.array([len(c) for c in clients])
                proportions = np.where(sizes > average, 0.0, proportions)
                total = proportions.sum()
                if total <= 0:
                    return None
                proportions = proportions / total
            cuts = (np.cumsum(proportions) * len(indices)).astype(int)[:-1]
            for client, piece in zip(clients, np.split(indices, cuts)):
                client.extend(piece.tolist())
        return clients
