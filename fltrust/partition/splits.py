"""From a partition config to client index sets: partitioner factory, validation splits, aux set.

:func:`build_client_splits` is the one place that turns a :class:`~fltrust.config.PartitionConfig`
and the training labels into what the FL engine needs: per-client training and validation
indices (into the *training* split) and the per-client label counts. The server's auxiliary set
D is drawn from the *test* split (:func:`select_aux`), so it never shares a sample with any
client (fairness spec 9, recommendation "FEMNIST aux set disjoint from client data"; docs/references.md#fairness-9). The
authors' FEMNIST-iid overlap of D and the clients (fairness spec 6.6, docs/references.md#fairness-6-6) is available as
the experiment switch ``partition.aux_source: client_pool`` (D drawn from the clients' own rows).

Seeds
-----
One partition seed ``s`` (``partition.seed``, or the run seed when that is ``None``) drives
everything: the partitioner uses ``np.random.default_rng(s)``, the per-client validation
splits ``np.random.default_rng([s, 1])`` (clients in order) and the aux draw
``np.random.default_rng([s, 2])``. The fairness authors left the validation splits and the
NSL-KDD aux draw unseeded (fairness spec 4, docs/references.md#fairness-4); here they are reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fltrust.config import PartitionConfig
from fltrust.partition.base import Partitioner, PartitionError, check_labels
from fltrust.partition.dirichlet import DirichletPartitioner
from fltrust.partition.iid import IidPartitioner
from fltrust.partition.natural import NaturalPartitioner

VAL_STREAM = 1
"""Second entropy word of the validation-split generator, ``default_rng([seed, VAL_STREAM])``."""
AUX_STREAM = 2
"""Second entropy word of the aux-set generator, ``default_rng([seed, AUX_STREAM])``."""


def resolve_partition_seed(cfg: PartitionConfig, seed: int) -> int:
    """``cfg.seed`` when set, else ``seed`` (the run seed)."""
    return int(seed if cfg.seed is None else cfg.seed)


def make_partitioner(cfg: PartitionConfig, seed: int) -> Partitioner:
    """Build the partitioner that ``cfg.scheme`` names.

    Parameters
    ----------
    cfg : PartitionConfig
        ``scheme`` picks :class:`~fltrust.partition.iid.IidPartitioner` (``"iid"``),
        :class:`~fltrust.partition.dirichlet.DirichletPartitioner` (``"dirichlet"``, with
        ``alpha``, ``min_partition_size``, ``self_balancing``) or
        :class:`~fltrust.partition.natural.NaturalPartitioner` (``"natural"``).
    seed : int
        Run seed, used when ``cfg.seed`` is ``None``.

    Returns
    -------
    Partitioner
    """
    partition_seed = resolve_partition_seed(cfg, seed)
    if cfg.scheme == "iid":
        return IidPartitioner(cfg.num_clients, partition_seed)
    if cfg.scheme == "dirichlet":
        return DirichletPartitioner(
            cfg.num_clients,
            cfg.alpha,
            partition_seed,
            min_partition_size=cfg.min_partition_size,
            self_balancing=cfg.self_balancing,
        )
    if cfg.scheme == "natural":
        return NaturalPartitioner(cfg.num_clients, partition_seed)
    raise PartitionError(
        f"partition.scheme={cfg.scheme!r} is not allowed; choose one of ['iid', 'dirichlet', 'natural']"
    )


def train_val_split(
    indices: np.ndarray, val_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Split one client's indices into local training and validation parts.

    The validation size is :math:`n_{val} = \\lceil f \\cdot n \\rceil` (Hugging Face
    ``Dataset.train_test_split(test_size=f)``, which the fairness authors called on every client,
    fairness spec 6.5 and 6.7; docs/references.md#fairness-6-5, #fairness-6-7), reduced when needed so that at least one
    training sample remains. As in Hugging Face, a permutation ``p`` of the client's samples is drawn and the
    first :math:`n_{val}` go to validation, the rest to training.

    Parameters
    ----------
    indices : np.ndarray
        The client's sample indices.
    val_fraction : float
        :math:`f \\in [0, 1)`; 0 gives an empty validation set (and no shuffle).
    rng : np.random.Generator
        Source of the permutation.

    Returns
    -------
    train_idx, val_idx : np.ndarray
        int64 arrays partitioning ``indices``.

    Notes
    -----
    The ceiling is taken of the floating-point product, exactly as Hugging Face and
    scikit-learn do, so e.g. :math:`0.07 \\cdot 100 = 7.000000000000001` gives 8 validation
    samples, not 7. NSL-KDD iid (1,511-1,512 samples, :math:`f = 0.01`) gives 16.

    Examples
    --------
    >>> tr, va = train_val_split(np.arange(1512), 0.01, np.random.default_rng(0))
    >>> len(tr), len(va)
    (1496, 16)
    """
    indices = np.asarray(indices, dtype=np.int64)
    if not 0 <= val_fraction < 1:
        raise PartitionError(f"partition.val_fraction={val_fraction!r} must lie in [0, 1)")
    n = len(indices)
    n_val = min(math.ceil(val_fraction * n), max(n - 1, 0))
    if n_val == 0:
        return indices.copy(), indices[:0].copy()
    permutation = rng.permutation(n)
    return indices[permutation[n_val:]], indices[permutation[:n_val]]


