r"""Poisoning attacks run by malicious clients inside the FL loop, and how to measure them.

One :class:`AttackPlan` (built from the config's ``attack`` section, :class:`fltrust.config.AttackConfig`)
says which clients are malicious and what they do. Both engines use it the same way:

- **data-level** attacks rewrite *copies* of the malicious clients' training rows once, when the
  federation is built (:func:`poison_federation`, called by
  :func:`fltrust.federation.prepare_federation`); every engine then trains on the same poisoned rows,
  and nobody else's rows, validation rows, the auxiliary set or the test split change:

  ``label_flip``
      a share ``flip_fraction`` of a malicious client's rows (seeded) gets label ``K - 1 - y``
      (or ``target_label`` when set) -- Tolpegin et al. 2020;
  ``backdoor``
      a share ``poison_fraction`` of its rows gets the trigger (the first ``trigger_size``
      features of a tabular row, or a ``trigger_size`` x ``trigger_size`` patch in the
      bottom-right corner of every image channel, set to ``trigger_value``) and the label
      ``target_label`` -- Gu et al. 2017 (BadNets), Bagdasaryan et al. 2020;

- **update-level** attacks change what a malicious client sends after its honest local training
  (:func:`poison_update`; in-process: :meth:`fltrust.engines.inprocess.Engine.after_local_updates`, Flower: the
  ClientApp), with :math:`\theta` the received global model and :math:`w` the trained one:

  .. math:: w_{sent} = \theta + s\,(w - \theta), \qquad s = -1 \ (\texttt{sign\_flip}),\ s = \texttt{scale}\ (\texttt{scale})

  (every array of the ``state_dict``, buffers included; integer buffers are rounded back).

A client's *performance* (the validation accuracy in the run record) is that of the model it
trained, before the update-level attack; the server aggregates the sent model. Rounds of an attacked
run carry ``client_metrics["malicious"]`` (1 = malicious) and ``server_metrics["num_malicious"]``
(malicious clients among those whose update reached the server); the run summary gets an ``attack``
block (:func:`attack_summary`). Under Flower the ClientApp itself applies the update-level attack
and reports ``malicious``; data-level poisoning reaches it with the shared federation.

Measuring: :func:`attack_success_rate` (backdoor: share of triggered non-target rows classified as
the target), :func:`clean_accuracy`, and :func:`fltrust.experiment.defence_comparison`, which runs clean /
attacked-undefended / attacked-defended experiments and returns the numbers that
:func:`fltrust.trust.measures.poisoning.attack_outcome` combines.

This module imports only the config, numpy and torch (engines and metrics both use it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.config import AttackConfig, ExperimentConfig
from fltrust.names import DATA_ATTACKS, AttackKind

Params = list[np.ndarray]

__all__ = [
    "AttackPlan",
    "apply_trigger",
    "attack_success_rate",
    "attack_summary",
    "clean_accuracy",
    "flip_labels",
    "malicious_clients",
    "poison_federation",
    "poison_update",
    "update_factor",
]


# --------------------------------------------------------------------------------------------
# Who is malicious, and what they do
# --------------------------------------------------------------------------------------------
def malicious_clients(attack: AttackConfig, num_clients: int, seed: int) -> list[int]:
    """The malicious client ids: ``attack.malicious_clients``, else ``attack.num_malicious`` ids
    drawn without replacement from a generator seeded by (run seed, 29); sorted.

    Examples
    --------
    >>> from fltrust.config import AttackConfig
    >>> malicious_clients(AttackConfig(kind="sign_flip", malicious_clients=[4, 1]), 10, seed=0)
    [1, 4]
    >>> len(malicious_clients(AttackConfig(kind="sign_flip", num_malicious=3), 10, seed=0))
    3
    """
    if attack.kind == "none":
        return []
    if attack.malicious_clients is not None:
        ids = sorted(int(c) for c in attack.malicious_clients)
        bad = [c for c in ids if not 0 <= c < num_clients]
        if bad:
            raise ValueError(f"attack.malicious_clients {bad} are not client ids (there are {num_clients} clients)")
        return ids
    if attack.num_malicious > num_clients:
        raise ValueError(f"attack.num_malicious={attack.num_malicious} exceeds the {num_clients} clients")
    rng = np.random.default_rng([int(seed), 29])
    return sorted(int(c) for c in rng.choice(num_clients, size=attack.num_malicious, replace=False))


def update_factor(attack: AttackConfig) -> float | None:
    """The factor s of an update-level attack (``sign_flip``: -1, ``scale``: ``attack.scale``), else None."""
    if attack.kind == "sign_flip":
        return -1.0
    if attack.kind == "scale":
        return float(attack.scale)
    return None


@dataclass
class AttackPlan:
    """A run's attack, resolved for its federation (picklable; travels to Flower's ClientApps).

    Attributes
    ----------
    kind : str
        ``attack.kind``.
    malicious : list of int
        Malicious client ids (sorted).
    factor : float or None
        s of an update-level attack.
    target_label : int or None
        Backdoor target (label flip: the forced label, or None for K - 1 - y).
    trigger_size : int
    trigger_value : float or None
        Resolved backdoor trigger value (the data's maximum when the config leaves it ``None``).
    poisoned_rows : dict of int to int
        Data-level attacks: rows rewritten per malicious client.
    """

    kind: AttackKind = "none"
    malicious: list[int] = field(default_factory=list)
    factor: float | None = None
    target_label: int | None = None
    trigger_size: int = 3
    trigger_value: float | None = None
    poisoned_rows: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_config(cls, attack: AttackConfig, num_clients: int, *, seed: int) -> AttackPlan:
        """The plan of an ``attack`` section for a federation of ``num_clients`` clients.

        Parameters
        ----------
        attack : AttackConfig
            The ``attack`` section.
        num_clients : int
            The federation's clients.
        seed : int
            The run seed (``ExperimentConfig.effective_seed()``); the malicious ids are drawn with it.

        Returns
        -------
        AttackPlan
        """
        a = attack
        target = 0 if a.kind == "backdoor" and a.target_label is None else a.target_label
        return cls(kind=a.kind, malicious=malicious_clients(a, num_clients, seed),
                   factor=update_factor(a), target_label=target, trigger_size=a.trigger_size,
                   trigger_value=a.trigger_value)

    @property
    def active(self) -> bool:
        return self.kind != "none" and bool(self.malicious)

    def is_malicious(self, client_id: int) -> bool:
        return int(client_id) in set(self.malicious)

    def sent_params(self, client_id: int, global_params: Params, params: Params) -> Params:
        """What a client sends after training ``params`` from ``global_params``: ``params``, or
        ``theta + s (w - theta)`` (:func:`poison_update`) when it is malicious under an update-level attack.

        Parameters
        ----------
        client_id : int
            The client.
        global_params : Params
            The global model theta it received.
        params : Params
            Its trained model w.

        Returns
        -------
        Params
        """
        if self.factor is None or not self.is_malicious(client_id):
            return params
        return poison_update(global_params, params, self.factor)

    def describe(self) -> str:
        """One line, e.g. ``sign_flip by 2 of 10 clients [3, 7]``."""
        if not self.active:
            return "none"
        extra = f" (s = {self.factor:g})" if self.factor is not None else ""
        if self.kind == "backdoor":
            extra = f" (target {self.target_label}, trigger {self.trigger_size} x {self.trigger_value:g})"
        return f"{self.kind}{extra} by clients {self.malicious}"


# --------------------------------------------------------------------------------------------
# Update level
# --------------------------------------------------------------------------------------------
def poison_update(global_params: Params, params: Params, factor: float) -> Params:
    r"""``theta + factor * (w - theta)`` array by array (float64 arithmetic, cast back to each dtype).

    Examples
    --------
    >>> theta, w = [np.array([1.0, 2.0])], [np.array([2.0, 0.0])]
    >>> poison_update(theta, w, -1.0)[0].tolist()      # sign flip: theta - (w - theta)
    [0.0, 4.0]
    >>> poison_update(theta, w, 10.0)[0].tolist()      # scaled: theta + 10 (w - theta)
    [11.0, -18.0]
    """
    if len(global_params) != len(params):
        raise ValueError(f"{len(params)} arrays sent for a model of {len(global_params)}")
    out = []
    for g, w in zip(global_params, params):
        value = g.astype(np.float64) + float(factor) * (np.asarray(w, dtype=np.float64) - g.astype(np.float64))
        out.append(np.rint(value).astype(w.dtype) if np.issubdtype(w.dtype, np.integer) else value.astype(w.dtype))
    return out


# --------------------------------------------------------------------------------------------
# Data level
# --------------------------------------------------------------------------------------------
def flip_labels(y: torch.Tensor, num_classes: int, target_label: int | None = None) -> torch.Tensor:
    """``K - 1 - y`` (or ``target_label`` for every row), same dtype and device.

    Examples
    --------
    >>> flip_labels(torch.tensor([0, 1, 2, 9]), 10).tolist()
    [9, 8, 7, 0]
    >>> flip_labels(torch.tensor([0, 1]), 2, target_label=1).tolist()
    [1, 1]
    """
    if target_label is not None:
        return torch.full_like(y, int(target_label))
    return (num_classes - 1) - y


def apply_trigger(x: torch.Tensor, size: int, value: float) -> torch.Tensor:
    """A copy of ``x`` with the backdoor trigger: tabular rows (N, F) get ``value`` in features
    ``0..size-1``; images (N, C, H, W) a ``size`` x ``size`` patch in the bottom-right corner of
    every channel.

    Examples
    --------
    >>> apply_trigger(torch.zeros(1, 5), 2, 1.0).tolist()
    [[1.0, 1.0, 0.0, 0.0, 0.0]]
    >>> apply_trigger(torch.zeros(1, 1, 3, 3), 1, 1.0)[0, 0].tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    out = x.clone()
    if out.ndim == 2:
        out[:, : int(size)] = value
    elif out.ndim == 4:
        out[:, :, -int(size):, -int(size):] = value
    elif out.ndim == 3:  # (N, H, W) images without a channel axis
        out[:, -int(size):, -int(size):] = value
    else:
        raise ValueError(f"no trigger defined for inputs of shape {tuple(x.shape)}")
    return out


def _rows_to_poison(n: int, fraction: float, seed: int, client_id: int) -> np.ndarray:
    """Seeded choice of ``round(fraction * n)`` of a client's ``n`` training rows (positions)."""
    k = int(round(float(fraction) * n))
    rng = np.random.default_rng([int(seed), 31, int(client_id)])
    return np.sort(rng.choice(n, size=min(k, n), replace=False))


def poison_federation(federation: Any, cfg: ExperimentConfig) -> Any:
    """The federation with the attack of ``cfg`` applied (and its :class:`AttackPlan` in ``.attack``).

    Data-level attacks copy each malicious client's training rows to the end of ``x_train`` /
    ``y_train``, rewrite the chosen copies (labels flipped, or trigger + target label) and point
    the client's ``train_index`` at the copies; every other row, the validation rows, the
    auxiliary set and the test split are untouched, and so are the clients' sample counts and the
    partition summary (which describes the clean partition). Update-level attacks only attach the
    plan. ``federation`` is a :class:`fltrust.federation.Federation` (a new one is returned).
    """
    plan = AttackPlan.from_config(cfg.attack, federation.num_clients, seed=cfg.effective_seed())
    if not plan.active or plan.kind not in DATA_ATTACKS:
        return dataclasses.replace(federation, attack=plan)
    a = cfg.attack
    seed = cfg.effective_seed()
    num_classes = int(federation.bundle.num_classes)
    if plan.target_label is not None and not 0 <= plan.target_label < num_classes:
        raise ValueError(f"attack.target_label={plan.target_label} is not a label (0..{num_classes - 1})")
    if plan.kind == "backdoor" and plan.trigger_value is None:
        plan.trigger_value = float(federation.x_train.max()) if len(federation.x_train) else 1.0
    x_parts, y_parts = [federation.x_train], [federation.y_train]
    train_index = list(federation.train_index)
    next_row = len(federation.y_train)
    for cid in plan.malicious:
        rows = federation.train_index[cid]
        x, y = federation.x_train[rows].clone(), federation.y_train[rows].clone()
        fraction = a.flip_fraction if plan.kind == "label_flip" else a.poison_fraction
        chosen = torch.as_tensor(_rows_to_poison(len(y), fraction, seed, cid), dtype=torch.long, device=y.device)
        if plan.kind == "label_flip":
            y[chosen] = flip_labels(y[chosen], num_classes, plan.target_label)
        else:
            assert plan.trigger_value is not None and plan.target_label is not None  # a backdoor's: set above
            x[chosen] = apply_trigger(x[chosen], plan.trigger_size, float(plan.trigger_value))
            y[chosen] = int(plan.target_label)
        plan.poisoned_rows[int(cid)] = int(len(chosen))
        x_parts.append(x)
        y_parts.append(y)
        train_index[cid] = torch.arange(next_row, next_row + len(y), dtype=rows.dtype, device=rows.device)
        next_row += len(y)
    return dataclasses.replace(federation, x_train=torch.cat(x_parts), y_train=torch.cat(y_parts),
                               train_index=train_index, attack=plan)


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------
@torch.no_grad()
def _predict(model: nn.Module, x: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
    from fltrust.core.evaluation import predict

    model.eval()
    device = next(model.parameters()).device
    out = [predict(model(x[i:i + batch_size].to(device))).cpu() for i in range(0, len(x), batch_size)]
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.long)


def clean_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Accuracy of ``model`` on ``(x, y)`` (NaN for an empty set)."""
    if len(y) == 0:
        return float("nan")
    return float((_predict(model, x) == y.cpu()).float().mean())


def attack_success_rate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, attack: AttackPlan | AttackConfig,
                        *, trigger_value: float | None = None, return_counts: bool = False):
    """Backdoor attack success rate: the share of triggered rows whose true label is not the
    target that ``model`` classifies as the target.

    Parameters
    ----------
    model : nn.Module
    x, y : torch.Tensor
        Clean evaluation rows (e.g. the test split).
    attack : AttackPlan or AttackConfig
        A backdoor (its trigger and target label).
    trigger_value : float, optional
        Overrides the attack's trigger value (needed when an ``AttackConfig`` leaves it ``None``;
        an :class:`AttackPlan` from :func:`poison_federation` carries the resolved value).
    return_counts : bool
        Return ``(rate, successes, targets)`` instead of the rate.

    Returns
    -------
    float
        NaN when no row has a non-target label.
    """
    if attack.kind != "backdoor":
        raise ValueError(f"attack_success_rate applies to backdoor attacks, not {attack.kind!r}")
    target = 0 if attack.target_label is None else int(attack.target_label)
    value = trigger_value if trigger_value is not None else attack.trigger_value
    if value is None:
        raise ValueError("the trigger value is unresolved: pass trigger_value= or use the federation's AttackPlan")
    keep = y != target
    if not bool(keep.any()):
        return (float("nan"), 0, 0) if return_counts else float("nan")
    triggered = apply_trigger(x[keep], attack.trigger_size, float(value))
    successes = int((_predict(model, triggered) == target).sum())
    targets = int(keep.sum())
    rate = successes / targets
    return (rate, successes, targets) if return_counts else rate


def attack_summary(plan: AttackPlan | None, model: nn.Module, x_test: torch.Tensor, y_test: torch.Tensor,
                   records: Sequence[Any] = (), *, final_aux_accuracy: float | None = None) -> dict[str, Any]:
    """The run summary's ``attack`` block (``{}`` when no attack ran).

    ``model`` holds the final global model. Keys: ``kind``, ``description``, ``malicious_clients``,
    ``update_factor``, ``poisoned_rows``, ``target_label``, ``malicious_updates_aggregated``
    (summed over the rounds), ``clean_aux_accuracy`` (the final model on the server's clean
    auxiliary set), ``clean_test_accuracy``, and for a backdoor ``attack_success_rate`` with
    ``asr_successes`` / ``asr_targets`` (triggered non-target test rows), else ``None``.
    """
    if plan is None or not plan.active:
        return {}
    asr = successes = targets = None
    if plan.kind == "backdoor":
        asr, successes, targets = attack_success_rate(model, x_test, y_test, plan, return_counts=True)
    aggregated = sum(int(r.server_metrics.get("num_malicious", 0) or 0) for r in records if r.round > 0)
    return {"kind": plan.kind, "description": plan.describe(), "malicious_clients": list(plan.malicious),
            "update_factor": plan.factor, "poisoned_rows": {str(k): v for k, v in plan.poisoned_rows.items()},
            "target_label": plan.target_label, "malicious_updates_aggregated": aggregated,
            "clean_aux_accuracy": final_aux_accuracy, "clean_test_accuracy": clean_accuracy(model, x_test, y_test),
            "attack_success_rate": asr, "asr_successes": successes, "asr_targets": targets}


# --------------------------------------------------------------------------------------------
# Clean vs attacked vs defended
# --------------------------------------------------------------------------------------------
