"""Model evaluation: one model, or many parameter sets of one architecture at once.

Loss conventions (``loss_scaling``):

- ``"mean"``: mean per-sample loss.
- ``"per_batch_sum"``: the fairness authors' ``test`` function -- sum over mini-batches of the
  batch-mean loss, divided by the number of samples (fairness spec 6.4); about mean / batch size.

:func:`evaluate_many` evaluates a list of parameter sets (for example the 31 coalition models of a
federated Shapley round) with ``torch.func.functional_call`` vectorised by ``torch.vmap``, in
chunks, so that coalition models are not evaluated one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

LOSS_SCALINGS = ("mean", "per_batch_sum")


def is_binary_logit(model_output: torch.Tensor) -> bool:
    """True when the model emits one logit per sample (binary BCE models)."""
    return model_output.ndim == 1 or model_output.shape[-1] == 1


def loss_per_sample(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample training loss: BCE-with-logits for one logit, cross-entropy otherwise."""
    if is_binary_logit(logits):
        return nn.functional.binary_cross_entropy_with_logits(
            logits.reshape(-1), y.to(logits.dtype), reduction="none"
        )
    return nn.functional.cross_entropy(logits, y, reduction="none")


def predict(logits: torch.Tensor) -> torch.Tensor:
    """Predicted labels (int64) from model outputs."""
    if is_binary_logit(logits):
        return (logits.reshape(-1) > 0).long()
    return logits.argmax(dim=-1)


@dataclass
class EvalResult:
    """Loss, accuracy and confusion matrix (rows true, columns predicted) of one model."""

    loss: float
    accuracy: float
    confusion: np.ndarray
    num_samples: int


def _scale_loss(batch_losses: list[torch.Tensor], batch_sizes: list[int], scaling: str) -> torch.Tensor:
    """Combine per-batch summed losses into the run's loss convention."""
    n = sum(batch_sizes)
    if scaling == "mean":
        return torch.stack([b for b in batch_losses]).sum(0) / n
    if scaling == "per_batch_sum":
        return torch.stack([b / s for b, s in zip(batch_losses, batch_sizes)]).sum(0) / n
    raise ValueError(f"loss_scaling={scaling!r}; choose one of {LOSS_SCALINGS}")


@torch.no_grad()
def evaluate(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    num_classes: int,
    batch_size: int = 32,
    loss_scaling: str = "mean",
) -> EvalResult:
    """Evaluate one model on ``(x, y)`` in eval mode.

    Returns NaN loss and accuracy for an empty set.
    """
    n = len(y)
    confusion = torch.zeros(num_classes, num_classes, dtype=torch.long, device=y.device)
    if n == 0:
        return EvalResult(float("nan"), float("nan"), confusion.cpu().numpy(), 0)
    was_training = model.training
    model.eval()
    sums, sizes = [], []
    for start in range(0, n, batch_size):
        xb, yb = x[start : start + batch_size], y[start : start + batch_size]
        logits = model(xb)
        sums.append(loss_per_sample(logits, yb).sum().double())
        sizes.append(len(yb))
        pred = predict(logits)
        confusion.index_put_((yb, pred), torch.ones_like(yb), accumulate=True)
    model.train(was_training)
    loss = float(_scale_loss(sums, sizes, loss_scaling))
    conf = confusion.cpu().numpy()
    return EvalResult(loss, float(np.trace(conf) / n), conf, n)


@torch.no_grad()
def evaluate_many(
    model: nn.Module,
    param_sets: list[list[np.ndarray]],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    batch_size: int = 32,
    loss_scaling: str = "mean",
    models_per_chunk: int = 32,
) -> tuple[np.ndarray, np.ndarray]:
    """Loss and accuracy of many parameter sets of ``model``'s architecture on ``(x, y)``.

    Parameters
    ----------
    model : nn.Module
        Template whose ``state_dict`` order matches each entry of ``param_sets``.
    param_sets : list of list of np.ndarray
        Parameter sets in ``state_dict`` order (parameters and buffers).
    x, y : torch.Tensor
        Evaluation data on the device where the evaluation should run.

    Returns
    -------
    losses, accuracies : np.ndarray
        One value per parameter set.
    """
    if not param_sets:
        return np.zeros(0), np.zeros(0)
    device = x.device
    names = list(model.state_dict().keys())
    template = model.to(device).eval()
    losses, accs = [], []
    for chunk_start in range(0, len(param_sets), models_per_chunk):
        chunk = param_sets[chunk_start : chunk_start + models_per_chunk]
        stacked = {
            name: torch.as_tensor(np.stack([p[i] for p in chunk]), device=device)
            for i, name in enumerate(names)
        }
        for i, name in enumerate(names):
            ref = template.state_dict()[name]
            stacked[name] = stacked[name].to(ref.dtype)

        def run(state: dict[str, torch.Tensor], xb: torch.Tensor) -> torch.Tensor:
            return functional_call(template, state, (xb,))

        sums, sizes, correct = [], [], torch.zeros(len(chunk), device=device, dtype=torch.long)
        for start in range(0, len(y), batch_size):
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
            logits = torch.vmap(run, in_dims=(0, None))(stacked, xb)  # (M, B, out)
            per = torch.stack([loss_per_sample(logits[m], yb) for m in range(len(chunk))])
            sums.append(per.sum(1).double())
            sizes.append(len(yb))
            correct += torch.stack([(predict(logits[m]) == yb).sum() for m in range(len(chunk))])
        losses.append(_scale_loss(sums, sizes, loss_scaling).cpu().numpy())
        accs.append((correct.double() / len(y)).cpu().numpy())
    return np.concatenate(losses), np.concatenate(accs)


def get_params(model: nn.Module) -> list[np.ndarray]:
    """Model parameters and buffers as numpy arrays in ``state_dict`` order (copies)."""
    return [v.detach().cpu().numpy().copy() for v in model.state_dict().values()]


def set_params(model: nn.Module, params: list[np.ndarray]) -> None:
    """Load numpy arrays (``state_dict`` order) into ``model`` in place."""
    state = model.state_dict()
    if len(params) != len(state):
        raise ValueError(f"got {len(params)} arrays for a model with {len(state)} state entries")
    new_state = {
        name: torch.as_tensor(np.asarray(p)).to(dtype=ref.dtype).reshape(ref.shape)
        for (name, ref), p in zip(state.items(), params)
    }
    model.load_state_dict(new_state)