def three_way_split(
    indices: np.ndarray, shares: list[float], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""FederatedScope's per-client ``[train, val, test]`` split; returns ``(train, test)``.

    FederatedScope's LEAF loader calls scikit-learn's ``train_test_split`` twice per client:
    :math:`n_{train} = \lfloor s_{train} n \rfloor`, then of the remaining :math:`r` rows
    :math:`n_{val} = \lfloor s_{val} / (s_{val} + s_{test}) \cdot r \rfloor` form its validation
    part and the rest its test part. fltrust measures a client on the test part, so that part
    takes the place of :func:`train_val_split`'s validation set; the validation part is left out.
    With a test share above 0 the test part holds at least one row once a client has two; a
    one-row client keeps its row for training and holds out nothing (as :func:`train_val_split`).

    Parameters
    ----------
    indices : np.ndarray
        The client's sample indices.
    shares : list of float
        ``[train, val, test]`` summing to 1 (``partition.client_splits``).
    rng : np.random.Generator
        Source of the permutation.

    Returns
    -------
    train_idx, test_idx : np.ndarray

    Examples
    --------
    >>> tr, te = three_way_split(np.arange(10), [0.6, 0.2, 0.2], np.random.default_rng(0))
    >>> len(tr), len(te)
    (6, 2)
    """
    indices = np.asarray(indices, dtype=np.int64)
    n = len(indices)
    if n < 2:  # as train_val_split: the only row trains, nothing is held out
        return indices.copy(), indices[:0].copy()
    n_train = max(1, int(math.floor(shares[0] * n)))
    rest = n - n_train
    n_val = int(math.floor(shares[1] / (shares[1] + shares[2]) * rest))
    permutation = indices[rng.permutation(n)]
    return permutation[:n_train], permutation[n_train + n_val:]


def select_aux(n_test: int, fraction: float, max_samples: int | None, rng: np.random.Generator) -> np.ndarray:
    """Draw the server's auxiliary set D from the test split.

    :math:`|D| = \\min(\\lceil f \\cdot n_{test} \\rceil, \\text{max\\_samples})`, drawn uniformly
    without replacement; with :math:`f = 1` and no cap D is the whole test split (CIFAR-10 in the
    fairness paper, fairness spec 6.5). NSL-KDD used :math:`f = 0.01` of 34,394 test rows, i.e.
    344 samples (fairness spec 6.7).

    Parameters
    ----------
    n_test : int
        Size of the test split.
    fraction : float
        :math:`f \\in (0, 1]` (``partition.aux_fraction``).
    max_samples : int or None
        Cap on :math:`|D|` (``partition.aux_max_samples``).
    rng : np.random.Generator
        Source of the draw (not used when D is the whole test split).

    Returns
    -------
    np.ndarray
        Sorted int64 indices into the test split.
    """
    if n_test < 1:
        raise PartitionError(f"the test split is empty (n_test={n_test}); the aux set D needs test samples")
    if not 0 < fraction <= 1:
        raise PartitionError(f"partition.aux_fraction={fraction!r} must lie in (0, 1]")
    if max_samples is not None and max_samples < 1:
        raise PartitionError(f"partition.aux_max_samples={max_samples!r} must be >= 1 or None")
    size = min(math.ceil(fraction * n_test), n_test if max_samples is None else max_samples)
    if size >= n_test:
        return np.arange(n_test, dtype=np.int64)
    return np.sort(rng.choice(n_test, size=size, replace=False)).astype(np.int64)


def class_counts(y: np.ndarray, partitions: list[np.ndarray], num_classes: int) -> np.ndarray:
    """Label counts per client: ``counts[c, k]`` = samples of class ``k`` held by client ``c``.

    Parameters
    ----------
    y : np.ndarray
        Integer labels in ``[0, num_classes)``.
    partitions : list of np.ndarray
        Index arrays into ``y``, one per client.
    num_classes : int
        Number of label values K.

    Returns
    -------
    np.ndarray
        int64 array of shape ``(C, K)``.

    Examples
    --------
    >>> class_counts(np.array([0, 1, 1, 2]), [np.array([0, 1]), np.array([2, 3])], 3)
    array([[1, 1, 0],
           [0, 1, 1]])
    """
    y = check_labels(y)
    if num_classes < 1:
        raise PartitionError(f"num_classes={num_classes} must be at least 1")
    if y.min() < 0 or y.max() >= num_classes:
        raise PartitionError(
            f"labels span [{y.min()}, {y.max()}] but num_classes={num_classes}; labels must lie in [0, num_classes)"
        )
    rows = [np.bincount(y[np.asarray(indices, dtype=np.int64)], minlength=num_classes) for indices in partitions]
    return np.array(rows, dtype=np.int64).reshape(len(partitions), num_classes)


@dataclass(frozen=True)
class ClientSplits:
    """Every client's training and validation indices, plus the server's aux indices.

    Attributes
    ----------
    scheme : str
        Partition scheme (``partition.scheme``).
    seed : int
        The partition seed that produced these splits.
    train, val : list of np.ndarray
        Per-client int64 indices into the *training* split (disjoint across clients and
        between a client's train and val parts).
    class_counts : np.ndarray
        ``(C, K)`` training label counts (``RunInfo.client_class_counts``).
    val_class_counts : np.ndarray
        ``(C, K)`` validation label counts.
    client_groups : np.ndarray or None
        Natural group id of each client (natural scheme only).
    aux : np.ndarray or None
        Sorted int64 indices forming the aux set D (``None`` when ``n_test`` was not given to
        :func:`build_client_splits`): into the *test* split, or into the *training* split when
        ``aux_source == "client_pool"``.
    aux_source : str
        ``partition.aux_source``.
    """

    scheme: str
    seed: int
    train: list[np.ndarray]
    val: list[np.ndarray]
    class_counts: np.ndarray
    val_class_counts: np.ndarray
    client_groups: np.ndarray | None = None
    aux: np.ndarray | None = None
    aux_source: str = "test"

    @property
    def num_clients(self) -> int:
        """Number of clients C."""
        return len(self.train)

    def num_samples(self) -> np.ndarray:
        """Training samples per client (int64, length C)."""
        return np.array([len(t) for t in self.train], dtype=np.int64)

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable description for run records."""
        return {
            "scheme": self.scheme,
            "seed": self.seed,
            "num_clients": self.num_clients,
            "train_samples": self.num_samples().tolist(),
            "val_samples": [len(v) for v in self.val],
            "class_counts": self.class_counts.tolist(),
            "natural_groups": None if self.client_groups is None else self.client_groups.tolist(),
            "aux_samples": None if self.aux is None else len(self.aux),
            "aux_source": self.aux_source,
        }


def build_client_splits(
    y: np.ndarray,
    groups: np.ndarray | None,
    cfg: PartitionConfig,
    seed: int,
    *,
    num_classes: int | None = None,
    n_test: int | None = None,
) -> ClientSplits:
    """Partition the training split into clients and hold out each client's validation part.

    Steps: :func:`make_partitioner` → ``partition(y, groups)`` → :func:`train_val_split` of every
    client with ``cfg.val_fraction`` (or :func:`three_way_split` with ``cfg.client_splits``) →
    :func:`class_counts`; when ``n_test`` is given, also :func:`select_aux` with
    ``cfg.aux_fraction`` / ``cfg.aux_max_samples``. The aux set comes
    from the test split, so it is disjoint from all client data (see the module docstring), unless
    ``cfg.aux_source == "client_pool"``: then it is drawn from the clients' pooled training and
    validation rows (indices into the training split).

    Parameters
    ----------
    y : np.ndarray
        Training labels, shape ``(N,)``.
    groups : np.ndarray or None
        Natural client of every training sample (needed for ``scheme="natural"``).
    cfg : PartitionConfig
        Partition settings.
    seed : int
        Run seed, used when ``cfg.seed`` is ``None``.
    num_classes : int or None, optional
        Number of classes K (default: ``max(y) + 1``).
    n_test : int or None, optional
        Size of the test split; when given, the aux set D is drawn too.

    Returns
    -------
    ClientSplits
    """
    y = check_labels(y, groups)
    partition_seed = resolve_partition_seed(cfg, seed)
    partitioner = make_partitioner(cfg, partition_seed)
    partitions = partitioner.partition(y, groups)

    val_rng = np.random.default_rng([partition_seed, VAL_STREAM])
    pairs = [three_way_split(indices, list(cfg.client_splits), val_rng) if cfg.client_splits is not None
             else train_val_split(indices, cfg.val_fraction, val_rng) for indices in partitions]
    train, val = [pair[0] for pair in pairs], [pair[1] for pair in pairs]

    k = int(y.max()) + 1 if num_classes is None else int(num_classes)
    aux = None
    if n_test is not None:
        aux_rng = np.random.default_rng([partition_seed, AUX_STREAM])
        if cfg.aux_source == "client_pool":  # the authors' FEMNIST-iid overlap (fairness spec 6.6)
            pool = np.sort(np.concatenate(train + val)).astype(np.int64)
            aux = pool[select_aux(len(pool), cfg.aux_fraction, cfg.aux_max_samples, aux_rng)]
        else:
            aux = select_aux(n_test, cfg.aux_fraction, cfg.aux_max_samples, aux_rng)
    return ClientSplits(
        scheme=cfg.scheme,
        seed=partition_seed,
        train=train,
        val=val,
        class_counts=class_counts(y, train, k),
        val_class_counts=class_counts(y, val, k),
        client_groups=getattr(partitioner, "selected_groups_", None),
        aux=aux,
        aux_source=cfg.aux_source,
    )
