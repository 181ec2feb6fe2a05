"""Batched evaluation: the engine's per-client evaluations, batched across a round's clients.

:class:`BatchedEvaluator` evaluates one model on many datasets, or model k on dataset k as one
stacked model, with the sequential path's results (to float32 rounding);
:class:`fltrust.engines.vectorized.VectorTrainer` extends it with stacked training. :func:`mlp_layers`
recognises the ReLU MLPs both treat specially.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from fltrust.blas import blas_threads_as_torch, numpy_blas
from fltrust.config import TrainingConfig
from fltrust.core.evaluation import EvalResult, evaluate_datasets, evaluate_stacked, set_params
from fltrust.core.records import Params
from fltrust.core.stacked import stacked_net

__all__ = ["MLP_EVAL_ROWS", "MLP_GEMMS", "BatchedEvaluator", "mlp_layers"]

MLP_GEMMS = ("auto", "numpy", "torch")
"""Where ReLU MLPs' matrix products run (``mlp_gemm``): numpy's BLAS or torch; ``auto`` = numpy on
CPU when numpy's BLAS is OpenBLAS (:mod:`fltrust.blas`: faster there at these sizes), else torch."""

MLP_EVAL_ROWS = 4096
"""Forward block (samples) of :meth:`BatchedEvaluator.evaluate_shared` for ReLU MLPs on CPU.

Evaluation's default block holds activations of up to 32 MB: NSL-KDD's 22,544 aux samples in one
block, whose 11 MB temporaries glibc serves with fresh mmaps that page-fault on first touch; in
blocks of 2,048-8,192 samples the aux evaluation takes 26-28 ms instead of 57 ms (one thread), with
the same results (each sample's forward pass does not depend on the block)."""


class BatchedEvaluator:
    """The engine's per-client evaluations, batched across the round's clients.

    Same results as :meth:`fltrust.engines.training.LocalTrainer.evaluate` per client (to float32
    rounding): same loss convention and the same mini-batch grouping of ``per_batch_sum``.
    Applies to every model (BatchNorm in eval mode included).

    ``mlp_gemm`` (:data:`MLP_GEMMS`) chooses where a ReLU MLP's products run; with ``numpy``
    :meth:`evaluate_shared` computes the logits with numpy's BLAS (on one core of a Zen 5, NSL-KDD's
    22,544 aux samples: 16 ms with torch, 7 ms with OpenBLAS's AVX-512 kernels), using as many
    BLAS threads as torch uses.
    """

    def __init__(self, model: nn.Module, training: TrainingConfig, num_classes: int, device: torch.device, *,
                 mlp_gemm: str = "auto") -> None:
        self.model = model.to(device)
        self.training = training
        self.num_classes = num_classes
        self.device = torch.device(device)
        # as LocalTrainer: the per-batch-sum convention keeps the training batch size
        self.eval_batch_size = training.batch_size if training.loss_scaling == "per_batch_sum" else 1024
        # ReLU MLPs on CPU: forward blocks of MLP_EVAL_ROWS samples instead of the default
        # (activations up to 32 MB); CNNs keep the default, measured best for them
        cpu = self.device.type == "cpu"
        self.eval_mlp = mlp_layers(stacked_net(self.model)) if cpu else None
        self.eval_chunk = MLP_EVAL_ROWS if self.eval_mlp is not None else None
        if mlp_gemm not in MLP_GEMMS:
            raise ValueError(f"mlp_gemm={mlp_gemm!r}; choose one of {MLP_GEMMS}")
        if mlp_gemm == "auto":
            mlp_gemm = "numpy" if cpu and numpy_blas().startswith("openblas") else "torch"
        if mlp_gemm == "numpy" and not cpu:
            raise ValueError(f"mlp_gemm='numpy' multiplies on the CPU; the device is {self.device}")
        self.mlp_gemm = mlp_gemm

    def evaluate_shared(self, params: Params, xs: Sequence[torch.Tensor], ys: Sequence[torch.Tensor]) -> list[EvalResult]:
        """One model on each dataset (rewards, the aux set, q-FFL's training losses).

        Parameters
        ----------
        params : Params
            The model (``state_dict`` order).
        xs, ys : sequence of torch.Tensor
            The datasets' inputs and integer labels, on the evaluator's device.

        Returns
        -------
        list of EvalResult
            One per dataset, in order.
        """
        set_params(self.model, params)
        layers = self.eval_mlp if self.mlp_gemm == "numpy" else None  # an MLP whose products numpy computes
        forward = None
        if layers is not None:  # the layers' (weight, bias) as numpy views, read once per evaluation
            state = [v.numpy() for v in self.model.state_dict().values()]
            forward = functools.partial(_mlp_logits_numpy, [(state[wi], state[bi]) for wi, bi in layers])
        with blas_threads_as_torch() if layers is not None else contextlib.nullcontext():
            return evaluate_datasets(self.model, list(xs), list(ys), num_classes=self.num_classes,
                                     batch_size=self.eval_batch_size, loss_scaling=self.training.loss_scaling,
                                     chunk_size=self.eval_chunk, forward=forward)

    def evaluate_each(self, params: Sequence[Params], xs: Sequence[torch.Tensor], ys: Sequence[torch.Tensor]) -> list[EvalResult]:
        """Model k on dataset k (the clients' performances), as one stacked model.

        Parameters
        ----------
        params : sequence of Params
            K models.
        xs, ys : sequence of torch.Tensor
            K datasets' inputs and integer labels, on the evaluator's device.

        Returns
        -------
        list of EvalResult
            Model k's result on dataset k, for each k.
        """
        return evaluate_stacked(self.model, list(params), list(xs), list(ys), num_classes=self.num_classes,
                                batch_size=self.eval_batch_size, loss_scaling=self.training.loss_scaling)


def _mlp_logits_numpy(layers: list[tuple[np.ndarray, np.ndarray]], x: torch.Tensor) -> torch.Tensor:
    """A ReLU MLP's logits of a block ``x`` (CPU), each product in numpy's BLAS."""
    h = x.reshape(len(x), -1).numpy()
    for i, (weight, bias) in enumerate(layers):
        h = np.matmul(h, weight.T)
        h += bias
        if i < len(layers) - 1:
            np.maximum(h, 0, out=h)
    return torch.from_numpy(h)


def mlp_layers(net) -> list[tuple[int, int]] | None:
    """``[(weight index, bias index), ...]`` when ``net`` replays ``[flatten] Linear (ReLU Linear)*``.

    Parameters
    ----------
    net
        A stacked forward (:func:`fltrust.core.stacked.stacked_net`).

    Returns
    -------
    list of (int, int) or None
        The ``state_dict`` positions of each linear layer's weight and bias, or ``None`` when
        ``net`` is not a program replay of a ReLU MLP.
    """
    if getattr(net, "kind", None) != "program":
        return None
    specs = [spec for spec, _, _ in net.ops if spec != "output" and spec[0] != "identity"]
    if specs and specs[0][0] == "flatten" and specs[0][1] == 1:
        specs = specs[1:]
    layers = []
    for i, spec in enumerate(specs):
        want = "linear" if i % 2 == 0 else "relu"
        if spec[0] != want or (want == "linear" and spec[2] is None):  # a linear layer without bias: no MLP here
            return None
        if want == "linear":
            layers.append((spec[1], spec[2]))
    if not layers or specs[-1][0] != "linear":
        return None
    return layers
