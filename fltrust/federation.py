"""A prepared federation: the dataset, its client partition and the server's auxiliary set.

Every engine (in-process, Flower) and every observer builder starts from the same
:class:`Federation`, so both engines train on identical client data -- including the poisoned
training rows of a data-level attack (``attack.kind: label_flip | backdoor``, applied by
:func:`fltrust.attacks.poison_federation`; ``Federation.attack`` holds the run's attack plan).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from fltrust.config import ExperimentConfig
from fltrust.data import load_dataset
from fltrust.data.base import ArraySplit, DatasetBundle
from fltrust.partition import build_client_splits, resolve_partition_seed


def resolve_device(name: str) -> torch.device:
    """``cpu``, ``cuda`` or ``auto`` (cuda when available); a clear error if cuda is missing."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("run.device='cuda' but no CUDA device is visible; use --device cpu")
    return torch.device(name)


@dataclass
class Federation:
    """Data of a prepared experiment, already on the run's device."""

    bundle: DatasetBundle
    x_train: torch.Tensor
    y_train: torch.Tensor
    train_index: list[torch.Tensor]
    val_index: list[torch.Tensor]
    x_aux: torch.Tensor
    y_aux: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    class_counts: np.ndarray
    train_columns: list[np.ndarray] | None = None  # NSL-KDD one-hot layout of each client's train rows
    val_columns: list[np.ndarray] | None = None  # ... and of its validation rows (faithful bug)
    partition: dict[str, Any] = field(default_factory=dict)
    attack: Any = None  # fltrust.attacks.AttackPlan of the run (None: built without prepare_federation)

    @property
    def num_clients(self) -> int:
        return len(self.train_index)

    def client_tensors(self, cid: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x_train, y_train, x_val, y_val) of one client."""
        tr, va = self.train_index[cid], self.val_index[cid]
        x_tr, x_va = self.x_train[tr], self.x_train[va]
        if self.train_columns is not None:
            x_tr = x_tr[:, torch.as_tensor(self.train_columns[cid], device=x_tr.device)]
        if self.val_columns is not None:
            x_va = x_va[:, torch.as_tensor(self.val_columns[cid], device=x_va.device)]
        return x_tr, self.y_train[tr], x_va, self.y_train[va]


def prepare_federation(cfg: ExperimentConfig, device: torch.device) -> Federation:
    """Load the dataset, partition it, select the auxiliary set and move everything to ``device``.

    The partition seed (``partition.seed``, else the run seed) draws everything that decides which
    samples exist and which a client holds: the dataset's own draws (a synthetic generator, the
    ``data.pooled_train_samples`` redraw, a ``data.max_*_samples`` subsample), the partition, the
    validation splits and the aux set. So repeats that share a ``partition.seed`` share their data
    and differ only in model initialisation, client sampling and batch order (the fairness
    authors' repeats, fairness spec 4; docs/references.md#fairness-4).
    """
    seed = cfg.effective_seed()
    bundle = load_dataset(cfg.data, seed=resolve_partition_seed(cfg.partition, seed))
    splits = build_client_splits(bundle.train.y, bundle.train.groups, cfg.partition, seed,
                                 num_classes=bundle.num_classes, n_test=len(bundle.test))
    aux = splits.aux
    aux_split = bundle.train if cfg.partition.aux_source == "client_pool" else bundle.test
    train_columns = val_columns = None
    x_aux_np = aux_split.x[aux]
    if cfg.data.onehot_order != "global":
        if cfg.data.name != "nsl_kdd":
            raise ValueError(f"data.onehot_order={cfg.data.onehot_order!r} only applies to data.name='nsl_kdd'")
        if aux_split is not bundle.test:
            raise ValueError("partition.aux_source='client_pool' needs data.onehot_order='global'")
        train_columns, val_columns, aux_columns = onehot_layouts(
            cfg.data.onehot_order, bundle.train, bundle.test, splits.train, splits.val, aux)
        x_aux_np = x_aux_np[:, aux_columns]

    def to(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, device=device)

    federation = Federation(
        bundle=bundle,
        x_train=to(bundle.train.x),
        y_train=to(bundle.train.y),
        train_index=[to(np.asarray(i, dtype=np.int64)) for i in splits.train],
        val_index=[to(np.asarray(i, dtype=np.int64)) for i in splits.val],
        x_aux=to(x_aux_np),
        y_aux=to(aux_split.y[aux]),
        x_test=to(bundle.test.x),
        y_test=to(bundle.test.y),
        class_counts=splits.class_counts,
        train_columns=train_columns,
        val_columns=val_columns,
        partition=splits.summary(),
    )
    # the attack of cfg.attack: data-level poisoning rewrites copies of the malicious clients'
    # training rows here, so that every engine trains on them (fltrust.attacks)
    from fltrust.attacks import poison_federation

    return poison_federation(federation, cfg)


def sample_clients(seed: int, round_: int, num_clients: int, per_round: int) -> np.ndarray:
    """Participants of a round: ``per_round`` of ``num_clients`` without replacement, sorted.

    Seeded by (run seed, round), so every engine samples the same clients.
    """
    rng = np.random.default_rng([seed, round_, 11])
    return np.sort(rng.choice(num_clients, size=per_round, replace=False)).astype(np.int64)


def onehot_layouts(order: str, train: ArraySplit, test: ArraySplit, train_index: list[np.ndarray],
                   val_index: list[np.ndarray], aux: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """NSL-KDD column permutations of the authors' one-hot bug (fairness spec 6.7, docs/references.md#fairness-6-7).

    Returns the layout of each client's training rows, of each client's validation rows and of
    the auxiliary set (see :func:`fltrust.data.nsl_kdd.per_partition_column_order`):

    - ``"per_split"``: every set encoded on its own, as the authors' ``apply_transforms`` ran on
      each client's train split, each validation split and the auxiliary set separately;
    - ``"per_partition"``: a client's train and validation rows encoded together.
    """
    from fltrust.data.nsl_kdd import per_partition_column_order

    if order == "per_split":
        train_columns = [per_partition_column_order(train, tr) for tr in train_index]
        val_columns = [per_partition_column_order(train, va) for va in val_index]
    elif order == "per_partition":
        train_columns = [per_partition_column_order(train, np.concatenate([tr, va]))
                         for tr, va in zip(train_index, val_index)]
        val_columns = train_columns
    else:
        raise ValueError(f"onehot_order={order!r}; choose per_split or per_partition")
    return train_columns, val_columns, per_partition_column_order(test, aux)
