r"""Post-hoc explainability: the SHAP feature-importance variation of FederatedTrust.

``performance/test_feature_importance_cv`` (paper Sec. 3.4 "Feature Importance", Table 2: "average
variance of feature importance scores", post-training, server; trust spec 3.11; docs/references.md#trust-3-11) is a
coefficient of variation of SHAP values (Lundberg and Lee, NeurIPS 2017). Two definitions are available
(:data:`FEATURE_IMPORTANCE_METHODS`):

``"class_sums"`` (prototype)
    One test batch of B samples; background = the first ``floor(0.8 B)``, explained = the rest.
    For every model output c, :math:`S_c` = the sum of all SHAP values of output c over the
    explained samples and all input features, and

    .. math:: FI_{cv} = \frac{\sigma(|S|)}{\mu(|S|)} \quad \text{(population std, uncapped)}

    (``scipy.stats.variation``; the FederatedScope fork behind the paper's experiments and nebula
    cap it at 1, HEAD does not). By DeepSHAP additivity :math:`S_c = \sum_x (f_c(x) - E_{bg} f_c)`,
    so this measures how the output margins differ across classes, not across features (bug B10;
    docs/references.md#trust-b10). A one-logit binary model has a single output and the value is always 0.

``"feature_mean_abs"`` (B10 fix, the paper's wording)
    The usual SHAP global importance :math:`I_f = \text{mean}_{x, c} |\phi_{f,c}(x)|` of every
    input feature f (every pixel for images), averaged over the explained samples and outputs, and

    .. math:: FI_{cv} = \min\left(\frac{\sigma(I)}{\mu(I)}, 1\right)

    across features. Higher = importance concentrated on fewer features (direction asc in the
    scoring, as the prototype).

Explainer: ``shap.DeepExplainer`` as in the prototype. When it fails on a model (an unsupported
layer, or its additivity check fails because the model uses functional ops such as
``torch.relu`` that DeepLIFT cannot see, or applies one pooling module twice, as
:class:`fltrust.models.CifarCNN` does; :class:`fltrust.models.ConvNet2` gives every activation and
pooling its own module, so the trust experiments get DeepExplainer) the
``shap.GradientExplainer`` (expected gradients) with the same background is used instead and one
info line says so (a supported fallback, not a failure). shap >= 0.45 returns one array with a
trailing output axis instead of a list of per-class arrays; :func:`shap_values` accepts both and
always returns the trailing-axis layout.
"""

from __future__ import annotations

import copy
import logging
import math

import numpy as np
import torch
from torch import nn

from fltrust.trust.measures import memo
from fltrust.trust.measures.statistics import coefficient_of_variation

log = logging.getLogger("fltrust")

FEATURE_IMPORTANCE_METHODS = ("class_sums", "feature_mean_abs")
EXPLAINERS = ("auto", "deep", "gradient")


class ExplainabilityError(ValueError):
    """Invalid SHAP input; the message names the argument and the fix."""


