"""Datasets: loaders for the papers' four datasets, synthetic stand-ins, cache and fetcher.

Public API
----------
- :func:`data_root` -- the data root (argument, else ``$FLTRUST_DATA``, else ``./data``).
- :func:`load_dataset` -- a :class:`~fltrust.config.DataConfig` -> :class:`DatasetBundle`.
- :func:`dataset_info` -- what is on disk, with sizes, SHA-256 sums and sample counts
  (``fltrust data info``).
- :func:`fetch_dataset` -- download from the official source or explain the manual steps
  (``fltrust data fetch NAME``; also the published file set ``ffa-results``).
- Loaders for one folder: :func:`load_cifar10`, :func:`load_femnist`, :func:`load_nsl_kdd`,
  :func:`load_n_baiot`; synthetic generators in :data:`GENERATORS`.
- :func:`per_partition_column_order` -- the fairness authors' NSL-KDD one-hot bug, for faithful runs.

Modules: :mod:`~fltrust.data.base` (containers), :mod:`~fltrust.data.cache` (parsed-data cache),
:mod:`~fltrust.data.cifar10`, :mod:`~fltrust.data.femnist`, :mod:`~fltrust.data.nsl_kdd`,
:mod:`~fltrust.data.n_baiot`, :mod:`~fltrust.data.synthetic`, :mod:`~fltrust.data.registry`,
:mod:`~fltrust.data.info`, :mod:`~fltrust.data.fetch`.
"""

from fltrust.data.base import ArraySplit, DatasetBundle, DatasetError
from fltrust.data.cache import DatasetNotFoundError, cache_dir, clear_memory_cache
from fltrust.data.cifar10 import load_cifar10
from fltrust.data.femnist import load_femnist
from fltrust.data.fetch import fetch_dataset
from fltrust.data.info import dataset_info
from fltrust.data.n_baiot import load_n_baiot
from fltrust.data.nsl_kdd import load_nsl_kdd, per_partition_column_order
from fltrust.data.registry import SPECS, DataIntegrityWarning, SyntheticFallbackWarning, data_root, load_dataset
from fltrust.data.synthetic import GENERATORS

__all__ = [
    "ArraySplit",
    "DataIntegrityWarning",
    "DatasetBundle",
    "DatasetError",
    "DatasetNotFoundError",
    "GENERATORS",
    "SPECS",
    "SyntheticFallbackWarning",
    "cache_dir",
    "clear_memory_cache",
    "data_root",
    "dataset_info",
    "fetch_dataset",
    "load_cifar10",
    "load_dataset",
    "load_femnist",
    "load_n_baiot",
    "load_nsl_kdd",
    "per_partition_column_order",
]
