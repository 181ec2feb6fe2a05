"""The optimiser of vectorised local training: Adam / SGD on a ``(K, N)`` buffer of K clients' flat parameters.

Each row of the buffer is one client's optimiser state, updated with the same math as the
sequential path's ``torch.optim`` optimisers (:class:`StackedOptimizer`; used by
:class:`fltrust.engines.vectorized.VectorTrainer`).
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from fltrust.names import OptimizerName

__all__ = ["StackedKind", "StackedOptimizer"]

StackedKind = Literal[OptimizerName, "plain"]
"""``training.optimizer``, or ``"plain"``: SGD without momentum or weight decay."""


class StackedOptimizer:
    """Adam / SGD(+momentum, weight decay) / plain SGD on a ``(K, N)`` parameter buffer.

    Each row is one client's optimiser; :meth:`step` updates only the first ``ka`` rows (the
    active clients), so a finished client's parameters and state never change. No step allocates:
    the Adam denominator has its own buffer.

    Two Adam kernels, both ``torch.optim.Adam``'s math element by element:

    - ``fused=False``: the single-tensor implementation (``torch.optim.Adam()`` on CPU, the
      sequential path's optimiser), bit for bit: ``lerp_``, ``mul_``/``addcmul_``, ``sqrt``,
      ``div_``/``add_``, ``addcdiv_``; eight passes over the buffer. MKL's vector ``sqrt`` takes
      a slow special-value path for exact zeros (an MLP's never-active input features keep
      ``v = 0``: 20 % of NSL-KDD's entries, which made ``sqrt`` 2.7x slower), so ``v`` is first
      clamped to the smallest normal float: its square root divided by the bias correction then
      lies far below half an ulp of ``eps``, and the denominator is ``eps`` bit for bit, as
      before (checked once in ``__init__``, else the plain ``sqrt``).
    - ``fused=True``: ``torch._fused_adam_``, the kernel of ``torch.optim.Adam(fused=True)``, one
      pass over the buffer (about 2.5x faster on CPU). It equals ``torch.optim.Adam(fused=True)``
      bit for bit and the single-tensor Adam to float32 rounding (about 0.3 % of the entries
      differ by one ulp after a step: ``torch.lerp``/``addcmul`` vs fused multiply-adds).
    """

    def __init__(self, kind: StackedKind, K: int, N: int, *, lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, device=None, dtype=torch.float32,
                 fused: bool = False) -> None:
        self.kind, self.lr, self.momentum, self.weight_decay = kind, float(lr), float(momentum), float(weight_decay)
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.steps = 0
        self.fused = bool(fused) and kind == "adam"

        def zeros():
            return torch.zeros(K, N, device=device, dtype=dtype)

        self.exp_avg = zeros() if kind == "adam" else None
        self.exp_avg_sq = zeros() if kind == "adam" else None
        self.buf = zeros() if kind == "sgd" and self.momentum != 0 else None
        self._denom = torch.empty(K, N, device=device, dtype=dtype) if kind == "adam" and not self.fused else None
        self._step_t = torch.zeros((), device=device, dtype=torch.float32) if self.fused else None
        tiny = torch.finfo(dtype).tiny
        # sqrt(tiny) / sqrt(1 - beta2) (the first step's bias correction, the smallest) is below
        # 2^-30 eps: adding eps rounds it away, whatever the rounding of sqrt and division
        exact_floor = kind == "adam" and math.sqrt(tiny) / math.sqrt(1 - self.beta2) < eps * 2.0**-30
        self._v_floor = tiny if exact_floor and torch.device(device or "cpu").type == "cpu" else None

    def _update_moments(self, params: torch.Tensor, grad: torch.Tensor, ka: int,
                        first: bool) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The part of a step shared by :meth:`step` and :meth:`step_capturable`.

        Plain SGD and SGD with momentum are applied here in full (returns None); for Adam the
        moments of rows ``[:ka]`` are updated and returned, and the caller applies the bias-corrected
        step (a Python float eagerly, a device tensor under CUDA-graph capture).
        """
        if self.kind == "plain":
            params.add_(grad, alpha=-self.lr)
            return None
        if self.weight_decay != 0:
            grad = grad.add(params, alpha=self.weight_decay)
        if self.kind == "sgd":
            if self.buf is not None:
                buf = self.buf[:ka]
                if first:
                    buf.copy_(grad)
                else:
                    buf.mul_(self.momentum).add_(grad)
                grad = buf
            params.add_(grad, alpha=-self.lr)
            return None
        assert self.exp_avg is not None and self.exp_avg_sq is not None  # Adam's moments, allocated for it
        m, v = self.exp_avg[:ka], self.exp_avg_sq[:ka]
        m.lerp_(grad, 1 - self.beta1)
        v.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        return m, v

    @torch.no_grad()
    def step(self, params: torch.Tensor, grad: torch.Tensor, ka: int) -> None:
        """One update of rows ``[:ka]``; ``params`` and ``grad`` are ``(ka, N)`` (grad is consumed).

        Parameters
        ----------
        params, grad : Tensor (ka, N)
            The active clients' rows of the parameter buffer (updated in place) and their gradient.
        ka : int
            Number of active clients (a prefix of the stack).
        """
        self.update(params, grad, ka)

    def update(self, params: torch.Tensor, grad: torch.Tensor, ka: int) -> None:
        """:meth:`step` without its ``no_grad`` context (the trainer's loop runs under one).

        Parameters
        ----------
        params, grad : Tensor (ka, N)
            The active clients' rows of the parameter buffer (updated in place) and their gradient
            (consumed: weight decay may be added to it).
        ka : int
            Number of active clients (a prefix of the stack).
        """
        self.steps += 1
        if self.fused:
            assert self._step_t is not None and self.exp_avg is not None and self.exp_avg_sq is not None  # fused Adam's
            self._step_t.fill_(self.steps)
            torch._fused_adam_([params], [grad], [self.exp_avg[:ka]], [self.exp_avg_sq[:ka]], [], [self._step_t],
                               lr=self.lr, beta1=self.beta1, beta2=self.beta2, weight_decay=self.weight_decay,
                               eps=self.eps, amsgrad=False, maximize=False)
            return
        moments = self._update_moments(params, grad, ka, first=self.steps == 1)
        if moments is None:
            return
        m, v = moments
        step = float(self.steps)
        bias_correction1 = 1 - self.beta1**step
        bias_correction2 = 1 - self.beta2**step
        step_size = self.lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        assert self._denom is not None  # allocated for unfused Adam, the only optimiser that gets here
        denom = self._denom[:ka]
        if self._v_floor is not None:
            torch.clamp_min(v, self._v_floor, out=denom).sqrt_()
        else:
            torch.sqrt(v, out=denom)
        denom.div_(bias_correction2_sqrt).add_(self.eps)
        params.addcdiv_(m, denom, value=-step_size)

    @torch.no_grad()
    def step_capturable(self, params: torch.Tensor, grad: torch.Tensor, ka: int, step_t: torch.Tensor) -> None:
        """:meth:`step` with the step count as a device tensor (CUDA-graph capture; the first step,
        which initialises the momentum buffer, runs eagerly).

        Parameters
        ----------
        params, grad : Tensor (ka, N)
            The active clients' rows of the parameter buffer (updated in place) and their gradient.
        ka : int
            Number of active clients (a prefix of the stack).
        step_t : Tensor ()
            The step count after this step (float32, on the device; the caller increments it), for
            Adam's bias corrections; :attr:`steps` is not advanced here.

        Raises
        ------
        ValueError
            For a fused-Adam optimiser.
        """
        if self.fused:
            raise ValueError("fused Adam is not captured in CUDA graphs; use StackedOptimizer(fused=False)")
        moments = self._update_moments(params, grad, ka, first=False)
        if moments is None:
            return
        m, v = moments
        bias_correction1 = 1 - torch.pow(self.beta1, step_t)
        bias_correction2 = 1 - torch.pow(self.beta2, step_t)
        step_size = self.lr / bias_correction1
        denom = (v.sqrt() / bias_correction2.sqrt()).add_(self.eps)
        params.addcdiv_(m, denom * (-1 / step_size))
