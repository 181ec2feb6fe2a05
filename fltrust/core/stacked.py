"""Many models of one architecture in one forward pass: parameters stacked on a leading dimension.

A *stacked* parameter set holds, for every ``state_dict`` entry of an architecture, one tensor of
shape ``(K, *shape)``: K models side by side (the clients of a round, the coalition models of a
federated Shapley round). :func:`stacked_net` returns a callable ``net(params, x)`` for them:

- ``x`` of shape ``(K, b, *input)`` (model k sees its own batch ``x[k]``) or, with
  ``shared_input=True``, ``(b, *input)`` (every model sees the same batch);
- output ``(K, b, out)``.

Two implementations; :func:`stacked_net` picks the first that applies:

``"program"`` (:class:`ProgramNet`)
    The model is traced once with :mod:`torch.fx` and replayed on stacked tensors: ``Linear`` ->
    ``torch.baddbmm`` (one batched matmul for all models), ``Conv2d`` -> one *grouped*
    convolution (the K models' channels side by side, ``groups = K``; with a shared input the
    first convolution is one ordinary convolution with the K filter banks concatenated),
    pooling/activations on the grouped layout, ``Dropout`` with masks supplied by the caller
    (:mod:`fltrust.engines.vectorized` draws them from per-client generators so that they equal the
    sequential path's masks), ``BatchNorm2d`` in eval mode only. Covers the papers' MLPs (NSL-KDD,
    N-BaIoT), the CIFAR LeNet and the FEMNIST CNN (and ConvNet2 for evaluation).
``"vmap"`` (:class:`VmapNet`)
    ``torch.func.functional_call`` vectorised with ``torch.vmap``: any architecture, no dropout
    masks (evaluation, or training of models without dropout/buffers).

This module imports nothing else of fltrust (engine-neutral core).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

__all__ = ["ProgramNet", "VmapNet", "UnsupportedModel", "stacked_net", "has_dropout", "has_buffers", "train_mode"]

NoiseFn = Callable[[int, tuple[int, ...]], torch.Tensor]
"""``noise(i, shape)``: the scaled dropout mask (``bernoulli(1-p) / (1-p)``) of the i-th dropout
call of a forward pass, shape ``(K, b, *features)``."""


class UnsupportedModel(ValueError):
    """The architecture cannot be replayed by :class:`ProgramNet`."""


def has_dropout(model: nn.Module) -> bool:
    """Whether ``model`` has a dropout module with ``p > 0``."""
    return any(isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules())


def has_buffers(model: nn.Module) -> bool:
    """Whether ``model`` has buffers (e.g. BatchNorm's running statistics)."""
    return any(True for _ in model.buffers())


@contextmanager
def train_mode(model: nn.Module, train: bool = False) -> Iterator[nn.Module]:
    """Put ``model`` in train or eval mode for a ``with`` block, then back in its previous mode (also on an error).

    Parameters
    ----------
    model : torch.nn.Module
        The model whose mode is set.
    train : bool, default False
        Train mode (``True``) or eval mode (``False``) inside the block.

    Yields
    ------
    torch.nn.Module
        ``model``.
    """
    was = model.training
    model.train(train)
    try:
        yield model
    finally:
        model.train(was)


_RELUS = {torch.relu, F.relu}


class _Value:
    """An activation of K models in one of four layouts:

    ``"kb"`` one tensor (K, b, ...); ``"grouped"`` one tensor (b, K*C, H, W) (the K models'
    channels side by side); ``"list"`` K tensors (b, ...); ``"shared"`` one tensor (b, ...) that
    is still identical for every model (no stacked layer seen yet).
    """

    __slots__ = ("t", "layout")

    def __init__(self, t, layout: str) -> None:
        self.t, self.layout = t, layout


class _MaxPool2x2(torch.autograd.Function):
    """``F.max_pool2d(x, 2, 2)`` with the same result and the same gradient routing (the first
    maximum of each window in row-major order receives the gradient), from four strided views:
    on CPU several times faster than ``max_pool2d_with_indices`` for the papers' small maps."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # also the no-grad fast path (no graph is recorded then)
        a, b, c, d = x[..., 0::2, 0::2], x[..., 0::2, 1::2], x[..., 1::2, 0::2], x[..., 1::2, 1::2]
        m = torch.maximum(torch.maximum(a, b), torch.maximum(c, d))
        ctx.save_for_backward(x, m)
        return m

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:
        x, m = ctx.saved_tensors
        a, b, c = x[..., 0::2, 0::2], x[..., 0::2, 1::2], x[..., 1::2, 0::2]
        ea = a == m
        eb = (b == m) & ~ea
        taken = ea | eb
        ec = (c == m) & ~taken
        ed = ~(taken | ec)
        out = torch.empty_like(x)
        out[..., 0::2, 0::2] = g * ea
        out[..., 0::2, 1::2] = g * eb
        out[..., 1::2, 0::2] = g * ec
        out[..., 1::2, 1::2] = g * ed
        return out


def _max_pool(t: torch.Tensor, spec: tuple) -> torch.Tensor:
    _, ks, st, pad, dil, ceil = spec
    simple = ks in (2, (2, 2)) and st in (2, (2, 2)) and pad in (0, (0, 0)) and dil in (1, (1, 1))
    if simple and t.shape[-1] % 2 == 0 and t.shape[-2] % 2 == 0 and t.is_floating_point():
        return _MaxPool2x2.apply(t)
    if t.dim() == 5:
        out = F.max_pool2d(t.reshape(-1, *t.shape[2:]), ks, st, pad, dil, ceil)
        return out.reshape(*t.shape[:2], *out.shape[1:])
    return F.max_pool2d(t, ks, st, pad, dil, ceil)


def _act(t: torch.Tensor, spec: tuple) -> torch.Tensor:
    return torch.relu(t) if spec[0] == "relu" else F.leaky_relu(t, spec[1])


class ProgramNet:
    """K models of one architecture as one stacked program (see the module docstring).

    Parameters
    ----------
    model : nn.Module
        The architecture (any instance; its values are not used).
    conv_mode : {"auto", "loop", "grouped"}
        Convolutions of K models with different weights: ``"loop"`` = one ordinary convolution
        per model, ``"grouped"`` = one grouped convolution (``groups = K``). ``"auto"``: grouped
        on CUDA; on CPU (measured, oneDNN) a loop for layers with fewer than 4 input channels
        per group (CIFAR/FEMNIST first layers) and a grouped convolution in channels-last memory
        otherwise: for training (forward + backward) 1.6x faster than the loop for LeNet's
        second layer, 1.2x for FEMNIST's; for evaluation (31 FedSV coalition models, 2 threads)
        1.45x faster than the plain grouped convolution for LeNet on 2,000 CIFAR images and
        1.7x for the FEMNIST CNN on 500 images.
        With a shared input the first convolution is always one convolution of the concatenated
        filters. The choice depends only on shapes and device, so results are deterministic.

    Raises
    ------
    UnsupportedModel
        When tracing fails or the graph uses an operation this replay does not know.
    """

    kind = "program"

    def __init__(self, model: nn.Module, conv_mode: str = "auto") -> None:
        if conv_mode not in ("auto", "grouped", "loop"):
            raise ValueError(f"conv_mode={conv_mode!r}; choose 'auto', 'grouped' or 'loop'")
        self.conv_mode = conv_mode
        try:
            import torch.fx as fx

            graph = fx.symbolic_trace(model).graph
        except Exception as exc:  # any trace failure: not replayable
            raise UnsupportedModel(f"torch.fx cannot trace {type(model).__name__}: {exc}") from exc
        self.names = list(model.state_dict().keys())
        index = {name: i for i, name in enumerate(self.names)}
        modules = dict(model.named_modules())
        ops: list[tuple] = []
        self.trainable = True  # False with BatchNorm (eval-only replay)
        self.dropout_ps: list[float] = []
        env_ids: dict[str, int] = {}
        for node in graph.nodes:
            if node.op == "placeholder":
                if env_ids:
                    raise UnsupportedModel("models with more than one input are not supported")
                env_ids[node.name] = 0
                continue
            if node.op == "output":
                ops.append(("output", _arg_id(node.args[0], env_ids), None))
                continue
            src = _arg_id(node.args[0], env_ids) if node.args else None
            if node.op == "call_module":
                op = self._module_op(node.target, modules[node.target], index)
            elif node.op == "call_function":
                op = self._function_op(node)
            elif node.op == "call_method":
                op = self._method_op(node)
            else:
                raise UnsupportedModel(f"unsupported graph node {node.op} {node.target}")
            env_ids[node.name] = len(env_ids)
            ops.append((op, src, env_ids[node.name]))
        self.ops = _fuse_act_pool(ops)

    # -- compile ------------------------------------------------------------------------------
    def _module_op(self, name: str, mod: nn.Module, index: dict[str, int]) -> tuple:
        def pidx(attr: str) -> int | None:
            full = f"{name}.{attr}" if name else attr
            return index.get(full) if getattr(mod, attr, None) is not None else None

        if type(mod) is nn.Linear:
            return ("linear", pidx("weight"), pidx("bias"))
        if type(mod) is nn.Conv2d:
            if mod.padding_mode != "zeros":
                raise UnsupportedModel(f"Conv2d padding_mode={mod.padding_mode!r}")
            return ("conv", pidx("weight"), pidx("bias"), mod.stride, mod.padding, mod.dilation, mod.groups)
        if type(mod) is nn.ReLU:
            return ("relu",)
        if type(mod) is nn.LeakyReLU:
            return ("leaky", float(mod.negative_slope))
        if type(mod) is nn.MaxPool2d:
            if mod.return_indices:
                raise UnsupportedModel("MaxPool2d(return_indices=True)")
            return ("maxpool", mod.kernel_size, mod.stride, mod.padding, mod.dilation, mod.ceil_mode)
        if type(mod) is nn.Flatten:
            if mod.end_dim != -1 or mod.start_dim < 1:
                raise UnsupportedModel("Flatten must keep the batch dimension and flatten to the end")
            return ("flatten", int(mod.start_dim))
        if type(mod) is nn.Dropout:
            self.dropout_ps.append(float(mod.p))
            return ("dropout", float(mod.p), len(self.dropout_ps) - 1)
        if type(mod) is nn.Identity:
            return ("identity",)
        if type(mod) is nn.BatchNorm2d:
            if not mod.track_running_stats:
                raise UnsupportedModel("BatchNorm2d without running statistics")
            self.trainable = False
            return ("bn", pidx("weight"), pidx("bias"), index[f"{name}.running_mean"],
                    index[f"{name}.running_var"], float(mod.eps))
        raise UnsupportedModel(f"module {type(mod).__name__} ({name}) is not supported")

    @staticmethod
    def _function_op(node) -> tuple:
        if node.target in _RELUS and not node.kwargs.get("inplace", False):
            return ("relu",)
        if node.target is torch.flatten:
            return _flatten_op(node, "torch.flatten")
        if node.target is F.leaky_relu:
            slope = node.args[1] if len(node.args) > 1 else node.kwargs.get("negative_slope", 0.01)
            return ("leaky", float(slope))
        if node.target is operator.getitem:
            raise UnsupportedModel("indexing inside forward is not supported")
        raise UnsupportedModel(f"function {getattr(node.target, '__name__', node.target)} is not supported")

    @staticmethod
    def _method_op(node) -> tuple:
        if node.target == "relu":
            return ("relu",)
        if node.target == "flatten":
            return _flatten_op(node, "Tensor.flatten")
        if node.target in ("reshape", "view"):
            shape = node.args[1:]
            if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
                shape = tuple(shape[0])
            if not shape or shape[0] != -1 or not all(isinstance(s, int) and s > 0 for s in shape[1:]):
                raise UnsupportedModel("reshape must be (-1, fixed sizes...)")
            return ("reshape", tuple(shape[1:]))
        raise UnsupportedModel(f"method {node.target} is not supported")

    # -- run ----------------------------------------------------------------------------------
    def __call__(
        self,
        params: Sequence[torch.Tensor],
        x: torch.Tensor,
        *,
        shared_input: bool = False,
        train: bool = False,
        noise: NoiseFn | None = None,
    ) -> torch.Tensor:
        """Outputs ``(K, b, out)`` of the K stacked models (``params`` in ``state_dict`` order)."""
        K = int(params[0].shape[0])
        mode = self.conv_mode
        if mode == "auto":
            mode = "grouped" if x.device.type == "cuda" else "cpu"
        env: dict[int, _Value] = {0: _Value(x, "shared" if shared_input else "kb")}
        for spec, src, dst in self.ops:
            if spec == "output":
                return _to_kb(env[src], K).t
            env[dst] = self._apply(spec, env[src], params, K, train, noise, mode)
        raise UnsupportedModel("graph without output")

    def _apply(self, spec: tuple, v: _Value, params, K: int, train: bool, noise: NoiseFn | None,
               mode: str) -> _Value:
        kind = spec[0]
        if kind in ("relu", "leaky"):
            return _map(v, lambda t: _act(t, spec))
        if kind == "identity":
            return v
        if kind == "maxpool":
            return _map(v, lambda t: _max_pool(t, spec))
        if kind == "pool_act":  # max-pool then activation == activation then max-pool (monotone)
            return _map(v, lambda t: _act(_max_pool(t, spec[1]), spec[2]))
        if kind == "linear":
            w, b = params[spec[1]], (params[spec[2]] if spec[2] is not None else None)
            if v.layout == "shared" and v.t.dim() == 2:
                x = v.t
                out = x @ w.reshape(K * w.shape[1], w.shape[2]).t()  # (b, K*out)
                out = out.view(x.shape[0], K, w.shape[1]).transpose(0, 1)
                return _Value(out + b.unsqueeze(1) if b is not None else out, "kb")
            x = _to_kb(v, K).t
            if x.dim() != 3:
                raise UnsupportedModel("Linear on inputs with more than one feature dimension")
            if b is None:
                return _Value(torch.bmm(x, w.transpose(1, 2)), "kb")
            return _Value(torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2)), "kb")
        if kind == "conv":
            _, wi, bi, stride, padding, dilation, groups = spec
            w = params[wi]
            b = params[bi] if bi is not None else None
            wk = w.reshape(K * w.shape[1], *w.shape[2:])  # the K models' filters as one grouped convolution's
            bk = b.reshape(K * b.shape[1]) if b is not None else None
            if v.layout == "shared":
                return _Value(F.conv2d(v.t, wk, bk, stride, padding, dilation, groups), "grouped")
            per_group_in = w.shape[2]
            if mode == "loop" or (mode == "cpu" and per_group_in < 4):
                xs = _to_list(v, K).t
                return _Value([F.conv2d(xs[k], w[k], b[k] if b is not None else None, stride, padding, dilation, groups)
                               for k in range(K)], "list")
            if mode == "cpu":  # grouped, channels-last: oneDNN's fast grouped path on CPU
                x = _to_grouped_channels_last(v, K)
                wk = wk.contiguous(memory_format=torch.channels_last)
            else:
                x = _to_grouped(v, K).t
            return _Value(F.conv2d(x, wk, bk, stride, padding, dilation, groups * K), "grouped")
        if kind == "bn":
            if train:
                raise UnsupportedModel("BatchNorm is replayed in eval mode only")
            _, wi, bi, mi, vi, eps = spec
            if mode == "loop" or v.layout == "list":
                xs = _to_list(v, K).t

                def pick(i, k):
                    return params[i][k] if i is not None else None

                return _Value([F.batch_norm(xs[k], pick(mi, k), pick(vi, k), pick(wi, k), pick(bi, k), False, 0.0, eps)
                               for k in range(K)], "list")
            v = _to_grouped(v, K)

            def flat(i):
                return params[i].reshape(-1) if i is not None else None

            return _Value(F.batch_norm(v.t, flat(mi), flat(vi), flat(wi), flat(bi), False, 0.0, eps), "grouped")
        if kind == "flatten":
            start = spec[1]
            if v.layout == "shared":
                return _Value(v.t.flatten(start), "shared")
            if v.layout == "list":
                return _Value(torch.stack([t.flatten(start) for t in v.t]), "kb")
            return _Value(_to_kb(v, K).t.flatten(start + 1), "kb")
        if kind == "reshape":
            shape = spec[1]
            if v.layout == "shared":
                return _Value(v.t.reshape(-1, *shape), "shared")
            return _Value(_to_kb(v, K).t.reshape(K, -1, *shape), "kb")
        if kind == "dropout":
            if not train or spec[1] == 0:
                return v
            if noise is None:
                raise UnsupportedModel("training with dropout needs masks (noise=...)")
            t = _to_kb(v, K).t
            return _Value(t * noise(spec[2], tuple(t.shape)), "kb")
        raise UnsupportedModel(f"op {kind}")


def _flatten_op(node, what: str) -> tuple:
    """The ``flatten`` op of a traced ``torch.flatten`` / ``Tensor.flatten`` call (``what`` names it in errors)."""
    start = node.args[1] if len(node.args) > 1 else node.kwargs.get("start_dim", 0)
    end = node.args[2] if len(node.args) > 2 else node.kwargs.get("end_dim", -1)
    if end != -1 or not isinstance(start, int) or start < 1:
        raise UnsupportedModel(f"{what} must keep the batch dimension")
    return ("flatten", start)


def _fuse_act_pool(ops: list[tuple]) -> list[tuple]:
    """Replace ``activation -> max-pool`` by ``max-pool -> activation`` (fewer elements to
    activate). Exact for ReLU and LeakyReLU (monotone): same values, and the gradient reaches the
    same input element (ties below zero receive a zero gradient either way)."""
    uses = Counter(src for _, src, _ in ops if src is not None)
    out: list[tuple] = []
    i = 0
    while i < len(ops):
        spec, src, dst = ops[i]
        if (i + 1 < len(ops) and spec != "output" and spec[0] in ("relu", "leaky")
                and ops[i + 1][0] != "output" and ops[i + 1][0][0] == "maxpool"
                and ops[i + 1][1] == dst and uses[dst] == 1):
            out.append((("pool_act", ops[i + 1][0], spec), src, ops[i + 1][2]))
            i += 2
            continue
        out.append(ops[i])
        i += 1
    return out


def _map(v: _Value, f) -> _Value:
    if v.layout == "list":
        return _Value([f(t) for t in v.t], "list")
    return _Value(f(v.t), v.layout)


def _arg_id(arg, env_ids: dict[str, int]) -> int:
    name = getattr(arg, "name", None)
    if name not in env_ids:
        raise UnsupportedModel("only single-input chains of operations are supported")
    return env_ids[name]


def _to_kb(v: _Value, K: int) -> _Value:
    if v.layout == "kb":
        return v
    t = v.t
    if v.layout == "list":
        return _Value(torch.stack(t), "kb")
    if v.layout == "shared":
        return _Value(t.unsqueeze(0).expand(K, *t.shape), "kb")
    b, kc = t.shape[:2]
    return _Value(t.reshape(b, K, kc // K, *t.shape[2:]).transpose(0, 1), "kb")


def _to_list(v: _Value, K: int) -> _Value:
    if v.layout == "list":
        return v
    t = v.t
    if v.layout == "kb":
        return _Value(list(t.unbind(0)), "list")
    if v.layout == "shared":
        return _Value([t] * K, "list")
    c = t.shape[1] // K
    return _Value([t[:, k * c : (k + 1) * c] for k in range(K)], "list")


def _to_grouped_channels_last(v: _Value, K: int) -> torch.Tensor:
    """(b, K*C, H, W) in channels-last memory, from any layout (one copy)."""
    if v.layout == "list":
        t = torch.stack([u.permute(0, 2, 3, 1) for u in v.t], 3)  # (b, H, W, K, C)
        b, h, w_, k, c = t.shape
        return t.view(b, h, w_, k * c).permute(0, 3, 1, 2)
    return _to_grouped(v, K).t.contiguous(memory_format=torch.channels_last)


def _to_grouped(v: _Value, K: int) -> _Value:
    if v.layout == "grouped":
        return v
    t = v.t
    if v.layout == "list":
        return _Value(torch.cat(t, 1), "grouped")
    if v.layout == "shared":
        return _Value(t.repeat(1, K, *([1] * (t.dim() - 2))), "grouped")
    if t.dim() != 5:
        raise UnsupportedModel("convolution input must be (batch, channels, height, width)")
    return _Value(t.transpose(0, 1).reshape(t.shape[1], K * t.shape[2], *t.shape[3:]), "grouped")


class VmapNet:
    """K models via ``torch.vmap(functional_call)``; no dropout masks (see the module docstring)."""

    kind = "vmap"

    def __init__(self, model: nn.Module) -> None:
        self.template = model
        self.names = list(model.state_dict().keys())
        self.trainable = not has_buffers(model) and not has_dropout(model)
        self.dropout_ps: list[float] = []

    def __call__(self, params, x, *, shared_input: bool = False, train: bool = False, noise=None) -> torch.Tensor:
        if train and not self.trainable:
            raise UnsupportedModel("vmap training needs a model without buffers and dropout")

        def run(p: tuple[torch.Tensor, ...], xb: torch.Tensor) -> torch.Tensor:
            return functional_call(self.template, dict(zip(self.names, p)), (xb,))

        with train_mode(self.template, train):
            return torch.vmap(run, in_dims=(0, None if shared_input else 0))(tuple(params), x)


_CACHE: dict[tuple[int, str], tuple[nn.Module, ProgramNet | VmapNet]] = {}
"""(id of the module, prefer) -> (the module, its net): the module kept with it, so that a reused id misses."""


def stacked_net(model: nn.Module, prefer: str = "auto") -> ProgramNet | VmapNet:
    """The stacked forward for ``model``'s architecture (cached per module instance).

    ``prefer``: ``"auto"`` (program replay when it applies, else vmap), ``"program"`` (raise
    :class:`UnsupportedModel` when it does not apply; ``"program_loop"`` / ``"program_grouped"``
    force the convolution mode) or ``"vmap"``.

    Parameters
    ----------
    model : torch.nn.Module
        The architecture to replay (the returned net takes the K models' parameters as inputs).
    prefer : {"auto", "program", "program_loop", "program_grouped", "vmap"}
        Which implementation (default ``"auto"``), as above.

    Returns
    -------
    ProgramNet or VmapNet
        The same object for the same module instance and ``prefer``.

    Raises
    ------
    UnsupportedModel
        With a ``"program*"`` choice, when program replay does not apply to ``model``.
    """
    key = (id(model), prefer)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is model:
        return cached[1]
    net: ProgramNet | VmapNet
    if prefer == "vmap":
        net = VmapNet(model)
    else:
        try:
            mode = {"program_loop": "loop", "program_grouped": "grouped"}.get(prefer, "auto")
            net = ProgramNet(model, conv_mode=mode)
        except UnsupportedModel:
            if prefer in ("program", "program_loop", "program_grouped"):
                raise
            net = VmapNet(model)
    _CACHE[key] = (model, net)
    return net


def stacked_loss_pred(out: torch.Tensor, y: torch.Tensor, *, need_pred: bool = True):
    """Per-sample loss ``(K, b)`` and predictions of stacked outputs ``(K, b, out)``.

    ``y``: ``(K, b)`` or ``(b,)`` (shared labels). BCE-with-logits for one logit, cross-entropy
    otherwise, exactly as :func:`fltrust.core.evaluation.loss_per_sample` per model.
    """
    K, b, c = out.shape
    if y.dim() == 1:
        y = y.unsqueeze(0).expand(K, b)
    if c == 1:
        logits = out.reshape(K, b)
        loss = F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype), reduction="none")
        pred = (logits > 0).long() if need_pred else None
    else:
        loss = F.cross_entropy(out.reshape(K * b, c), y.reshape(K * b), reduction="none").view(K, b)
        pred = out.argmax(dim=-1) if need_pred else None
    return loss, pred