class _TwoDimOutput(nn.Module):
    """Reshape a model's 1-d output ``(n,)`` to ``(n, 1)``, as SHAP's torch explainers require."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x).reshape(len(x), -1)


def _normalise_layout(values: np.ndarray | list, explained_shape: tuple[int, ...]) -> np.ndarray:
    """SHAP output as ``(n_explained, *input_shape, n_outputs)`` for old and new shap APIs."""
    if isinstance(values, list):  # shap < 0.45: one array per output
        arr = np.stack([np.asarray(v) for v in values], axis=-1)
    else:
        arr = np.asarray(values)
    if arr.shape == tuple(explained_shape):  # single output without an output axis
        arr = arr[..., None]
    if arr.shape[:-1] != tuple(explained_shape):
        raise ExplainabilityError(f"unexpected SHAP value shape {arr.shape} for inputs of shape {explained_shape}")
    return arr


def shap_values(
    model: nn.Module,
    background: torch.Tensor,
    explained: torch.Tensor,
    *,
    explainer: str = "auto",
    seed: int = 0,
    nsamples: int = 200,
) -> tuple[np.ndarray, str]:
    """SHAP values of ``model`` on ``explained`` against ``background``.

    Parameters
    ----------
    model : nn.Module
        The trained model; a copy in eval mode is explained (the caller's model is untouched).
    background, explained : torch.Tensor
        ``(b, *input_shape)`` background and ``(n, *input_shape)`` explained samples, on the
        model's device.
    explainer : str
        ``"deep"`` (DeepExplainer, the prototype's), ``"gradient"`` (GradientExplainer) or
        ``"auto"`` (Deep, falling back to Gradient when Deep fails).
    seed : int
        Seed of GradientExplainer's sampling (DeepExplainer is deterministic).
    nsamples : int
        GradientExplainer's samples per explained input (SHAP's default 200; its cost is
        proportional to it times the number of outputs).

    Returns
    -------
    values : np.ndarray
        ``(n, *input_shape, n_outputs)`` SHAP values.
    used : str
        ``"deep"`` or ``"gradient"``.
    """
    if explainer not in EXPLAINERS:
        raise ExplainabilityError(f"explainer={explainer!r} is not known; choose one of {list(EXPLAINERS)}")
    if len(background) == 0 or len(explained) == 0:
        raise ExplainabilityError(
            f"need at least one background and one explained sample (got {len(background)} and {len(explained)})"
        )
    # the same model and samples are explained again by a replayed mode or the extended observer (fltrust.trust.measures.memo)
    key = memo.digest("shap", model, background, explained, explainer=explainer, seed=seed, nsamples=nsamples)
    return memo.remembered(key, lambda: _shap_values(model, background, explained, explainer, seed, nsamples))


def _shap_values(model: nn.Module, background: torch.Tensor, explained: torch.Tensor, explainer: str, seed: int,
                 nsamples: int) -> tuple[np.ndarray, str]:
    import shap

    shape = tuple(explained.shape)
    if explainer in ("auto", "deep"):
        try:
            net = _TwoDimOutput(copy.deepcopy(model)).eval()
            values = shap.DeepExplainer(net, background).shap_values(explained)
            return _normalise_layout(values, shape), "deep"
        except Exception as exc:  # shap raises assorted errors on unsupported models
            if explainer == "deep":
                raise
            reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
            log.info("SHAP: DeepExplainer cannot take this model (%s: %s; e.g. a module applied twice or a "
                     "functional activation), so GradientExplainer (expected gradients) explains it",
                     type(exc).__name__, reason)
    # a fresh copy: a failed DeepExplainer leaves its backward hooks on the modules it patched
    net = _TwoDimOutput(copy.deepcopy(model)).eval()
    values = shap.GradientExplainer(net, background).shap_values(explained, nsamples=nsamples, rseed=seed)
    return _normalise_layout(values, shape), "gradient"


def class_sum_cv(values: np.ndarray, *, cap: bool = False) -> float:
    r"""Compute the prototype's FI CV: variation across outputs of the absolute summed SHAP values.

    .. math:: S_c = \sum_{x, f} \phi_{f,c}(x), \qquad FI_{cv} = \sigma(|S|) / \mu(|S|)

    (population std, as ``scipy.stats.variation``; trust spec 3.11).

    Parameters
    ----------
    values : np.ndarray
        ``(n, *input_shape, n_outputs)`` SHAP values (:func:`shap_values`).
    cap : bool
        Cap at 1. HEAD does not (default); the FederatedScope fork that produced the paper's
        experiments and nebula do.

    Returns
    -------
    float
        The CV (0 for a single output), or NaN when every :math:`S_c` is 0.
    """
    arr = np.asarray(values, dtype=float)
    sums = arr.reshape(-1, arr.shape[-1]).sum(axis=0)
    return coefficient_of_variation(np.abs(sums), cap=cap)


def feature_mean_abs_cv(values: np.ndarray, *, cap: bool = True) -> float:
    r"""FI CV across input features of the mean absolute SHAP value (B10 fix).

    .. math:: I_f = \frac{1}{n\,m} \sum_{x} \sum_{c=1}^{m} |\phi_{f,c}(x)|, \qquad
              FI_{cv} = \min(\sigma(I) / \mu(I), 1)

    Parameters
    ----------
    values : np.ndarray
        ``(n, *input_shape, n_outputs)`` SHAP values (:func:`shap_values`).
    cap : bool
        Cap at 1 (default, B10/B11; docs/references.md#trust-b11).

    Returns
    -------
    float
        The CV in [0, 1] (0 = every feature equally important), or NaN when all SHAP values are 0.
    """
    arr = np.abs(np.asarray(values, dtype=float))
    per_feature = np.moveaxis(arr, -1, 1).reshape(arr.shape[0], arr.shape[-1], -1).mean(axis=(0, 1))
    return coefficient_of_variation(per_feature, cap=cap)


def feature_importance_cv(
    model: nn.Module,
    x: torch.Tensor,
    *,
    method: str = "class_sums",
    n_background: int | None = None,
    explainer: str = "auto",
    seed: int = 0,
    cap: bool | None = None,
    nsamples: int = 200,
) -> float:
    """``performance/test_feature_importance_cv`` of ``model`` on one batch ``x`` (trust spec 3.11).

    Parameters
    ----------
    model : nn.Module
        The trained model.
    x : torch.Tensor
        ``(B, *input_shape)`` test samples on the model's device. The first ``n_background`` are
        the SHAP background, the rest are explained.
    method : str
        One of :data:`FEATURE_IMPORTANCE_METHODS` (see the module docstring).
    n_background : int or None
        Background size; ``None`` = ``floor(0.8 B)`` as the prototype.
    explainer : str
        See :func:`shap_values`.
    seed, nsamples : int
        See :func:`shap_values`.
    cap : bool or None
        Cap the CV at 1; ``None`` = the method's default (``"class_sums"``: no, as HEAD;
        ``"feature_mean_abs"``: yes).

    Returns
    -------
    float
        The CV (>= 0; in [0, 1] when capped).
    """
    if method not in FEATURE_IMPORTANCE_METHODS:
        raise ExplainabilityError(
            f"feature importance method={method!r} is not known; choose one of {list(FEATURE_IMPORTANCE_METHODS)}"
        )
    m = math.floor(0.8 * len(x)) if n_background is None else int(n_background)
    if not 1 <= m < len(x):
        raise ExplainabilityError(
            f"n_background={m} leaves no background or no explained sample in a batch of {len(x)}; "
            "pass at least 2 samples and 1 <= n_background < len(x)"
        )
    values, used = shap_values(model, x[:m], x[m:], explainer=explainer, seed=seed, nsamples=nsamples)
    log.debug("feature importance: %s explainer, %d background, %d explained", used, m, len(x) - m)
    if method == "class_sums":
        return class_sum_cv(values, cap=bool(cap))
    return feature_mean_abs_cv(values, cap=True if cap is None else cap)
