"""Local training on one client: optimisers, proximal terms and local DP-SGD.

:class:`LocalTrainer` owns one model instance that is re-loaded with the parameters each
client receives, so a round allocates no new models. Mini-batches are drawn with
``torch.randperm`` on tensors that already live on the run's device (no DataLoader), which
keeps the in-process engine fast on a GPU. Local DP-SGD goes through Opacus, which needs its
own (Poisson-sampling) DataLoader. The reported loss is accumulated on the device (no host
synchronisation per step).

Adam runs ``torch.optim.Adam(fused=True)``'s kernel on CPU (:func:`fused_adam`).

This is the *sequential* path (one client after another). Where it applies, the in-process engine
trains a round's clients side by side instead (:mod:`fltrust.engines.vectorized`), with the same batch
orders and optimiser math.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from fltrust.algorithms.privacy import LocalDP, trainable_mask
from fltrust.config import TrainingConfig
from fltrust.core.evaluation import EvalResult, evaluate, get_params, loss_per_sample, set_params
from fltrust.core.records import Params


class LocalTrainer:
    """Trains and evaluates copies of one architecture on client data."""

    def __init__(self, model: nn.Module, training: TrainingConfig, num_classes: int, device: torch.device) -> None:
        self.model = model.to(device)
        self.training = training
        self.num_classes = num_classes
        self.device = device
        # Evaluation batch: the authors' per-batch-sum loss depends on the batch size, so keep
        # it there; otherwise evaluate in large batches for speed.
        self.eval_batch_size = training.batch_size if training.loss_scaling == "per_batch_sum" else 1024

    # -- evaluation -----------------------------------------------------------------------
    def evaluate(self, params: Params, x: torch.Tensor, y: torch.Tensor) -> EvalResult:
        """Loss, accuracy and confusion matrix of ``params`` on ``(x, y)``.

        Parameters
        ----------
        params : Params
            The model to evaluate (``state_dict`` order), loaded into the trainer's model.
        x, y : torch.Tensor
            Inputs and integer labels, on the trainer's device.

        Returns
        -------
        EvalResult
            Loss under ``training.loss_scaling``, accuracy and confusion matrix.
        """
        set_params(self.model, params)
        return evaluate(
            self.model,
            x,
            y,
            num_classes=self.num_classes,
            batch_size=self.eval_batch_size,
            loss_scaling=self.training.loss_scaling,
        )

    # -- training -------------------------------------------------------------------------
    def _optimizer(self, parameters, lr: float | None = None, plain_sgd: bool = False,
                   private: bool = False) -> torch.optim.Optimizer:
        t = self.training
        lr = t.learning_rate if lr is None else lr
        if plain_sgd:
            return torch.optim.SGD(parameters, lr=lr)
        if t.optimizer == "adam":
            fused = fused_adam(self.device) and not private  # Opacus wraps the default kernel
            return torch.optim.Adam(parameters, lr=lr, weight_decay=t.weight_decay, fused=fused or None)
        return torch.optim.SGD(parameters, lr=lr, momentum=t.momentum, weight_decay=t.weight_decay)

    def train(
        self,
        params: Params,
        x: torch.Tensor,
        y: torch.Tensor,
        *,
        epochs: int,
        seed: int,
        proximal_center: Params | None = None,
        proximal_mu: float = 0.0,
        learning_rate: float | None = None,
        plain_sgd: bool = False,
    ) -> tuple[Params, float]:
        """Train from ``params`` for ``epochs`` epochs; return (new params, last-epoch mean loss).

        Parameters
        ----------
        params : Params
            The model training starts from (``state_dict`` order; not modified).
        x, y : torch.Tensor
            The client's training inputs and integer labels, on the trainer's device.
        epochs : int
            Passes over ``(x, y)``, each in a fresh random order of mini-batches of
            ``training.batch_size`` rows.
        seed : int
            Seeds the batch orders and dropout.
        proximal_center, proximal_mu
            Adds :math:`\\tfrac{\\mu}{2}\\lVert w - c \\rVert^2` to the loss (FedProx, Ditto's
            personal objective with :math:`\\mu = \\lambda`); ``c`` is a parameter set in
            ``state_dict`` order (its trainable entries are used). Off by default (``None``, 0.0).
        learning_rate, plain_sgd
            Override the optimiser (Ditto's personal track uses plain SGD with its own rate);
            by default ``training.learning_rate`` and ``training.optimizer``.

        Returns
        -------
        tuple of (Params, float)
            The trained model and the mean loss (proximal term included) over the last epoch.
        """
        set_params(self.model, params)
        model = self.model
        model.train()
        generator = torch.Generator(device="cpu").manual_seed(seed)
        torch.manual_seed(seed)  # dropout
        optimizer = self._optimizer(model.parameters(), learning_rate, plain_sgd)
        center = None
        if proximal_center is not None and proximal_mu > 0:
            center = [
                torch.as_tensor(c, device=self.device, dtype=p.dtype)
                for c, p in zip(_trainable_subset(model, proximal_center), model.parameters())
            ]
        n = len(y)
        batch = self.training.batch_size

        def batches():
            order = torch.randperm(n, generator=generator).to(self.device)
            for start in range(0, n, batch):
                index = order[start : start + batch]
                yield x[index], y[index]

        def step(xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_per_sample(model(xb), yb).mean()
            if center is not None:
                prox = sum(((p - c) ** 2).sum() for p, c in zip(model.parameters(), center))
                loss = loss + 0.5 * proximal_mu * prox
            loss.backward()
            if self.training.grad_clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), self.training.grad_clip)
            optimizer.step()
            return loss

        last_loss = self._epochs(epochs, batches, step)
        return get_params(model), last_loss

    def _epochs(self, epochs: int, batches: Callable[[], Iterable], step: Callable) -> float:
        """Run ``step(xb, yb) -> loss`` on every batch of ``batches()``, once per epoch; the mean loss of
        the last epoch (summed on the device: no host sync per step), NaN without epochs."""
        last_loss = float("nan")
        for epoch in range(epochs):
            total, count = torch.zeros((), dtype=torch.float64, device=self.device), 0
            report = epoch == epochs - 1
            for xb, yb in batches():
                loss = step(xb, yb)
                if report:
                    total += loss.detach().double() * len(yb)
                count += len(yb)
            if report:
                last_loss = float(total) / max(count, 1)
        return last_loss

    def train_private(
        self,
        params: Params,
        x: torch.Tensor,
        y: torch.Tensor,
        *,
        epochs: int,
        seed: int,
        dp: LocalDP,
    ) -> tuple[Params, float, list[list[Any]]]:
        """DP-SGD with Opacus (Abadi et al. 2016). Returns (params, last loss, accountant history).

        The history is the list of ``(noise_multiplier, sample_rate, steps)`` that Opacus's RDP
        accountant recorded; the caller accumulates it per client to report the epsilon spent.

        Parameters
        ----------
        params : Params
            The model training starts from (``state_dict`` order; not modified).
        x, y : torch.Tensor
            The client's training inputs and integer labels, on the trainer's device.
        epochs : int
            Passes of Opacus's Poisson-sampled loader (expected batch size
            ``min(training.batch_size, len(y))``).
        seed : int
            Seeds the sampling, dropout and the DP noise.
        dp : LocalDP
            The noise multiplier and the per-sample gradient clipping norm.

        Returns
        -------
        tuple of (Params, float, list)
            The trained model, the mean loss over the last epoch, and the accountant history.
        """
        from opacus import PrivacyEngine

        set_params(self.model, params)
        model = copy.deepcopy(self.model)
        model.train()
        torch.manual_seed(seed)
        dataset = torch.utils.data.TensorDataset(x, y)
        generator = torch.Generator(device="cpu").manual_seed(seed)
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=min(self.training.batch_size, len(y)), shuffle=True, generator=generator
        )
        optimizer = self._optimizer(model.parameters(), private=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Opacus warns about secure RNG in research mode
            engine = PrivacyEngine(accountant="rdp")
            private_model, private_opt, private_loader = engine.make_private(
                module=model,
                optimizer=optimizer,
                data_loader=loader,
                noise_multiplier=dp.noise_multiplier,
                max_grad_norm=dp.max_grad_norm,
                noise_generator=torch.Generator(device=self.device).manual_seed(seed),
            )

        def step(xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
            private_opt.zero_grad(set_to_none=True)
            loss = loss_per_sample(private_model(xb), yb).mean()
            with warnings.catch_warnings():
                # Opacus's per-sample hooks fire on module outputs because inputs need no grad
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                loss.backward()
            private_opt.step()
            return loss

        last_loss = self._epochs(epochs, lambda: ((xb, yb) for xb, yb in private_loader if len(yb)), step)
        history = [list(h) for h in engine.accountant.history]
        trained = private_model._module if hasattr(private_model, "_module") else private_model
        return get_params(trained), last_loss, history


def fused_adam(device: torch.device | str) -> bool:
    """Whether Adam runs ``torch.optim.Adam(fused=True)``'s kernel on ``device`` (CPU: yes).

    The same element-wise math as the default single-tensor kernel, in one pass over a tensor
    instead of eight (on CPU about 2.5x faster for the stacked clients' buffer); the two round
    differently (about 0.3 % of the entries by one ulp per step). The sequential path
    (:class:`LocalTrainer`) and the stacked path (:class:`fltrust.engines.vectorized.VectorTrainer`)
    both follow this choice, so that they share Adam's rounding. Elsewhere (CUDA) the default
    kernel, as CUDA-graph capture of the stacked steps needs it. Opacus's DP-SGD keeps the default.

    Parameters
    ----------
    device : torch.device or str
        The device the model trains on.

    Returns
    -------
    bool
        True on CPU.

    Examples
    --------
    >>> fused_adam("cpu"), fused_adam("cuda")
    (True, False)
    """
    return torch.device(device).type == "cpu"


def num_batches(num_samples: int, batch_size: int) -> int:
    """Mini-batches per epoch, ``ceil(n / B)``.

    Parameters
    ----------
    num_samples : int
        n, the client's training rows.
    batch_size : int
        B, the mini-batch size.

    Returns
    -------
    int

    Examples
    --------
    >>> num_batches(100, 32)
    4
    """
    return math.ceil(num_samples / batch_size)


def _trainable_subset(model: nn.Module, params: Params) -> Params:
    """The entries of a ``state_dict``-ordered list that are trainable parameters, in order."""
    return [p for p, trainable in zip(params, trainable_mask(model)) if trainable]
