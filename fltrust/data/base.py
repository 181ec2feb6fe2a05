"""Engine-neutral dataset containers shared by every loader.

A loader returns a :class:`DatasetBundle`: a train split, a test split, and the facts the
rest of the kit needs (number of classes, model input shape, whether the data is synthetic,
which files it came from). Features are already in the model's input layout and dtype, so
the FL engine can move whole splits to the device once and index them with tensors.

Layouts
-------
- images: ``float32`` ``(N, C, H, W)`` (CIFAR-10 in [-1, 1], FEMNIST in [0, 1]);
- tabular: ``float32`` ``(N, D)`` (NSL-KDD 122 features, N-BaIoT 115 features);
- labels: ``int64`` ``(N,)``;
- ``groups``: ``int64`` ``(N,)`` natural client of each sample (FEMNIST writer, N-BaIoT
  device) or ``None`` when the dataset has no natural clients;
- ``extras``: per-sample side information kept for analysis (NSL-KDD attack name and category).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


class DatasetError(ValueError):
    """A dataset file is missing, corrupt or not in the expected format.

    The message always names the file and what was expected.
    """


def unreadable(path: Any, reason: str, dataset: str) -> DatasetError:
    """The error for a file that is empty, truncated or corrupt: names it, the reason and the fix."""
    return DatasetError(
        f"{path}: {reason}; the file is empty, truncated or corrupt: re-fetch it "
        f"(`fltrust data fetch {dataset}` says from where)"
    )


@dataclass(frozen=True)
class ArraySplit:
    """One split (train or test) of a dataset as plain numpy arrays."""

    x: np.ndarray
    y: np.ndarray
    groups: np.ndarray | None = None
    extras: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        columns = [("x", self.x), ("groups", self.groups), *((f"extras[{k!r}]", v) for k, v in self.extras.items())]
        for name, value in columns:
            if value is not None and len(value) != len(self.y):
                raise DatasetError(f"{name} has {len(value)} rows but y has {len(self.y)}")

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, index: np.ndarray) -> ArraySplit:
        """Rows ``index`` of this split (a new split; arrays are copied by fancy indexing)."""
        return ArraySplit(
            x=self.x[index],
            y=self.y[index],
            groups=None if self.groups is None else self.groups[index],
            extras={k: v[index] for k, v in self.extras.items()},
        )


@dataclass(frozen=True)
class DatasetBundle:
    """A loaded dataset: train and test splits plus the facts models and records need.

    Attributes
    ----------
    name : str
        Registry name (``cifar10``, ``femnist``, ``nsl_kdd``, ``n_baiot``, ``synthetic_*``).
    train, test : ArraySplit
        The two splits.
    num_classes : int
        Number of label values (2 for the binary intrusion datasets).
    input_shape : tuple of int
        Shape of one sample as the model receives it.
    synthetic : bool
        True when the samples are generated, not real. Everything computed from synthetic
        data is labelled so in records, figures and tables.
    group_names : list of str or None
        Name of each natural client id in ``groups`` (writer id, device name).
    class_names : list of str or None
        Name of each label value.
    source : dict
        Provenance: the files read (path, bytes, sha256) and loader options.
    """

    name: str
    train: ArraySplit
    test: ArraySplit
    num_classes: int
    input_shape: tuple[int, ...]
    synthetic: bool = False
    group_names: list[str] | None = None
    class_names: list[str] | None = None
    source: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Small JSON-serialisable description (used in run records and `fltrust data info`)."""
        return {
            "name": self.name,
            "synthetic": self.synthetic,
            "num_classes": self.num_classes,
            "input_shape": list(self.input_shape),
            "train_samples": len(self.train),
            "test_samples": len(self.test),
            "natural_clients": None if self.group_names is None else len(self.group_names),
            "source": self.source,
        }
