"""Partitioners: how a training split becomes federated clients.

One class per scheme, all with ``partition(y, groups) -> list of index arrays`` and one seed
(Flower Datasets' layout, without depending on it):

- :class:`IidPartitioner`: shuffle, then C contiguous near-equal shards;
- :class:`DirichletPartitioner`: label skew from per-class Dirichlet(alpha) proportions;
- :class:`NaturalPartitioner`: one client per natural group (FEMNIST writer, N-BaIoT device).

From a config: :func:`make_partitioner`, and :func:`build_client_splits` for the whole
train / validation / aux layout (:class:`ClientSplits`). Helpers: :func:`train_val_split`,
:func:`select_aux`, :func:`class_counts`, :func:`plot_class_distribution` (matplotlib is
imported only when plotting).
"""

from fltrust.partition.base import Partitioner, PartitionError
from fltrust.partition.dirichlet import DirichletPartitioner
from fltrust.partition.iid import IidPartitioner
from fltrust.partition.natural import NaturalPartitioner
from fltrust.partition.plots import plot_class_distribution
from fltrust.partition.splits import (
    ClientSplits,
    build_client_splits,
    class_counts,
    make_partitioner,
    resolve_partition_seed,
    select_aux,
    train_val_split,
)

__all__ = [
    "ClientSplits",
    "DirichletPartitioner",
    "IidPartitioner",
    "NaturalPartitioner",
    "PartitionError",
    "Partitioner",
    "build_client_splits",
    "class_counts",
    "make_partitioner",
    "plot_class_distribution",
    "resolve_partition_seed",
    "select_aux",
    "train_val_split",
]
