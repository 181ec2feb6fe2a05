"""Model evaluation: one model, or many parameter sets of one architecture at once.

Loss conventions (``loss_scaling``):

- ``"mean"``: mean per-sample loss.
- ``"per_batch_sum"``: the fairness authors' ``test`` function -- sum over mini-batches of the
  batch-mean loss, divided by the number of samples (fairness spec 6.4, docs/references.md#fairness-6-4); about mean /
  batch size. It depends on the batch size, so every batched evaluation below still groups the per-sample
  losses in mini-batches of ``batch_size``; only the forward block size is free.

:func:`evaluate_many` evaluates a list of parameter sets (for example the 31 coalition models of a
federated Shapley round) as one stacked model (:mod:`fltrust.core.stacked`), so that coalition
models are not evaluated one at a time; loss and predictions are computed on the stacked outputs.
:func:`evaluate_datasets` (one model, several datasets: the clients' rewards, the aux set) and
:func:`evaluate_stacked` (model k on dataset k: the clients' performances) batch the engine's
per-client evaluations the same way, with one device-to-host transfer per call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from fltrust.core.stacked import stacked_loss_pred, stacked_net, train_mode

LOSS_SCALINGS = ("mean", "per_batch_sum")
"""``training.loss_scaling``: :data:`fltrust.names.LOSS_SCALINGS` spelled again, since the core imports nothing
else of fltrust (``tests/test_names.py`` pins the two equal)."""


def is_binary_logit(model_output: torch.Tensor) -> bool:
    """True when the model emits one logit per sample (binary BCE models)."""
    return model_output.ndim == 1 or model_output.shape[-1] == 1


def loss_per_sample(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample training loss: BCE-with-logits for one logit, cross-entropy otherwise.

    Parameters
    ----------
    logits : torch.Tensor
        Model outputs, ``(n,)`` or ``(n, 1)`` for a binary model, ``(n, C)`` otherwise.
    y : torch.Tensor
        Integer labels ``(n,)`` (0/1 for a binary model).

    Returns
    -------
    torch.Tensor
        ``(n,)`` losses, in the dtype of ``logits``.
    """
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
        return torch.stack(batch_losses).sum(0) / n
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

    Parameters
    ----------
    model : torch.nn.Module
        The model, with its parameters loaded; put back in its previous train/eval mode after.
    x, y : torch.Tensor
        Inputs and integer labels, on the model's device.
    num_classes : int
        C, the size of the confusion matrix.
    batch_size : int
        Forward mini-batch, and the mini-batch of the ``per_batch_sum`` convention (default 32).
    loss_scaling : {"mean", "per_batch_sum"}
        The loss convention (module docstring; default ``"mean"``).

    Returns
    -------
    EvalResult
        Loss, accuracy, the ``(C, C)`` confusion matrix (rows true, columns predicted) and the
        number of samples.

    Raises
    ------
    ValueError
        For another ``loss_scaling``.
    """
    n = len(y)
    confusion = torch.zeros(num_classes, num_classes, dtype=torch.long, device=y.device)
    if n == 0:
        return EvalResult(float("nan"), float("nan"), confusion.cpu().numpy(), 0)
    sums, sizes = [], []
    with train_mode(model):
        for start in range(0, n, batch_size):
            xb, yb = x[start : start + batch_size], y[start : start + batch_size]
            logits = model(xb)
            sums.append(loss_per_sample(logits, yb).sum().double())
            sizes.append(len(yb))
            pred = predict(logits)
            confusion.index_put_((yb, pred), torch.ones_like(yb), accumulate=True)
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
    chunk_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Loss and accuracy of many parameter sets of ``model``'s architecture on ``(x, y)``.

    All parameter sets of a chunk are evaluated by one stacked forward pass per block of samples
    (:func:`fltrust.core.stacked.stacked_net`: batched matmuls / grouped convolutions, or
    ``torch.vmap`` over ``functional_call``); loss and predictions are computed on the stacked
    outputs, with no Python loop over the models. With ``loss_scaling="per_batch_sum"`` the
    per-sample losses are still summed per mini-batch of ``batch_size`` (the authors' convention),
    whatever the forward block size.

    Parameters
    ----------
    model : nn.Module
        Template whose ``state_dict`` order matches each entry of ``param_sets``.
    param_sets : list of list of np.ndarray
        Parameter sets in ``state_dict`` order (parameters and buffers).
    x, y : torch.Tensor
        Evaluation data on the device where the evaluation should run.
    batch_size : int
        Mini-batch of the loss convention (``per_batch_sum``; default 32).
    loss_scaling : {"mean", "per_batch_sum"}
        The loss convention (module docstring; default ``"mean"``).
    models_per_chunk : int
        Parameter sets stacked into one forward pass (default 32).
    chunk_size : int or None
        Samples per forward pass (speed/memory only); ``None`` = :func:`auto_chunk_size`.

    Returns
    -------
    losses, accuracies : np.ndarray
        One value per parameter set.
    """
    if not param_sets:
        return np.zeros(0), np.zeros(0)
    device = x.device
    template = model.to(device).eval()
    net = stacked_net(template)
    refs = list(template.state_dict().values())
    n = len(y)
    if n == 0:
        return np.full(len(param_sets), np.nan), np.full(len(param_sets), np.nan)
    losses, accs = [], []
    for chunk_start in range(0, len(param_sets), models_per_chunk):
        chunk = param_sets[chunk_start : chunk_start + models_per_chunk]
        stacked = stack_params(chunk, refs, device)
        step = chunk_size or auto_chunk_size(template, x, len(chunk))
        per_parts, correct = [], torch.zeros(len(chunk), device=device, dtype=torch.long)
        for start in range(0, n, step):
            xb, yb = x[start : start + step], y[start : start + step]
            out = net(stacked, xb, shared_input=True)  # (M, b, out)
            per, pred = stacked_loss_pred(out, yb)
            per_parts.append(per)
            correct += (pred == yb).sum(1)
        per = torch.cat(per_parts, 1)
        lengths = torch.full((len(chunk),), n, dtype=torch.long, device=device)
        losses.append(batch_reduced_loss(per, lengths, batch_size, loss_scaling).cpu().numpy())
        accs.append((correct.double() / n).cpu().numpy())
    return np.concatenate(losses), np.concatenate(accs)


