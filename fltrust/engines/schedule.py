"""The batch schedule of vectorised local training: every client's mini-batches, laid out per stacked step.

:func:`batch_schedule` draws each client's epoch orders exactly as the sequential path
(:meth:`fltrust.engines.training.LocalTrainer.train`) does -- ``torch.randperm`` from a CPU generator
seeded with the client's seed, one permutation per epoch -- and lays them out as index tensors
``(steps, clients, batch)`` with per-sample weights (partial batches padded with weight 0, the
real rows weighing ``1/r``) for :class:`fltrust.engines.vectorized.VectorTrainer`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["BatchSchedule", "batch_schedule"]


@dataclass
class BatchSchedule:
    """Every client's mini-batches for a whole local training, laid out per stacked step.

    Clients are in *stack order* (``order``: descending number of steps, ties by position).

    Attributes
    ----------
    index : LongTensor (S, K, B)
        Row of each batch element in the concatenated data of the K clients (padding: the
        client's first sample, with weight 0).
    weight : Tensor (S, K, B)
        ``1/r`` for the r real samples of the batch, 0 for padding and for finished clients.
    loss_weight : DoubleTensor (S, K)
        ``r`` in the client's last epoch (the reported loss), 0 otherwise.
    active : list of int
        Number of clients still training at each step (a prefix of the stack).
    batch_rows : list of list of int
        Real batch size of each active client at each step (dropout masks).
    orders : list of LongTensor (E, n_k)
        The per-epoch permutations (stack order), as ``torch.randperm`` drew them.
    num_steps : list of int
        Steps of each client (stack order).
    report : list of bool
        Whether step s counts towards some client's reported loss (``loss_weight[s] > 0``); the
        trainers compute the loss only in those steps.
    """

    order: list[int]
    index: torch.Tensor
    weight: torch.Tensor
    loss_weight: torch.Tensor
    active: list[int]
    batch_rows: list[list[int]]
    orders: list[torch.Tensor]
    num_steps: list[int]
    report: list[bool]


def batch_schedule(sizes: Sequence[int], seeds: Sequence[int], epochs: int, batch_size: int,
                   device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> BatchSchedule:
    """The sequential path's batch order of every client (same generator, same draws).

    Parameters
    ----------
    sizes : sequence of int
        n_k, the training rows of each of the K clients (their data concatenated in stack order
        is what ``index`` points into).
    seeds : sequence of int
        Each client's training seed (seeds its ``torch.randperm`` generator).
    epochs : int
        Local epochs.
    batch_size : int
        B, the mini-batch size.
    device : torch.device or str
        Where the tensors of the schedule live (default ``"cpu"``; the orders stay on the CPU).
    dtype : torch.dtype
        The dtype of ``weight`` (default float32; ``loss_weight`` is float64).

    Returns
    -------
    BatchSchedule

    Examples
    --------
    >>> s = batch_schedule([3, 1], seeds=[0, 1], epochs=1, batch_size=2)
    >>> s.order, s.num_steps, s.active, s.batch_rows
    ([0, 1], [2, 1], [2, 1], [[2, 1], [1]])
    >>> s.weight[1, 0].tolist()  # client 0's last batch: one real row, one padding
    [1.0, 0.0]
    """
    K, B = len(sizes), int(batch_size)
    nb = [math.ceil(n / B) for n in sizes]
    steps = [epochs * b for b in nb]
    order = sorted(range(K), key=lambda k: -steps[k])
    S = max(steps) if steps else 0
    starts = np.concatenate([[0], np.cumsum([sizes[k] for k in order])[:-1]]).astype(np.int64)
    index = torch.zeros(S, K, B, dtype=torch.long)
    weight = torch.zeros(S, K, B, dtype=torch.float64)
    loss_weight = torch.zeros(S, K, dtype=torch.float64)
    orders = []
    for j, k in enumerate(order):
        n = sizes[k]
        generator = torch.Generator(device="cpu").manual_seed(int(seeds[k]))
        perms = [torch.randperm(n, generator=generator) for _ in range(epochs)]
        orders.append(torch.stack(perms) if n else torch.zeros(epochs, 0, dtype=torch.long))
        if n == 0:
            continue
        width = nb[k] * B
        idx = torch.full((epochs, width), int(starts[j]), dtype=torch.long)
        idx[:, :n] = orders[-1] + int(starts[j])
        valid = torch.zeros(epochs, width, dtype=torch.float64)
        valid[:, :n] = 1.0
        valid = valid.view(steps[k], B)
        count = valid.sum(1, keepdim=True)
        index[: steps[k], j] = idx.view(steps[k], B)
        weight[: steps[k], j] = valid / count
        last = slice((epochs - 1) * nb[k], steps[k])
        loss_weight[last, j] = count[last, 0].double()
    active = [sum(1 for k in order if steps[k] > s) for s in range(S)]
    last_rows = [sizes[k] - (nb[k] - 1) * B for k in order]
    nbs = [nb[k] for k in order]
    batch_rows = [[B if (s % nbs[j]) != nbs[j] - 1 else last_rows[j] for j in range(active[s])] for s in range(S)]
    report = (loss_weight > 0).any(1).tolist()
    return BatchSchedule(order, index.to(device), weight.to(device, dtype), loss_weight.to(device), active,
                         batch_rows, orders, [steps[k] for k in order], report)
