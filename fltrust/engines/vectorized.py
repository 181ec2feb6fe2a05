"""Vectorised local training: the clients sampled in a round train side by side as ONE stacked model.

The sequential path (:meth:`fltrust.engines.training.LocalTrainer.train`) trains the m sampled clients
one after another; a round of small models is then mostly per-step Python and dispatch overhead.
Here the m clients' parameters are stacked on a leading client dimension and every optimisation
step of all clients is one stacked forward/backward pass (:mod:`fltrust.core.stacked`:
``torch.baddbmm`` for linear layers, one grouped convolution for convolutions) plus one optimiser
update on a flat ``(m, num_params)`` buffer. ReLU MLPs skip autograd: their passes are written out
(:meth:`VectorTrainer._train_mlp`) into buffers allocated once per local training, so that a step is
about 40 tensor operations and no allocation. On CPU with numpy's OpenBLAS the eight batched
matrix products of an NSL-KDD step go to numpy instead, in layouts OpenBLAS multiplies fastest
(:meth:`VectorTrainer._train_mlp_numpy`; one thread of a Zen 5 core: 0.62 ms per step
with ``torch.bmm``, 0.38 ms with OpenBLAS's AVX-512 kernels).

This module holds when the path applies (:func:`vectorize_reason`), the trainer
(:class:`VectorTrainer`) and a round's clients as one group (:class:`ClientGroup`); its parts
live beside it: the batch layout in :mod:`fltrust.engines.schedule`, the optimiser in
:mod:`fltrust.engines.stacked_optimizer`, the batched evaluation in :mod:`fltrust.engines.batched_evaluation`
(their names are re-exported here).

What is kept identical to the sequential path (``tests/engines/test_vectorized.py`` checks it):

- **Batch order.** Client k draws its epoch orders with ``torch.randperm`` from a CPU generator
  seeded with the same seed (``SimulatedClient.seed``), one permutation per epoch, in the same order;
  all of them are drawn up front and laid out as index tensors ``(steps, m, batch)``.
- **Partial batches.** The last batch of an epoch holds ``n mod B`` samples; it is padded to
  ``B`` with samples of weight 0 and the real ones weigh ``1/r``: the same per-sample mean.
- **Unequal clients.** A client with fewer steps (fewer samples) simply stops: clients are
  ordered by their number of steps, so the active ones are a prefix of the stack and a finished
  client takes no step at all -- zero weight AND no optimiser update or state change (its
  parameters, moments and step count stay as they were). Nobody's data is changed.
- **Optimisers.** Adam on one ``(K, N)`` buffer: on CPU ``torch.optim.Adam(fused=True)``'s kernel,
  which the sequential path uses too (:func:`fltrust.engines.training.fused_adam`), elsewhere the
  single-tensor math (L2 weight decay added to the gradient, ``lerp`` first moment, bias
  corrections from the step count as Python floats, ``addcdiv``); SGD (momentum buffer
  initialised with the first gradient, weight decay, dampening 0) written explicitly; each client
  keeps its own moments (:class:`~fltrust.engines.stacked_optimizer.StackedOptimizer`). Ditto's
  personal track is plain SGD. Gradient clipping is per client (``clip_grad_norm_``'s formula).
- **Proximal terms.** ``mu/2 ||w - c||^2`` with a per-client centre (FedProx: the received model;
  Ditto personal: the client's anchor): gradient ``mu (w - c)``, and the value is included in the
  reported loss as in the sequential path.
- **Dropout.** The sequential path seeds the global generator with the client's seed
  (``torch.manual_seed``) and draws one Bernoulli mask per dropout call. On CPU each client here
  gets a generator seeded the same way and draws its masks, of its real batch size, in the same
  order: identical masks. On CUDA the sequential dropout uses the fused Philox kernel, whose
  stream cannot be reproduced per client: masks are drawn from per-client CUDA generators with
  the same distribution, so with dropout (``femnist_cnn``) the two paths agree in distribution
  only (documented tolerance: none per run; compare accuracies over seeds).
- **Reported loss.** The mean training loss of the last local epoch (accumulated on the device,
  no host synchronisation per step).

Where it does not apply (:func:`vectorize_reason`; ``training.vectorize: auto`` then trains
sequentially, ``on`` raises):

- a privacy mechanism that wraps each client's training
  (:meth:`fltrust.algorithms.privacy.PrivacyMechanism.sequential_reason`): local DP-SGD, where
  Opacus trains one client at a time with per-sample gradients and Poisson sampling, and NbAFL,
  whose proximal term and upload noise the sequential path adds;
- models with BatchNorm buffers (``convnet2``): batch statistics and running-stat updates per
  client are not replayed here (evaluation of such models is still batched);
- ``clients_per_round == 1`` (nothing to stack);
- architectures :mod:`fltrust.core.stacked` cannot replay that have dropout or buffers.

On CUDA the steps of a constant number of active clients can be captured in a CUDA graph
(``VectorTrainer(cuda_graph=True)`` or the environment variable ``FLTRUST_CUDA_GRAPH=1``; off on
CPU; needs a model without dropout and no gradient clipping; unmeasured: no GPU was available
when it was written, ``tests/engines/test_vectorized.py -m gpu`` checks it): the step counter,
the batch indices and the Adam bias corrections are then device tensors (the bias corrections are
computed on the device in float32 instead of Python floats: results agree to float32 rounding).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fltrust.blas import blas_threads_as_torch
from fltrust.algorithms.privacy import PrivacyMechanism, trainable_mask
from fltrust.config import TrainingConfig
from fltrust.core.records import Params
from fltrust.core.stacked import UnsupportedModel, has_buffers, stacked_loss_pred, stacked_net
from fltrust.engines.batched_evaluation import MLP_EVAL_ROWS, MLP_GEMMS, BatchedEvaluator, mlp_layers
from fltrust.engines.schedule import BatchSchedule, batch_schedule
from fltrust.engines.stacked_optimizer import StackedKind, StackedOptimizer
from fltrust.engines.training import fused_adam

__all__ = ["MLP_EVAL_ROWS", "MLP_GEMMS", "BatchSchedule", "BatchedEvaluator", "ClientGroup",
           "StackedOptimizer", "VectorTrainer", "batch_schedule", "vectorize_reason"]


# --------------------------------------------------------------------------------------------
# When it applies
# --------------------------------------------------------------------------------------------
def vectorize_reason(training: TrainingConfig, privacy: PrivacyMechanism, model: nn.Module,
                     clients_per_round: int) -> str | None:
    """Why the vectorised training path does not apply to this run (``None`` when it does).

    Parameters
    ----------
    training : TrainingConfig
        The ``training`` section (``vectorize``).
    privacy : PrivacyMechanism
        The run's privacy mechanism (:meth:`~fltrust.algorithms.privacy.PrivacyMechanism.sequential_reason`).
    model : torch.nn.Module
        The architecture (buffers, whether :mod:`fltrust.core.stacked` can train it).
    clients_per_round : int
        m, the clients sampled per round.

    Returns
    -------
    str or None
        The first reason that applies, as a phrase for a log line or an error.
    """
    if training.vectorize == "off":
        return "training.vectorize is off"
    reason = privacy.sequential_reason()
    if reason is not None:
        return reason
    if clients_per_round < 2:
        return "one client per round"
    if has_buffers(model):
        return "the model has buffers (BatchNorm): per-client batch statistics are not replayed"
    net = stacked_net(model)
    if not getattr(net, "trainable", False):
        return f"{type(model).__name__} cannot be trained as a stacked model"
    return None


# --------------------------------------------------------------------------------------------
# The trainer
# --------------------------------------------------------------------------------------------
class VectorTrainer(BatchedEvaluator):
    """Trains and evaluates K clients' copies of one architecture as one stacked model.

    Parameters
    ----------
    model : nn.Module
        The architecture (its values are not used).
    training : TrainingConfig
    num_classes : int
    device : torch.device
    cuda_graph : bool
        Capture the steps in CUDA graphs (CUDA only, models without dropout, no clipping).
    manual_mlp : bool
        ReLU MLPs (NSL-KDD, N-BaIoT): forward and backward written out with batched matmuls
        instead of autograd (no graph per step; the fastest variant measured on CPU).
    mlp_gemm : {"auto", "numpy", "torch"}
        Where the hand-written MLP steps (and the evaluation) multiply their matrices: numpy's BLAS
        (:meth:`_train_mlp_numpy`) or ``torch.bmm`` (:meth:`_train_mlp`);
        :data:`~fltrust.engines.batched_evaluation.MLP_GEMMS`.

    The stacked forward is :func:`fltrust.core.stacked.stacked_net`'s (program replay -- batched
    matmul / grouped convolution -- when it applies, else ``torch.vmap``). Adam steps use the
    kernel the sequential path uses (:func:`fltrust.engines.training.fused_adam`: on CPU
    ``torch.optim.Adam(fused=True)``'s, one pass over the stacked buffer, elsewhere the
    single-tensor math of :class:`StackedOptimizer`); CUDA-graph capture always uses the
    single-tensor math.
    """

    def __init__(self, model: nn.Module, training: TrainingConfig, num_classes: int, device: torch.device, *,
                 cuda_graph: bool = False, manual_mlp: bool = True, mlp_gemm: str = "auto") -> None:
        super().__init__(model, training, num_classes, device, mlp_gemm=mlp_gemm)
        self.net = stacked_net(self.model)
        if not self.net.trainable:
            raise UnsupportedModel(f"{type(model).__name__} cannot be trained as a stacked model")
        state = self.model.state_dict()
        if not all(trainable_mask(self.model)):
            raise UnsupportedModel("stacked training needs a model whose state is all trainable parameters")
        self.shapes = [tuple(v.shape) for v in state.values()]
        self.dtype = next(iter(state.values())).dtype
        self.offsets = np.concatenate([[0], np.cumsum([int(np.prod(s)) for s in self.shapes])]).astype(int).tolist()
        self.num_params = self.offsets[-1]
        self.mlp = mlp_layers(self.net) if manual_mlp else None  # None: autograd's stacked step
        self.fused_adam = fused_adam(self.device)
        cuda_graph = bool(cuda_graph) or os.environ.get("FLTRUST_CUDA_GRAPH", "") == "1"
        self.cuda_graph = cuda_graph and self.device.type == "cuda"

    # -- parameters ---------------------------------------------------------------------------
    def flatten(self, params: Params | Sequence[Params], K: int) -> torch.Tensor:
        """``(K, N)`` float buffer from one parameter set (repeated) or K of them.

        Parameters
        ----------
        params : Params or sequence of Params
            One parameter set (``state_dict`` order), or K of them.
        K : int
            The number of rows; used only to repeat a single parameter set.

        Returns
        -------
        torch.Tensor
            On the trainer's device, in the model's dtype; row k is parameter set k flattened.
        """
        if len(params) == len(self.shapes) and not isinstance(params[0], (list, tuple)):
            row = np.concatenate([np.asarray(p).reshape(-1) for p in params])
            return torch.as_tensor(row).to(self.device, self.dtype).unsqueeze(0).repeat(K, 1)
        rows = np.stack([np.concatenate([np.asarray(p).reshape(-1) for p in ps]) for ps in params])
        return torch.as_tensor(rows).to(self.device, self.dtype)

    def unflatten(self, flat: torch.Tensor) -> list[Params]:
        """K parameter sets (numpy, ``state_dict`` order) from a ``(K, N)`` buffer (one transfer)."""
        host = flat.detach().cpu().numpy()
        return [[row[a:b].reshape(s).copy() for a, b, s in zip(self.offsets, self.offsets[1:], self.shapes)]
                for row in host]

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """Per-``state_dict``-entry views ``(K, *shape)`` of a ``(K, N)`` buffer."""
        K = flat.shape[0]
        return [flat[:, a:b].view(K, *s) for a, b, s in zip(self.offsets, self.offsets[1:], self.shapes)]

    # -- training -----------------------------------------------------------------------------
    def train(
        self,
        xs: Sequence[torch.Tensor],
        ys: Sequence[torch.Tensor],
        init: Params | Sequence[Params],
        seeds: Sequence[int],
        *,
        epochs: int,
        proximal_center: Params | Sequence[Params] | None = None,
        proximal_mu: float = 0.0,
        learning_rate: float | None = None,
        plain_sgd: bool = False,
    ) -> tuple[list[Params], list[float]]:
        """Train K clients side by side; returns (K parameter sets, K last-epoch mean losses).

        Same arguments as :meth:`fltrust.engines.training.LocalTrainer.train`, one entry per client:
        ``init`` and ``proximal_center`` may be one parameter set (shared) or K of them.

        Parameters
        ----------
        xs, ys : sequence of torch.Tensor
            Each client's training inputs and integer labels, on the trainer's device.
        init : Params or sequence of Params
            The model(s) training starts from.
        seeds : sequence of int
            Each client's seed (batch orders, dropout), as the sequential path takes it.
        epochs : int
            Local epochs.
        proximal_center, proximal_mu
            The proximal term :math:`\\tfrac{\\mu}{2}\\lVert w - c \\rVert^2` (default off: ``None``,
            0.0).
        learning_rate, plain_sgd
            Override the optimiser (default: ``training.learning_rate``, ``training.optimizer``).

        Returns
        -------
        tuple of (list of Params, list of float)
            In the order of ``ys``; the loss of a client without training rows is NaN.
        """
        K = len(ys)
        t = self.training
        sizes = [len(y) for y in ys]
        sched = batch_schedule(sizes, seeds, epochs, t.batch_size, self.device, self.dtype)
        order = sched.order
        flat = self.flatten(init, K)[order].contiguous()
        center = None
        if proximal_center is not None and proximal_mu > 0:
            center = self.flatten(proximal_center, K)[order].contiguous()
        x = torch.cat([xs[k] for k in order])
        y = torch.cat([ys[k] for k in order])
        lr = t.learning_rate if learning_rate is None else learning_rate
        kind: StackedKind = "plain" if plain_sgd else t.optimizer
        gens = None
        if self.net.dropout_ps:
            gens = [torch.Generator(device=self.device).manual_seed(int(seeds[k])) for k in order]
        graphed = self.cuda_graph and gens is None and t.grad_clip is None
        opt = StackedOptimizer(kind, K, self.num_params, lr=lr, momentum=0.0 if plain_sgd else t.momentum,
                               weight_decay=0.0 if plain_sgd else t.weight_decay, device=self.device, dtype=self.dtype,
                               fused=self.fused_adam and not graphed)
        loss_sum = torch.zeros(K, dtype=torch.float64, device=self.device)
        with torch.no_grad():  # one context for all steps (gradients: by hand, or autograd.grad inside)
            if graphed:
                self._train_graphed(sched, flat, center, proximal_mu, x, y, opt, loss_sum)
            elif self.mlp is not None and gens is None and self.mlp_gemm == "numpy":
                with blas_threads_as_torch():
                    self._train_mlp_numpy(sched, flat, center, proximal_mu, x, y, opt, loss_sum)
            elif self.mlp is not None and gens is None:
                self._train_mlp(sched, flat, center, proximal_mu, x, y, opt, loss_sum)
            else:
                grad = torch.empty_like(flat)
                for s, ka in enumerate(sched.active):
                    self._step(s, ka, sched, flat, center, proximal_mu, x, y, opt, loss_sum, gens, grad)
        # the global generator as the sequential path leaves it (seeded by its last training)
        torch.manual_seed(int(seeds[K - 1]))
        if gens is not None and self.device.type == "cpu":
            torch.default_generator.set_state(gens[order.index(K - 1)].get_state())
        params_sorted = self.unflatten(flat)
        losses_sorted = (loss_sum / torch.as_tensor([max(sizes[k], 1) for k in order], dtype=torch.float64,
                                                    device=self.device)).cpu().numpy()
        position = {k: j for j, k in enumerate(order)}  # client k's row in the stack
        return ([params_sorted[position[k]] for k in range(K)],
                [float(losses_sorted[position[k]]) if sizes[k] else float("nan") for k in range(K)])

    def _forward_loss(self, s: int, ka: int, sched: BatchSchedule, leaves, x, y, gens) -> torch.Tensor:
        idx = sched.index[s, :ka]
        noise = None
        if gens is not None:
            rows = sched.batch_rows[s]
            ps = self.net.dropout_ps

            def noise(i: int, shape: tuple[int, ...]) -> torch.Tensor:
                keep = 1 - ps[i]
                mask = torch.zeros(shape, device=self.device, dtype=self.dtype)
                for k in range(shape[0]):  # client k's real rows, drawn as the sequential path draws
                    draw = torch.empty((rows[k], *shape[2:]), device=self.device, dtype=self.dtype)
                    mask[k, : rows[k]] = draw.bernoulli_(keep, generator=gens[k])
                return mask.div_(keep)

        out = self.net(leaves, _gather(x, idx), train=True, noise=noise)
        per, _ = stacked_loss_pred(out, _gather(y, idx), need_pred=False)
        return (per * sched.weight[s, :ka]).sum(1)  # (ka,) each client's batch-mean loss

    def _manual_layers(self) -> list[tuple[int, int]]:
        """:attr:`mlp`, which the hand-written MLP steps read (they run only when it is set)."""
        if self.mlp is None:
            raise RuntimeError("the hand-written MLP steps need the model's MLP layers (manual_mlp, mlp_layers)")
        return self.mlp

    def _train_mlp(self, sched: BatchSchedule, flat, center, mu, x, y, opt, loss_sum) -> None:
        """Every step of a ReLU MLP by hand (no autograd graph), in buffers allocated once.

        The formulas autograd uses (``baddbmm`` backward, ``threshold_backward`` for ReLU,
        ``(sigmoid(z) - y) * w`` for BCE-with-logits, ``exp(log_softmax) * w`` minus ``w`` at the
        label for cross-entropy), each written into its buffer with ``out=`` or in place: the batch
        gathered with ``index_select(out=)``, the activations kept for the backward pass, the
        gradients straight into one ``(K, N)`` buffer. The loss itself is computed only in steps
        whose loss is reported (a client's last epoch).
        """
        layers = self._manual_layers()
        K, S, B = flat.shape[0], len(sched.active), sched.index.shape[2]
        x = x.reshape(len(x), -1)
        widths = [x.shape[1]] + [self.shapes[wi][0] for wi, _ in layers]
        binary = widths[-1] == 1
        target = y.to(self.dtype) if binary else y

        def new(*shape, dtype=self.dtype):
            return torch.empty(*shape, device=self.device, dtype=dtype)

        buffers = (new(K * B, widths[0]), new(K * B, dtype=target.dtype),
                   [new(K, B, w) for w in widths[1:]],  # each layer's output (ReLU applied in place)
                   [new(K, B, w) for w in widths[1:]],  # the loss gradient w.r.t. each layer's output
                   torch.empty_like(flat))
        index = sched.index.view(S, K * B)
        cache: dict[int, tuple] = {}
        for s, ka in enumerate(sched.active):
            views = cache.get(ka)
            if views is None:
                views = cache[ka] = self._mlp_views(ka, B, flat, buffers)
            active, grad, W, Wt, bias, gW, gb, xflat, xk, tflat, tk, outs, deltas = views
            idx = index[s, : ka * B]
            torch.index_select(x, 0, idx, out=xflat)
            torch.index_select(target, 0, idx, out=tflat)
            h = xk
            for i, out in enumerate(outs):
                torch.baddbmm(bias[i], h, Wt[i], out=out)
                h = out
                if i < len(outs) - 1:
                    h.relu_()
            report = sched.report[s]
            g = deltas[-1]
            losses = _output_gradient(h, tk, sched.weight[s, :ka], g, report, binary, class_dim=2)
            for i in range(len(outs) - 1, -1, -1):
                inp = xk if i == 0 else outs[i - 1]
                torch.bmm(g.transpose(1, 2), inp, out=gW[i])
                torch.sum(g, 1, out=gb[i])
                if i > 0:
                    prev = deltas[i - 1]
                    torch.bmm(g, W[i], out=prev)
                    torch.ops.aten.threshold_backward.grad_input(prev, inp, 0, grad_input=prev)
                    g = prev
            self._finish_grad(active, grad, losses, center, mu, ka, loss_sum,
                              sched.loss_weight[s, :ka] if report else None)
            opt.update(active, grad, ka)

    def _train_mlp_numpy(self, sched: BatchSchedule, flat, center, mu, x, y, opt, loss_sum) -> None:
        """:meth:`_train_mlp` with the matrix products in numpy's BLAS (CPU), all as ``Aᵀ @ Bᵀ``.

        OpenBLAS multiplies small matrices at full speed in the forms ``A @ B``, ``Aᵀ @ B`` and
        ``Aᵀ @ Bᵀ`` but at half speed in ``A @ Bᵀ``; a layer's forward, input-gradient and
        weight-gradient products cannot all avoid that form in one layout. Here the layouts
        alternate: even layers read feature-major inputs ``(k, width, batch)`` and write
        batch-major outputs ``(k, batch, width)``, odd layers the reverse and hold their weight
        transposed, ``(in, out)``, in ``flat`` while training (:meth:`_mlp_layout`). Then every
        product is ``Aᵀ @ Bᵀ`` and every elementwise step (bias, ReLU, its backward) reads one
        layout. The parameters, moments and gradients are the same numbers in another order;
        Adam, the proximal term and per-tensor clipping do not depend on the order.
        """
        layers = self._manual_layers()
        L, K, S, B = len(layers), flat.shape[0], len(sched.active), sched.index.shape[2]
        xt = x.reshape(len(x), -1).t().contiguous()  # (features, rows): a batch gathers columns
        widths = [xt.shape[0]] + [self.shapes[wi][0] for wi, _ in layers]
        binary = widths[-1] == 1
        target = y.to(self.dtype) if binary else y
        xbuf = torch.empty(widths[0] * K * B, device=self.device, dtype=self.dtype)
        tbuf = torch.empty(K * B, device=self.device, dtype=target.dtype)
        outs_buf = [torch.empty(K * B * w, device=self.device, dtype=self.dtype) for w in widths[1:]]
        deltas_buf = [torch.empty(K * B * w, device=self.device, dtype=self.dtype) for w in widths[1:]]
        grad_buffer = torch.empty_like(flat)
        index = sched.index.view(S, K * B)
        T = (0, 2, 1)  # a numpy transpose of the last two axes
        cache: dict[int, tuple] = {}
        self._mlp_layout(flat, to_training=True)
        if center is not None:
            self._mlp_layout(center, to_training=True)  # train()'s own copy
        try:
            for s, ka in enumerate(sched.active):
                views = cache.get(ka)
                if views is None:
                    active, grad = flat[:ka], grad_buffer[:ka]
                    params, grads = self.views(active), self.views(grad)
                    xflat = xbuf[: widths[0] * ka * B].view(widths[0], ka * B)
                    # layer i's output: batch-major (k, batch, width) for even i, feature-major for odd i
                    shape = [(ka, B, w) if i % 2 == 0 else (ka, w, B) for i, w in enumerate(widths[1:])]
                    outs = [o[: ka * B * w].view(*sh) for o, w, sh in zip(outs_buf, widths[1:], shape)]
                    deltas = [d[: ka * B * w].view(*sh) for d, w, sh in zip(deltas_buf, widths[1:], shape)]
                    inputs = [xflat.view(widths[0], ka, B).permute(1, 0, 2)] + outs[:-1]
                    held = [self.shapes[wi] if i % 2 == 0 else self.shapes[wi][::-1] for i, (wi, _) in enumerate(layers)]
                    weights = [params[wi].view(ka, *sh) for (wi, _), sh in zip(layers, held)]
                    gweights = [grads[wi].view(ka, *sh) for (wi, _), sh in zip(layers, held)]
                    views = cache[ka] = (
                        active, grad, xflat, tbuf[: ka * B].view(ka, B), outs, deltas,
                        [params[bi].unsqueeze(1 + i % 2) for i, (_, bi) in enumerate(layers)],
                        [grads[bi] for _, bi in layers],
                        [t.numpy().transpose(T) for t in inputs], [t.numpy().transpose(T) for t in weights],
                        [t.numpy() for t in gweights], [t.numpy() for t in outs], [t.numpy().transpose(T) for t in deltas],
                        [t.numpy() for t in deltas])
                (active, grad, xflat, tk, outs, deltas, bias, gb, inT, wT, gW, out_n, dT, d_n) = views
                idx = index[s, : ka * B]
                torch.index_select(xt, 1, idx, out=xflat)
                torch.index_select(target, 0, idx, out=tk.view(-1))
                for i in range(L):
                    if i % 2 == 0:  # Y (batch, out) = X Wᵀ; X held feature-major, W (out, in)
                        np.matmul(inT[i], wT[i], out=out_n[i])
                    else:  # Yᵀ (out, batch) = Vᵀ Xᵀ; X held batch-major, V = Wᵀ (in, out)
                        np.matmul(wT[i], inT[i], out=out_n[i])
                    outs[i].add_(bias[i])
                    if i < L - 1:
                        outs[i].relu_()
                report = sched.report[s]
                losses = _output_gradient(outs[-1], tk, sched.weight[s, :ka], deltas[-1], report, binary,
                                          class_dim=2 if (L - 1) % 2 == 0 else 1)
                for i in range(L - 1, -1, -1):
                    if i % 2 == 0:  # dW (out, in) = dYᵀ X; dXᵀ (in, batch) = Wᵀ dYᵀ
                        np.matmul(dT[i], inT[i], out=gW[i])
                        torch.sum(deltas[i], 1, out=gb[i])
                        if i > 0:
                            np.matmul(wT[i], dT[i], out=d_n[i - 1])
                    else:  # dV (in, out) = Xᵀ dY; dX (batch, in) = dY Vᵀ (dY held feature-major)
                        np.matmul(inT[i], dT[i], out=gW[i])
                        torch.sum(deltas[i], 2, out=gb[i])
                        np.matmul(dT[i], wT[i], out=d_n[i - 1])
                    if i > 0:
                        prev = deltas[i - 1]
                        torch.ops.aten.threshold_backward.grad_input(prev, outs[i - 1], 0, grad_input=prev)
                self._finish_grad(active, grad, losses, center, mu, ka, loss_sum,
                                  sched.loss_weight[s, :ka] if report else None)
                opt.update(active, grad, ka)
        finally:
            self._mlp_layout(flat, to_training=False)

    def _mlp_layout(self, flat: torch.Tensor, *, to_training: bool) -> None:
        """Transpose the odd layers' weights of a ``(k, N)`` buffer in place: ``(out, in)`` to
        ``(in, out)`` (``to_training``) or back (:meth:`_train_mlp_numpy`)."""
        layers = self._manual_layers()
        for i, (wi, _) in enumerate(layers):
            rows, cols = self.shapes[wi] if to_training else self.shapes[wi][::-1]
            if i % 2 == 1 and min(rows, cols) > 1:  # a (1, n) weight reads the same either way
                block = flat[:, self.offsets[wi] : self.offsets[wi + 1]]
                block.copy_(block.reshape(-1, rows, cols).transpose(1, 2).clone().reshape(block.shape))

    def _mlp_views(self, ka: int, B: int, flat: torch.Tensor, buffers: tuple) -> tuple:
        """The views :meth:`_train_mlp` writes and reads for ``ka`` active clients (made once per ``ka``)."""
        layers = self._manual_layers()
        xb, tb, outs, deltas, grad_buffer = buffers
        active, grad = flat[:ka], grad_buffer[:ka]
        params, grads = self.views(active), self.views(grad)
        W = [params[wi] for wi, _ in layers]
        return (active, grad, W, [w.transpose(1, 2) for w in W], [params[bi].unsqueeze(1) for _, bi in layers],
                [grads[wi] for wi, _ in layers], [grads[bi] for _, bi in layers],
                xb[: ka * B], xb[: ka * B].view(ka, B, -1), tb[: ka * B], tb[: ka * B].view(ka, B),
                [o[:ka] for o in outs], [d[:ka] for d in deltas])

    def _finish_grad(self, active, grad, losses, center, mu, ka, loss_sum, loss_weight) -> None:
        """Proximal term and clipping on the ``(ka, N)`` gradient; where the step's loss is reported
        (``loss_weight`` not None), ``loss_sum[:ka] += loss * loss_weight``."""
        if center is not None:
            diff = active - center[:ka]
            grad.add_(diff, alpha=mu)
            if losses is not None:
                losses = losses + 0.5 * mu * (diff * diff).sum(1)
        clip = self.training.grad_clip
        if clip is not None:
            norms = torch.stack([grad[:, a:b].norm(dim=1) for a, b in zip(self.offsets, self.offsets[1:])], 1)
            coef = (clip / (norms.norm(dim=1) + 1e-6)).clamp(max=1.0)
            grad.mul_(coef.unsqueeze(1))
        if losses is not None and loss_weight is not None:
            loss_sum[:ka] += losses.double() * loss_weight

    def _step(self, s, ka, sched, flat, center, mu, x, y, opt, loss_sum, gens, grad_buffer) -> None:
        """One step with the autograd gradient of the stacked loss for rows ``[:ka]`` (into ``grad_buffer``)."""
        active = flat[:ka]
        leaves = [v.detach().requires_grad_(True) for v in self.views(active)]
        with torch.enable_grad():
            losses = self._forward_loss(s, ka, sched, leaves, x, y, gens)
            grads = torch.autograd.grad(losses.sum(), leaves)
        grad = grad_buffer[:ka]
        torch.cat([g.reshape(ka, -1) for g in grads], 1, out=grad)
        self._finish_grad(active, grad, losses.detach(), center, mu, ka, loss_sum,
                          sched.loss_weight[s, :ka] if sched.report[s] else None)
        opt.update(active, grad, ka)

    def _train_graphed(self, sched, flat, center, mu, x, y, opt, loss_sum) -> None:
        """CUDA-graph replay of the steps (one graph per run of a constant number of clients)."""
        S = len(sched.active)
        s = 0
        step_t = torch.zeros((), device=self.device, dtype=torch.float32)
        grad_buffer = torch.empty_like(flat)
        while s < S:
            ka = sched.active[s]
            end = s
            while end < S and sched.active[end] == ka:
                end += 1
            # eager warm-up steps (real steps, on a side stream as the CUDA-graph docs require)
            warm = min(end - s, 3)
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(warm):
                    self._step(s, ka, sched, flat, center, mu, x, y, opt, loss_sum, None, grad_buffer)
                    s += 1
            torch.cuda.current_stream(self.device).wait_stream(side)
            if s >= end:
                continue
            step_t.fill_(float(opt.steps))
            cursor = torch.full((), s, device=self.device, dtype=torch.long)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step_t.add_(1)
                active = flat[:ka]
                leaves = [v.detach().requires_grad_(True) for v in self.views(active)]
                idx = sched.index.index_select(0, cursor.view(1))[0, :ka]
                w = sched.weight.index_select(0, cursor.view(1))[0, :ka]
                lw = sched.loss_weight.index_select(0, cursor.view(1))[0, :ka]
                with torch.enable_grad():
                    out = self.net(leaves, _gather(x, idx), train=True)
                    per, _ = stacked_loss_pred(out, _gather(y, idx), need_pred=False)
                    losses = (per * w).sum(1)
                    grads = torch.autograd.grad(losses.sum(), leaves)
                grad = torch.cat([g.reshape(ka, -1) for g in grads], 1)
                # no clipping when graphed
                self._finish_grad(active, grad, losses.detach(), center, mu, ka, loss_sum, lw)
                opt.step_capturable(active, grad, ka, step_t)
                cursor.add_(1)
            for _ in range(s, end):
                graph.replay()
            opt.steps += end - s
            s = end


def _output_gradient(logits: torch.Tensor, target: torch.Tensor, weight: torch.Tensor, grad: torch.Tensor,
                     report: bool, binary: bool, class_dim: int) -> torch.Tensor | None:
    """The loss gradient with respect to the logits, written into ``grad``; the loss when ``report``.

    BCE-with-logits (one logit): ``(sigmoid(z) - y) * w``; cross-entropy: ``softmax(z) * w`` minus
    ``w`` at the label, with the classes along ``class_dim`` of ``(k, ., .)`` logits. ``weight``
    ``(k, batch)`` holds each sample's share of its client's batch mean (0 for padding).
    """
    ka, rows = weight.shape
    if binary:
        z = logits.view(ka, rows)
        torch.sigmoid(z, out=grad.view(ka, rows)).sub_(target).mul_(weight)
        if report:
            return (F.binary_cross_entropy_with_logits(z, target, reduction="none") * weight).sum(1)
        return None
    w = weight.unsqueeze(class_dim)
    label = target.unsqueeze(class_dim)
    logp = torch.log_softmax(logits, class_dim)
    torch.exp(logp, out=grad).mul_(w)
    grad.scatter_add_(class_dim, label, -w)
    if report:
        return (-logp.gather(class_dim, label).squeeze(class_dim) * weight).sum(1)
    return None


def _gather(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``t[idx]`` for a 2-d index (``index_select``: about twice as fast on CPU)."""
    return t.index_select(0, idx.reshape(-1)).view(*idx.shape, *t.shape[1:])



class ClientGroup:
    """The round's clients as one group for a strategy's vectorised local updates.

    ``clients``: handles with ``x``, ``y`` (training data on the device) and ``seed(offset)``
    (:class:`~fltrust.engines.client.SimulatedClient`).
    """

    def __init__(self, trainer: VectorTrainer, clients: Sequence) -> None:
        self.trainer = trainer
        self.clients = list(clients)

    def train(self, init: Params | Sequence[Params], *, epochs: int, seed_offset: int = 0,
              private: bool = True, **kwargs) -> tuple[list[Params], list[float]]:
        """Like ``ClientHandle.train`` for every client (``private`` is moot: no local DP here).

        Parameters
        ----------
        init : Params or sequence of Params
            The model training starts from, shared or one per client.
        epochs : int
            Local epochs.
        seed_offset : int
            Selects each client's random stream, as in ``ClientHandle.train`` (default 0).
        private : bool
            Ignored (the vectorised path does not run with client-side privacy).
        **kwargs
            :meth:`VectorTrainer.train` keywords (``proximal_center``, ``proximal_mu``,
            ``learning_rate``, ``plain_sgd``).

        Returns
        -------
        tuple of (list of Params, list of float)
            The trained models and last-epoch mean losses, in the order of the clients.
        """
        return self.trainer.train([c.x for c in self.clients], [c.y for c in self.clients], init,
                                  [c.seed(seed_offset) for c in self.clients], epochs=epochs, **kwargs)

    def train_loss_of(self, params: Params) -> list[float]:
        """Loss of ``params`` on each client's training data (q-FFL), one batched evaluation."""
        results = self.trainer.evaluate_shared(params, [c.x for c in self.clients], [c.y for c in self.clients])
        return [r.loss for r in results]