# --------------------------------------------------------------------------------------------
# Batched evaluation of several datasets (one model on each, or one model per dataset)
# --------------------------------------------------------------------------------------------
def batch_reduced_loss(per: torch.Tensor, lengths: torch.Tensor, batch_size: int, scaling: str) -> torch.Tensor:
    """The loss convention of :func:`evaluate`, for K zero-padded rows of per-sample losses.

    ``per`` (K, L) holds row k's ``lengths[k]`` per-sample losses first (zeros after). Samples
    are summed per mini-batch of ``batch_size`` in the dtype of ``per`` (as :func:`evaluate` sums
    each batch), then combined in float64 by :func:`_scale_loss`'s rule. Rows of length 0: NaN.

    Parameters
    ----------
    per : torch.Tensor
        ``(K, L)`` per-sample losses, each row zero-padded after its real samples.
    lengths : torch.Tensor
        ``(K,)`` integer number of real samples of each row.
    batch_size : int
        The mini-batch of the ``per_batch_sum`` convention.
    scaling : {"mean", "per_batch_sum"}
        The loss convention.

    Returns
    -------
    torch.Tensor
        ``(K,)`` float64 losses.

    Raises
    ------
    ValueError
        For another ``scaling``.

    Examples
    --------
    >>> per, lengths = torch.tensor([[1.0, 2.0, 3.0, 0.0]]), torch.tensor([3])
    >>> batch_reduced_loss(per, lengths, 2, "mean").tolist()  # (1 + 2 + 3) / 3
    [2.0]
    >>> batch_reduced_loss(per, lengths, 2, "per_batch_sum").tolist()  # (3 / 2 + 3 / 1) / 3
    [1.5]
    """
    if scaling not in LOSS_SCALINGS:
        raise ValueError(f"loss_scaling={scaling!r}; choose one of {LOSS_SCALINGS}")
    K, L = per.shape
    nb = max(1, -(-L // batch_size))
    padded = nn.functional.pad(per, (0, nb * batch_size - L)) if nb * batch_size != L else per
    sums = padded.reshape(K, nb, batch_size).sum(2).double()  # (K, nb), each batch as in evaluate
    n = lengths.to(torch.float64)
    if scaling == "mean":
        total = sums.sum(1)
    else:
        starts = torch.arange(nb, device=per.device, dtype=torch.float64) * batch_size
        sizes = (n.unsqueeze(1) - starts).clamp(0, batch_size)
        total = torch.where(sizes > 0, sums / sizes.clamp(min=1), torch.zeros_like(sums)).sum(1)
    return torch.where(n > 0, total / n.clamp(min=1), torch.full_like(total, float("nan")))


def _results(loss: torch.Tensor, y: torch.Tensor, pred: torch.Tensor, row: torch.Tensor, lengths: list[int],
             num_classes: int) -> list[EvalResult]:
    """EvalResults of K datasets from device tensors (flat labels and predictions of the samples of rows ``row``)
    with their (K, C, C) confusion matrices: one host transfer for all."""
    K, c = len(lengths), num_classes
    confusion = torch.bincount((row * c + y.long()) * c + pred.long(), minlength=K * c * c)[: K * c * c]
    loss_np = loss.cpu().numpy()
    conf_np = confusion.reshape(K, c, c).cpu().numpy()
    out = []
    for k, n in enumerate(lengths):
        conf = conf_np[k]
        acc = float(np.trace(conf) / n) if n else float("nan")
        out.append(EvalResult(float(loss_np[k]) if n else float("nan"), acc, conf, int(n)))
    return out


def _positions(lengths: list[int], device: torch.device) -> tuple[torch.Tensor, ...]:
    """Row id and position within the row of every sample of K concatenated datasets; the rows' lengths and starts."""
    lens = torch.as_tensor(lengths, dtype=torch.long, device=device)
    row = torch.repeat_interleave(torch.arange(len(lengths), device=device), lens)
    starts = torch.cumsum(lens, 0) - lens
    pos = torch.arange(int(sum(lengths)), device=device) - starts[row]
    return row, pos, lens, starts


@torch.no_grad()
def evaluate_datasets(
    model: nn.Module,
    xs: list[torch.Tensor],
    ys: list[torch.Tensor],
    *,
    num_classes: int,
    batch_size: int = 32,
    loss_scaling: str = "mean",
    chunk_size: int | None = None,
    forward: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> list[EvalResult]:
    """:func:`evaluate` of one model on each of several datasets, in one pass over all samples.

    The datasets are concatenated and run through ``model`` (eval mode) in blocks of
    ``chunk_size`` samples (``None``: :func:`auto_chunk_size`); per-sample losses are then summed per
    dataset and per mini-batch of ``batch_size`` exactly as :func:`evaluate` would (the
    ``per_batch_sum`` convention depends on ``batch_size``, the forward block size does not change
    any result beyond float rounding).
    Everything stays on the device until one transfer of all losses and confusion matrices.

    Parameters
    ----------
    model : torch.nn.Module
        The model, with its parameters loaded.
    xs, ys : list of torch.Tensor
        The datasets' inputs and integer labels, on the model's device.
    num_classes : int
        C, the size of each confusion matrix.
    batch_size : int
        The mini-batch of the ``per_batch_sum`` convention (default 32).
    loss_scaling : {"mean", "per_batch_sum"}
        The loss convention (default ``"mean"``).
    chunk_size : int or None
        Samples per forward block (speed and memory only); default ``None``.
    forward : callable, optional
        Computes ``model``'s logits of a block another way (the same function to float rounding:
        :class:`fltrust.engines.batched_evaluation.BatchedEvaluator` passes numpy's products for MLPs);
        default: ``model`` itself, replayed as a stack of one where :mod:`fltrust.core.stacked` can.

    Returns
    -------
    list of EvalResult
        One per dataset, in order (NaN loss and accuracy for an empty one).
    """
    lengths = [len(y) for y in ys]
    K = len(ys)
    if K == 0:
        return []
    device = ys[0].device
    total = sum(lengths)
    if total == 0:
        return [EvalResult(float("nan"), float("nan"), np.zeros((num_classes, num_classes), dtype=np.int64), 0)
                for _ in ys]
    x = torch.cat(list(xs)) if K > 1 else xs[0]
    y = torch.cat(list(ys)) if K > 1 else ys[0]
    if forward is None:
        net = stacked_net(model)
        forward = model
        if net.kind == "program":  # the replay's faster pooling; one model = a stack of one
            state = [v.unsqueeze(0) for v in model.state_dict().values()]

            def forward(xb):
                return net(state, xb, shared_input=True)[0]
    chunk_size = chunk_size or auto_chunk_size(model, x, 1)
    pers, preds = [], []
    with train_mode(model):
        for start in range(0, total, chunk_size):
            logits = forward(x[start : start + chunk_size])
            pers.append(loss_per_sample(logits, y[start : start + chunk_size]))
            preds.append(predict(logits))
    per = torch.cat(pers) if len(pers) > 1 else pers[0]
    pred = torch.cat(preds) if len(preds) > 1 else preds[0]
    row, pos, lens, _ = _positions(lengths, device)
    width = max(lengths)
    padded = torch.zeros(K * width, dtype=per.dtype, device=device)
    padded[row * width + pos] = per
    loss = batch_reduced_loss(padded.view(K, width), lens, batch_size, loss_scaling)
    return _results(loss, y, pred, row, lengths, num_classes)


@torch.no_grad()
def evaluate_stacked(
    model: nn.Module,
    params: list[list[np.ndarray]] | list[torch.Tensor],
    xs: list[torch.Tensor],
    ys: list[torch.Tensor],
    *,
    num_classes: int,
    batch_size: int = 32,
    loss_scaling: str = "mean",
    chunk_size: int = 1024,
) -> list[EvalResult]:
    """:func:`evaluate` of K models, model k on dataset k, as one stacked model.

    ``params``: K parameter sets (numpy, ``state_dict`` order) or already stacked tensors
    ``(K, *shape)`` per ``state_dict`` entry. The datasets are padded to a common length (padded
    samples are masked out of every result) and run through the stacked forward of
    :func:`fltrust.core.stacked.stacked_net` in blocks of ``chunk_size`` samples per model.

    Parameters
    ----------
    model : torch.nn.Module
        The architecture (template; its own values are not used).
    params : list of list of numpy.ndarray, or list of torch.Tensor
        K parameter sets, or the stacked tensors (see above).
    xs, ys : list of torch.Tensor
        K datasets' inputs and integer labels, on one device (the evaluation runs there).
    num_classes : int
        C, the size of each confusion matrix.
    batch_size : int
        The mini-batch of the ``per_batch_sum`` convention (default 32).
    loss_scaling : {"mean", "per_batch_sum"}
        The loss convention (default ``"mean"``).
    chunk_size : int
        Samples per model in one forward block (default 1024; speed and memory only).

    Returns
    -------
    list of EvalResult
        Model k's result on dataset k, for each k.
    """
    lengths = [len(y) for y in ys]
    K = len(ys)
    if K == 0:
        return []
    device = ys[0].device
    template = model.to(device)
    refs = list(template.state_dict().values())
    if isinstance(params[0], torch.Tensor):
        stacked = [p.to(device=device, dtype=r.dtype) for p, r in zip(params, refs)]
    else:
        stacked = stack_params(params, refs, device)
    width = max(lengths)
    if width == 0:
        return [EvalResult(float("nan"), float("nan"), np.zeros((num_classes, num_classes), dtype=np.int64), 0)
                for _ in ys]
    x = torch.cat(list(xs))
    y = torch.cat(list(ys))
    row, pos, lens, starts = _positions(lengths, device)
    grid = torch.arange(width, device=device).unsqueeze(0)
    valid = grid < lens.unsqueeze(1)
    fill = starts.clamp(max=len(y) - 1).unsqueeze(1)  # padded slots repeat a real sample (masked)
    index = torch.where(valid, starts.unsqueeze(1) + grid, fill)  # (K, width)
    net = stacked_net(template)
    pers, preds = [], []
    with train_mode(template):
        for start in range(0, width, chunk_size):
            idx = index[:, start : start + chunk_size]
            out = net(stacked, x[idx], train=False)
            per, pred = stacked_loss_pred(out, y[idx])
            pers.append(per)
            preds.append(pred)
    per = torch.cat(pers, 1) if len(pers) > 1 else pers[0]
    pred = torch.cat(preds, 1) if len(preds) > 1 else preds[0]
    per = per.masked_fill(~valid, 0.0)
    loss = batch_reduced_loss(per, lens, batch_size, loss_scaling)
    return _results(loss, y, pred[row, pos], row, lengths, num_classes)


def stack_params(param_sets: list[list[np.ndarray]], refs: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """Stack K parameter sets (numpy, ``state_dict`` order) into ``(K, *shape)`` device tensors.

    Parameters
    ----------
    param_sets : list of list of numpy.ndarray
        K parameter sets.
    refs : list of torch.Tensor
        The template's ``state_dict`` values; each stacked entry takes the dtype of its reference.
    device : torch.device
        Where the stacked tensors go.

    Returns
    -------
    list of torch.Tensor
        One ``(K, *shape)`` tensor per ``state_dict`` entry.
    """
    return [
        torch.as_tensor(np.stack([np.asarray(p[i]) for p in param_sets])).to(device=device, dtype=ref.dtype)
        for i, ref in enumerate(refs)
    ]


_CHUNK_CACHE: dict[tuple, int] = {}


def auto_chunk_size(model: nn.Module, x: torch.Tensor, num_models: int, budget_bytes: int | None = None) -> int:
    """Samples per stacked forward pass so that ``num_models`` models' largest two activations of
    one block fit in about ``budget_bytes`` (measured once per architecture and input shape).

    Default budget: 32 MB on CPU (cache-sized blocks were fastest: 31 LeNets on 1,000 CIFAR
    images took 0.9 s in blocks of 32 images, 3.7 s in blocks of 278), 1 GB on CUDA.

    Parameters
    ----------
    model : torch.nn.Module
        The architecture; one sample is run through it (eval mode) to measure its activations.
    x : torch.Tensor
        The data to be evaluated (shape, dtype, device and length matter).
    num_models : int
        Models stacked in one forward pass.
    budget_bytes : int or None
        The memory budget in bytes; ``None`` (default): as above.

    Returns
    -------
    int
        Samples per block, at least 16 and at most ``len(x)``.
    """
    if budget_bytes is None:
        budget_bytes = 2**30 if x.device.type == "cuda" else 32 * 2**20
    # the architecture, not id(model): a freed model's id can be reused by a different one
    architecture = (type(model).__qualname__, tuple(tuple(t.shape) for t in model.state_dict().values()))
    key = (architecture, tuple(x.shape[1:]), str(x.device))
    per_sample = _CHUNK_CACHE.get(key)
    if per_sample is None:
        sizes: list[int] = [int(x[:1].numel())]
        hooks = [m.register_forward_hook(lambda _m, _i, o: sizes.append(int(o.numel()) if torch.is_tensor(o) else 0))
                 for m in model.modules() if not list(m.children())]
        try:
            with torch.no_grad(), train_mode(model):
                model(x[:1])
        finally:
            for h in hooks:
                h.remove()
        top = sorted(sizes)[-2:]
        per_sample = max(1, sum(top) * x.element_size())
        _CHUNK_CACHE[key] = per_sample
    return int(max(16, min(len(x), budget_bytes // (per_sample * max(1, num_models)))))


def get_params(model: nn.Module) -> list[np.ndarray]:
    """Model parameters and buffers as numpy arrays in ``state_dict`` order (copies)."""
    return [v.detach().cpu().numpy().copy() for v in model.state_dict().values()]


def set_params(model: nn.Module, params: list[np.ndarray]) -> None:
    """Load numpy arrays (``state_dict`` order) into ``model`` in place.

    Parameters
    ----------
    model : torch.nn.Module
        The model to load into.
    params : list of numpy.ndarray
        One array per ``state_dict`` entry, cast to the entry's dtype and reshaped to its shape.

    Raises
    ------
    ValueError
        If the number of arrays differs from the number of ``state_dict`` entries.
    """
    state = model.state_dict()
    if len(params) != len(state):
        raise ValueError(f"got {len(params)} arrays for a model with {len(state)} state entries")
    new_state = {
        name: torch.as_tensor(np.asarray(p)).to(dtype=ref.dtype).reshape(ref.shape)
        for (name, ref), p in zip(state.items(), params)
    }
    model.load_state_dict(new_state)
