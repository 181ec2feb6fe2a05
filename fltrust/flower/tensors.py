"""What fltrust reads from a Flower app's data and model: tensors, labels, device, number of classes.

:func:`as_tensors` turns a DataLoader (pairs or dict batches, e.g. Flower's quickstart) or an
``(x, y)`` pair into ``(inputs, labels)`` tensors; :func:`read_labels` reads a training set's
labels without loading its inputs where the dataset allows it; :func:`model_device` and
:func:`model_num_classes` are the model's device and number of classes.
:mod:`fltrust.flower.app` (``instrument``, ``client_report``) uses them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import TensorDataset

__all__ = ["as_tensors", "model_device", "model_num_classes", "read_labels"]


def _split_batch(batch: Any, batch_keys: tuple[str, str] | None, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(inputs, labels)`` of one batch: a pair, or a dict (``batch_keys``, or its one integer vector)."""
    if isinstance(batch, Mapping):
        if batch_keys is not None:
            missing = [k for k in batch_keys if k not in batch]
            if missing:
                raise ValueError(f"{what}: the batches have no key(s) {missing} (keys: {sorted(batch)}); "
                                 "fix batch_keys=(inputs, labels)")
            return torch.as_tensor(batch[batch_keys[0]]), torch.as_tensor(batch[batch_keys[1]])
        tensors = {k: v for k, v in batch.items() if isinstance(v, torch.Tensor)}
        labels = [k for k, v in tensors.items() if v.ndim == 1 and not v.is_floating_point()]
        inputs = [k for k in tensors if k not in labels]
        if len(labels) != 1 or len(inputs) != 1:
            raise ValueError(f"{what}: cannot tell inputs from labels in batches with keys {sorted(batch)}; "
                             "pass batch_keys=(inputs key, labels key), e.g. batch_keys=('img', 'label')")
        return tensors[inputs[0]], tensors[labels[0]]
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return torch.as_tensor(batch[0]), torch.as_tensor(batch[1])
    raise ValueError(f"{what}: expected (inputs, labels) pairs or dict batches, got {type(batch).__name__}")


def as_tensors(data: Any, *, what: str = "data", batch_keys: tuple[str, str] | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """All of ``data`` as ``(inputs, labels)`` tensors (on the CPU, labels int64).

    Parameters
    ----------
    data : DataLoader, iterable of batches, or (x, y)
        A ``torch.utils.data.DataLoader`` (or any iterable) of ``(inputs, labels)`` pairs or of
        dicts (Flower's quickstart: ``{"img": ..., "label": ...}``), or one ``(x, y)`` pair of
        tensors or arrays.
    what : str
        Named in errors (``"aux="``).
    batch_keys : (str, str) or None
        Keys of inputs and labels in dict batches; ``None`` = the dict's one integer vector is
        the labels and its one other tensor the inputs.

    Returns
    -------
    (torch.Tensor, torch.Tensor)

    Examples
    --------
    >>> x, y = as_tensors([{"img": torch.zeros(2, 3), "label": torch.tensor([0, 1])}] * 2)
    >>> tuple(x.shape), y.tolist()
    ((4, 3), [0, 1, 0, 1])
    """
    if isinstance(data, (tuple, list)) and len(data) == 2 and not isinstance(data[0], (tuple, list, Mapping)):
        x, y = torch.as_tensor(data[0]), torch.as_tensor(data[1])
    else:
        if not isinstance(data, Iterable):
            raise ValueError(f"{what}: pass a DataLoader or (x, y) tensors, got {type(data).__name__}")
        parts = [_split_batch(batch, batch_keys, what) for batch in data]
        if not parts:
            raise ValueError(f"{what}: the DataLoader yielded no batch")
        x = torch.cat([p[0].detach().cpu() for p in parts])
        y = torch.cat([p[1].detach().cpu().reshape(-1) for p in parts])
    if len(x) != len(y) or len(y) == 0:
        raise ValueError(f"{what}: needs as many labels as samples and at least one sample (got {len(x)} and {len(y)})")
    if y.is_floating_point() and not torch.equal(y, y.round()):
        raise ValueError(f"{what}: labels must be class indices (integers), got float values")
    return x.detach().cpu(), y.detach().cpu().long().reshape(-1)


def read_labels(data: Any, batch_keys: tuple[str, str] | None, what: str) -> torch.Tensor:
    """The labels of ``data``, read without loading the inputs where the dataset allows it.

    A ``TensorDataset`` (its label tensor), a torchvision dataset (``targets``) and a Hugging Face
    dataset (its label column: ``batch_keys[1]``, else ``label`` / ``labels``) are read directly;
    any other DataLoader is iterated once (inputs included).

    Parameters
    ----------
    data : DataLoader, iterable of batches, or (x, y)
        As :func:`as_tensors` takes it.
    batch_keys : (str, str) or None
        Keys of inputs and labels in dict batches (:func:`as_tensors`).
    what : str
        Named in errors.

    Returns
    -------
    torch.Tensor
        The labels, int64 on the CPU.
    """
    dataset: Any = getattr(data, "dataset", None)
    if isinstance(dataset, TensorDataset) and len(dataset.tensors) == 2:
        return dataset.tensors[1].detach().cpu().long().reshape(-1)
    targets = getattr(dataset, "targets", None)  # torchvision datasets
    if targets is not None and len(targets) == len(dataset):
        return torch.as_tensor(np.asarray(targets)).long().reshape(-1)
    columns = getattr(dataset, "column_names", None)  # Hugging Face datasets (Flower's FederatedDataset)
    if isinstance(columns, list) and hasattr(dataset, "with_transform"):
        names = [batch_keys[1]] if batch_keys else ["label", "labels"]
        column = next((c for c in names if c in columns), None)
        if column is not None:
            return torch.as_tensor(np.asarray(dataset.with_transform(None)[column])).long().reshape(-1)
    return as_tensors(data, what=what, batch_keys=batch_keys)[1]


def model_device(model: nn.Module) -> torch.device:
    """The device of ``model``'s first parameter (else buffer); the CPU for a model without either.

    Parameters
    ----------
    model : nn.Module
        Any model.

    Returns
    -------
    torch.device
    """
    tensor = next(itertools.chain(model.parameters(), model.buffers()), None)
    return torch.device("cpu") if tensor is None else tensor.device


def model_num_classes(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    """K from the model's output width (one logit = binary), at least the labels seen.

    Parameters
    ----------
    model : nn.Module
        The app's model (evaluated on one sample, in eval mode; its mode is restored).
    x, y : torch.Tensor
        Inputs (the first is fed to the model) and integer labels.

    Returns
    -------
    int
        The number of classes K.
    """
    was_training = model.training
    model.eval()
    with torch.no_grad():
        width = int(model(x[:1].to(model_device(model))).shape[-1])
    model.train(was_training)
    return max(2 if width == 1 else width, int(y.max()) + 1)
