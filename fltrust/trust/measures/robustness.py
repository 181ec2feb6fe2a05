r"""Certified robustness: the CLEVER score of a PyTorch classifier, computed with ART.

FederatedTrust's ``performance/test_clever`` (paper Sec. 3.2 "Certified Robustness", Table 2;
trust spec 3.10; docs/references.md#trust-3-10) is the untargeted CLEVER score of Weng et al. (ICLR 2018,
arXiv:1801.10578): an estimate of the smallest input perturbation (in the chosen norm, up to ``radius``) that changes
the model's prediction, from extreme-value theory on sampled gradient norms of the logit margins.

For a sample :math:`x_0` with predicted class :math:`c` and each other class :math:`j`,

.. math:: \text{CLEVER}_j(x_0) = \min\left(\frac{f_c(x_0) - f_j(x_0)}{\hat L_j}, R\right),
          \qquad \text{CLEVER}(x_0) = \min_{j \ne c} \text{CLEVER}_j(x_0)

where :math:`\hat L_j` is the reverse-Weibull location fitted to ``nb_batches`` maxima of
``batch_size`` gradient norms :math:`\lVert \nabla (f_c - f_j) \rVert_q` drawn from a pool of
``pool_factor * batch_size`` points sampled uniformly in the ``norm`` ball of radius R around
:math:`x_0` (q is the dual norm). The estimate is ART's :func:`art.metrics.clever_u` (its random
draws, its Weibull fits), with the gradients of all classes' margins computed in batched passes
(:func:`_clever_u`).

Prototype (trust spec 3.10): ``clever_u(classifier, x, nb_batches=10, batch_size=5, radius=2,
norm=2, pool_factor=3)`` on a single sample (the last of one test batch), with
``clip_values=(0, 255)`` that do not match the normalised inputs. HEAD never wrote the result to the
FactSheet (bug B1; docs/references.md#trust-b1). Here the value is averaged over the given samples, the clip values are
an explicit argument (default: no clipping, as nebula), and the raw score in [0, radius] is returned;
normalising it is the scoring definitions' job (B6, docs/references.md#trust-b6).

Extended mode adds *empirical* robustness (:func:`evasion_accuracy`): the accuracy of the final
model under ART's FGSM and PGD evasion attacks, and :func:`accuracy_retention`.
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.trust.measures import memo

log = logging.getLogger("fltrust")


class RobustnessError(ValueError):
    """Invalid CLEVER input; the message names the argument and the fix."""


class BinaryLogitAsTwoClasses(nn.Module):
    """Expose a one-logit binary model as a two-class model with logits ``[0, z]``.

    ``softmax([0, z]) = [1 - sigmoid(z), sigmoid(z)]``, so the class probabilities and the
    decision ``z > 0`` of the BCE model are unchanged, and the margin between the two classes is
    ``z`` itself. CLEVER is a ratio of a margin to the Lipschitz constant of that same margin, so
    any other two-logit embedding with margin ``a * z`` (for example ``[-z, z]``) gives the same
    score; ``[0, z]`` is the simplest.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the logits ``[0, z]`` of the two classes for the wrapped model's one logit ``z``.

        Parameters
        ----------
        x : torch.Tensor
            A batch of inputs of the wrapped model.

        Returns
        -------
        torch.Tensor
            Shape ``(n, 2)``: class 0's logit 0 and class 1's logit ``z`` (the same softmax as the sigmoid of ``z``).
        """
        z = self.model(x).reshape(-1, 1)
        return torch.cat([torch.zeros_like(z), z], dim=1)


CLEVER_CHUNK_ROWS = 512
"""Most ball points whose margin gradients :func:`_clever_u` computes in one backward pass."""


def _clever_u(net: nn.Module, x0: np.ndarray, *, nb_batches: int, batch_size: int, radius: float, norm: int,
              pool_factor: int, clip_values: tuple[float, float] | None, device: torch.device) -> float:
    r"""ART's ``clever_u`` for one sample, with the margin gradients of all classes in batched passes.

    ``art.metrics.clever_u`` runs ``clever_t`` once per class j other than the predicted class c.
    Each ``clever_t`` draws a pool of ``pool_factor * batch_size`` points in the ball around
    ``x0`` (``art.utils.random_sphere``, clipped to ``clip_values``), asks its classifier for the
    gradients of :math:`f_c` and of :math:`f_j` in batches of ``pool_factor`` points (two backward
    passes and, in ART, two forward passes per batch), takes the dual norm of their difference,
    draws ``nb_batches`` batches of ``batch_size`` of these norms with ``np.random.choice``, fits a
    reverse Weibull to the batch maxima (``scipy.stats.weibull_min.fit`` with ``c_init`` 1 and
    ``scipy.optimize.fmin``, as ART) and returns :math:`\min((f_c - f_j)(x_0) / \hat L_j, R)`.

    The random draws do not depend on the gradients, so here they are made first, in ART's order
    from NumPy's global generator, and the gradients :math:`\nabla (f_c - f_j)` of every pool
    point are then one backward pass per :data:`CLEVER_CHUNK_ROWS` points (one instead of 4 (K - 1)
    ``batch_size`` passes; 61 other classes at the prototype's settings: 2 instead of 1,220). The
    fits and the score are ART's; a test checks the result against ``clever_u`` on ART's own
    ``PyTorchClassifier``.
    """
    from art.utils import random_sphere
    from scipy.optimize import fmin
    from scipy.stats import weibull_min

    pool_size = pool_factor * batch_size
    dual = np.inf if norm == 1 else 2
    with torch.no_grad():
        logits = net(torch.as_tensor(x0[None], device=device)).cpu().numpy()[0]  # float32, as ART's predict
    pred = int(np.argmax(logits))
    targets = [j for j in range(len(logits)) if j != pred]
    pools, picks = [], []
    for _ in targets:  # ART's draws, in ART's order: the pool, then the batches of norms
        pool = random_sphere(nb_points=pool_size, nb_dims=x0.size, radius=radius, norm=norm).reshape(pool_size, *x0.shape)
        pool = (pool + x0[None]).astype(np.float32)
        if clip_values is not None:
            np.clip(pool, clip_values[0], clip_values[1], out=pool)
        pools.append(pool)
        picks.append([np.random.choice(pool_size, batch_size) for _ in range(nb_batches)])
    points = np.concatenate(pools)
    target_of = np.repeat(np.asarray(targets), pool_size)
    norms = np.empty(len(points), dtype=np.float32)  # float32, as ART's: the Weibull fit is sensitive to it
    for a in range(0, len(points), CLEVER_CHUNK_ROWS):
        xb = torch.as_tensor(points[a : a + CLEVER_CHUNK_ROWS], device=device).requires_grad_(True)
        with torch.enable_grad():
            out = net(xb)
            target = torch.as_tensor(target_of[a : a + CLEVER_CHUNK_ROWS], device=device)
            margin = out[:, pred] - out.gather(1, target[:, None])[:, 0]
            (grad,) = torch.autograd.grad(margin.sum(), xb)
        norms[a : a + len(xb)] = np.linalg.norm(grad.cpu().numpy().reshape(len(xb), -1), ord=dual, axis=1)
    scores = []
    for t, (j, batches) in enumerate(zip(targets, picks)):
        pool_norms = norms[t * pool_size : (t + 1) * pool_size]
        maxima = [np.max(pool_norms[pick]) for pick in batches]
        _, loc, _ = weibull_min.fit(-np.array(maxima), 1.0, optimizer=fmin)
        value = logits[pred] - logits[j]
        scores.append(min(-value / loc, radius))
    return float(np.min(scores))


def clever_score(
    model: nn.Module,
    x_samples: np.ndarray | torch.Tensor,
    *,
    nb_classes: int,
    nb_batches: int = 10,
    batch_size: int = 5,
    radius: float = 2.0,
    norm: int = 2,
    pool_factor: int = 3,
    clip_values: tuple[float, float] | None = None,
    seed: int = 0,
) -> float:
    """Mean untargeted CLEVER score of ``model`` over ``x_samples`` (ART ``clever_u``).

    Parameters
    ----------
    model : nn.Module
        The trained classifier (class logits, or one logit for a binary model). It is copied and
        put in eval mode; the caller's model is not modified.
    x_samples : np.ndarray or torch.Tensor
        ``(n, *input_shape)`` samples to certify (the prototype used one). The score is averaged.
    nb_classes : int
        Number of classes K (2 for a one-logit binary model, which is wrapped by
        :class:`BinaryLogitAsTwoClasses`).
    nb_batches, batch_size, pool_factor : int
        ``clever_u`` sampling parameters (prototype: 10, 5, 3).
    radius : float
        Maximum perturbation R; the score is capped at R (prototype: 2).
    norm : int
        Perturbation norm, 1 or 2 (prototype: 2).
    clip_values : tuple of float or None
        Valid input range used to clip the sampled points (``None`` = no clipping).
    seed : int
        Seed of the random ball samples: the same seed gives the same score. NumPy's global random
        state (which ART uses) is restored afterwards.

    Returns
    -------
    float
        Mean CLEVER score in [0, radius]; larger = more perturbation needed = more robust.

    Raises
    ------
    RobustnessError
        If the samples are empty, ``nb_classes`` does not match the model output, or a parameter
        is out of range.
    """
    if norm not in (1, 2):
        raise RobustnessError(f"norm={norm!r} is not supported; choose 1 or 2")
    if radius <= 0:
        raise RobustnessError(f"radius={radius!r} must be > 0")
    for name, value in (("nb_batches", nb_batches), ("batch_size", batch_size), ("pool_factor", pool_factor)):
        if int(value) != value or value < 1:
            raise RobustnessError(f"{name}={value!r} must be a positive integer")
    x = x_samples.detach().cpu().numpy() if isinstance(x_samples, torch.Tensor) else np.asarray(x_samples)
    if x.ndim < 2 or len(x) == 0:
        raise RobustnessError(f"x_samples must have shape (n, *input_shape) with n >= 1, got {x.shape}")
    x = x.astype(np.float32)

    device = next(model.parameters()).device
    net, _ = as_class_logits(model, x[:1], nb_classes)

    def compute() -> float:
        state = np.random.get_state()
        np.random.seed(seed)
        try:
            scores = [_clever_u(net, sample, nb_batches=int(nb_batches), batch_size=int(batch_size),
                                radius=float(radius), norm=int(norm), pool_factor=int(pool_factor),
                                clip_values=clip_values, device=device) for sample in x]
        finally:
            np.random.set_state(state)
        return float(np.mean(scores))

    # the same model and samples are certified again by a replayed mode or the extended observer (fltrust.trust.measures.memo)
    key = memo.digest("clever", model, x, nb_classes=nb_classes, nb_batches=int(nb_batches), batch_size=int(batch_size),
                      radius=float(radius), norm=int(norm), pool_factor=int(pool_factor), clip_values=clip_values,
                      seed=seed)
    return memo.remembered(key, compute)


# -- empirical robustness: evasion attacks (extended mode) ------------------------------------------

def as_class_logits(model: nn.Module, sample: np.ndarray | torch.Tensor, nb_classes: int) -> tuple[nn.Module, int]:
    """Make an eval-mode copy of ``model`` with frozen parameters that emits K class logits, and K.

    A one-logit binary model is wrapped by :class:`BinaryLogitAsTwoClasses` (K = 2); a K-logit
    model is returned as it is (copied). ``sample`` (one or more rows) is used to read the output
    width.

    Parameters
    ----------
    model : nn.Module
        The classifier (not modified).
    sample : np.ndarray or torch.Tensor
        One or more input rows.
    nb_classes : int
        K, the number of classes.

    Returns
    -------
    (nn.Module, int)
        The copy and K.

    Raises
    ------
    RobustnessError
        When the output width does not match ``nb_classes``.
    """
    device = next(model.parameters()).device
    # parameters frozen: CLEVER, the evasion attacks and MIA differentiate with respect to the input
    # only, and ART's backward would also compute every weight gradient (ConvNet2's 3136x2048 layer's
    # is the largest single product); the input gradients are the same either way
    net = copy.deepcopy(model).eval().requires_grad_(False)
    x = torch.as_tensor(np.asarray(sample, dtype=np.float32) if not isinstance(sample, torch.Tensor) else sample,
                        device=device, dtype=torch.float32)
    with torch.no_grad():
        out = net(x[:1])
    width = 1 if out.ndim == 1 else int(out.shape[-1])
    if width == 1:
        if nb_classes != 2:
            raise RobustnessError(f"the model emits one logit (binary) but nb_classes={nb_classes}; pass 2")
        return BinaryLogitAsTwoClasses(net).eval(), 2
    if width != nb_classes:
        raise RobustnessError(f"the model emits {width} logits but nb_classes={nb_classes}")
    return net, nb_classes


def _art_classifier(model: nn.Module, x: np.ndarray, nb_classes: int,
                    clip_values: tuple[float, float] | None = None) -> tuple[Any, int]:
    """Wrap ``model`` (as class logits, :func:`as_class_logits`) in an ART ``PyTorchClassifier``; also its classes."""
    from art.estimators.classification import PyTorchClassifier

    net, classes = as_class_logits(model, x[:1], nb_classes)
    device = next(model.parameters()).device
    classifier = PyTorchClassifier(
        model=net, loss=nn.CrossEntropyLoss(), input_shape=tuple(x.shape[1:]), nb_classes=classes,
        clip_values=None if clip_values is None else (float(clip_values[0]), float(clip_values[1])),
        device_type="gpu" if device.type == "cuda" else "cpu",
    )
    return classifier, classes


@dataclass(frozen=True)
class EvasionResult:
    r"""Accuracy of a model on clean and adversarial inputs (ART FGSM and PGD).

    Attributes
    ----------
    clean_accuracy, fgsm_accuracy, pgd_accuracy : float
        Accuracy on the sample, on its FGSM and on its PGD adversarial versions.
    eps : float
        L-infinity perturbation budget.
    pgd_steps : int
        PGD iterations (step eps / 4).
    num_samples : int
    clip_values : tuple of float or None
        Valid input range the adversarial examples were clipped to.
    retention : float
        :math:`\min(1, \mathrm{acc}_{PGD} / \mathrm{acc}_{clean})`; 0 if the clean accuracy is 0.
    """

    clean_accuracy: float
    fgsm_accuracy: float
    pgd_accuracy: float
    eps: float
    pgd_steps: int
    num_samples: int
    clip_values: tuple[float, float] | None
    retention: float

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name; ``clip_values`` as a list or ``None``.
        """
        out = asdict(self)
        out["clip_values"] = None if self.clip_values is None else list(self.clip_values)
        return out


def accuracy_retention(clean_accuracy: float, attacked_accuracy: float) -> float:
    r"""Share of the clean accuracy kept under attack, :math:`\mathrm{clip}(a_{att} / a_{clean}, 0, 1)`.

    Parameters
    ----------
    clean_accuracy, attacked_accuracy : float
        In [0, 1].

    Returns
    -------
    float
        1 = the attack costs nothing; 0 = every correct prediction is lost (or the clean accuracy
        is 0, where no robustness can be shown).

    Examples
    --------
    >>> round(accuracy_retention(0.8, 0.6), 6), accuracy_retention(0.8, 0.9), accuracy_retention(0.0, 0.0)
    (0.75, 1.0, 0.0)
    """
    clean, attacked = float(clean_accuracy), float(attacked_accuracy)
    if not (math.isfinite(clean) and math.isfinite(attacked)):
        return float("nan")
    if clean <= 0.0:
        return 0.0
    return min(max(attacked / clean, 0.0), 1.0)


def evasion_accuracy(
    model: nn.Module,
    x: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    *,
    nb_classes: int,
    eps: float = 0.1,
    pgd_steps: int = 10,
    eps_step: float | None = None,
    clip_values: tuple[float, float] | None = None,
    batch_size: int = 128,
) -> EvasionResult:
    r"""Clean, FGSM and PGD accuracy of ``model`` under an L-infinity budget ``eps`` (ART).

    Empirical robustness (paper Sec. 3.2, "adversarial perturbations"): untargeted
    Fast Gradient Sign Method (Goodfellow et al., ICLR 2015, arXiv:1412.6572),
    :math:`x' = \mathrm{clip}(x + \varepsilon\,\mathrm{sign}\nabla_x \ell(f(x), y))`, and Projected
    Gradient Descent (Madry et al., ICLR 2018, arXiv:1706.06083), ``pgd_steps`` FGSM steps of size
    ``eps_step`` (default eps / 4) projected back onto the eps-ball, from the clean point (no random
    start, so the result is deterministic). Implemented by
    :class:`art.attacks.evasion.FastGradientMethod` and
    :class:`art.attacks.evasion.ProjectedGradientDescent` on a
    :class:`art.estimators.classification.PyTorchClassifier` with cross-entropy loss; a one-logit
    binary model is wrapped by :class:`BinaryLogitAsTwoClasses`. The attacks use the true labels.

    Parameters
    ----------
    model : nn.Module
        The final global model (copied; not modified).
    x, y : array-like
        Clean samples and labels.
    nb_classes : int
        K (2 for a one-logit binary model).
    eps : float
        L-infinity budget in input units (> 0).
    pgd_steps : int
        PGD iterations (>= 1).
    eps_step : float or None
        PGD step; ``None`` = eps / 4.
    clip_values : tuple of float or None
        Valid input range; ``None`` = no clipping.
    batch_size : int
        ART batch size.

    Returns
    -------
    EvasionResult
    """
    from art.attacks.evasion import FastGradientMethod, ProjectedGradientDescent

    if not eps > 0:
        raise RobustnessError(f"eps={eps!r} must be > 0")
    if int(pgd_steps) != pgd_steps or pgd_steps < 1:
        raise RobustnessError(f"pgd_steps={pgd_steps!r} must be a positive integer")
    xs = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    ys = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
    if xs.ndim < 2 or len(xs) == 0 or len(xs) != len(ys):
        raise RobustnessError(f"x must have shape (n, *input_shape) with n >= 1 rows matching y; got {xs.shape}, {ys.shape}")
    xs, ys = xs.astype(np.float32), ys.astype(np.int64)
    classifier, classes = _art_classifier(model, xs, nb_classes, clip_values)
    labels = np.eye(classes, dtype=np.float32)[ys]

    def accuracy(inputs: np.ndarray) -> float:
        return float(np.mean(classifier.predict(inputs, batch_size=batch_size).argmax(axis=1) == ys))

    fgsm = FastGradientMethod(classifier, norm=np.inf, eps=float(eps), batch_size=batch_size)
    pgd = ProjectedGradientDescent(
        classifier, norm=np.inf, eps=float(eps), eps_step=float(eps_step if eps_step is not None else eps / 4.0),
        max_iter=int(pgd_steps), num_random_init=0, batch_size=batch_size, verbose=False,
    )
    clean = accuracy(xs)
    fgsm_acc = accuracy(fgsm.generate(xs, y=labels))
    pgd_acc = accuracy(pgd.generate(xs, y=labels))
    return EvasionResult(
        clean_accuracy=clean, fgsm_accuracy=fgsm_acc, pgd_accuracy=pgd_acc, eps=float(eps),
        pgd_steps=int(pgd_steps), num_samples=len(xs),
        clip_values=None if clip_values is None else (float(clip_values[0]), float(clip_values[1])),
        retention=accuracy_retention(clean, pgd_acc),
    )
