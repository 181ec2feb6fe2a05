"""Input shape and class count of every dataset, for configuration checks.

Kept apart from :mod:`fltrust.data.registry` so that :mod:`fltrust.config` can validate a
model/dataset pair without importing the loaders' registry (which reads configs).
"""

from __future__ import annotations

from fltrust.data import cifar10, femnist, n_baiot, nsl_kdd
from fltrust.data.base import DatasetError

INPUT_SPECS: dict[str, tuple[tuple[int, ...], int]] = {
    "cifar10": (cifar10.INPUT_SHAPE, len(cifar10.CLASS_NAMES)),
    "femnist": (femnist.INPUT_SHAPE, len(femnist.CLASS_NAMES)),
    "nsl_kdd": ((nsl_kdd.NUM_FEATURES,), len(nsl_kdd.CLASS_NAMES)),
    "n_baiot": ((n_baiot.NUM_FEATURES,), len(n_baiot.CLASS_NAMES)),
}
"""Model input shape of one sample and number of classes of each dataset (synthetic stand-ins:
the same as their real dataset)."""


def input_spec(name: str) -> tuple[tuple[int, ...], int]:
    """``(input_shape, num_classes)`` of a dataset or its synthetic stand-in (config validation)."""
    base = name.removeprefix("synthetic_")
    if base not in INPUT_SPECS:
        raise DatasetError(f"unknown dataset {name!r}; choose one of {sorted(INPUT_SPECS)}")
    return INPUT_SPECS[base]
