"""SHAP feature-importance CV (docs/references.md#trust-3-11, #trust-b10) on models whose SHAP values are known.

For a linear model f(x) = W x + b the SHAP value of feature k for output c is exactly
W[c, k] * (x_k - mean_background(x_k)), and DeepExplainer returns it.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch
from torch import nn

from fltrust.trust.measures import memo
from fltrust.trust.measures.explainability import (
    ExplainabilityError,
    _normalise_layout,
    class_sum_cv,
    feature_importance_cv,
    feature_mean_abs_cv,
    shap_values,
)

# Background with mean 0, so SHAP values are W[c, k] * x_k.
BACKGROUND = torch.tensor([[1.0, 1, 1], [-1, -1, -1], [1, -1, 1], [-1, 1, -1]])


def _linear(weight: list[list[float]]) -> nn.Module:
    w = torch.tensor(weight)
    model = nn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        model.weight.copy_(w)
        model.bias.zero_()
    return model


def test_deep_explainer_gives_the_linear_shap_values() -> None:
    # Prepare
    model = _linear([[1, 2, 0], [0, 0, 3]])
    x = torch.tensor([[1.0, 1.0, 2.0]])
    # Execute
    values, used = shap_values(model, BACKGROUND, x)
    # Assert: shape (n, features, outputs)
    assert used == "deep"
    assert values.shape == (1, 3, 2)
    assert values[0, :, 0] == pytest.approx([1, 2, 0], abs=1e-6)
    assert values[0, :, 1] == pytest.approx([0, 0, 6], abs=1e-6)


def test_prototype_class_sum_cv_by_hand() -> None:
    # S = [1 + 2 + 0, 0 + 0 + 6] = [3, 6]: mean 4.5, population std 1.5 -> CV 1/3
    model = _linear([[1, 2, 0], [0, 0, 3]])
    x = torch.cat([BACKGROUND, torch.tensor([[1.0, 1.0, 2.0]])])  # floor(0.8 * 5) = 4 background
    assert feature_importance_cv(model, x, method="class_sums") == pytest.approx(1 / 3, rel=1e-5)


def test_fixed_feature_mean_abs_cv_by_hand() -> None:
    # I = mean over the 2 outputs of |phi|: [(1+0)/2, (2+0)/2, (0+6)/2] = [0.5, 1, 3]
    # mean 1.5, variance (1 + 0.25 + 2.25) / 3 = 7/6 -> CV sqrt(7/6) / 1.5 = 0.7201
    model = _linear([[1, 2, 0], [0, 0, 3]])
    x = torch.cat([BACKGROUND, torch.tensor([[1.0, 1.0, 2.0]])])
    value = feature_importance_cv(model, x, method="feature_mean_abs")
    assert value == pytest.approx(math.sqrt(7 / 6) / 1.5, rel=1e-5)


def test_fixed_cv_is_capped_at_one_and_prototype_is_not() -> None:
    # Prepare: one important feature out of six -> CV sqrt(5) = 2.236 across features
    values = np.zeros((2, 6, 1))
    values[:, 0, 0] = [1.0, -1.0]
    # Execute / Assert
    assert feature_mean_abs_cv(values, cap=False) == pytest.approx(math.sqrt(5))
    assert feature_mean_abs_cv(values) == 1.0
    # class sums over 3 outputs [6, 0, 0] -> CV sqrt(2) > 1, kept uncapped as in HEAD
    sums = np.zeros((1, 2, 3))
    sums[0, :, 0] = 3.0
    assert class_sum_cv(sums) == pytest.approx(math.sqrt(2))
    assert class_sum_cv(sums, cap=True) == 1.0


def test_single_logit_model_has_one_output_and_zero_class_cv() -> None:
    model = _linear([[1, 2, 3]])
    x = torch.cat([BACKGROUND, torch.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, 1.0]])])
    values, _ = shap_values(model, x[:4], x[4:])
    assert values.shape == (2, 3, 1)
    assert feature_importance_cv(model, x, n_background=4) == 0.0
    assert 0.0 <= feature_importance_cv(model, x, n_background=4, method="feature_mean_abs") <= 1.0


class _ReusedPool(nn.Module):
    """A CNN that applies one pooling module twice, which DeepExplainer cannot handle."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(2 * 2 * 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.pool(torch.relu(self.conv(x)))), 1))


def test_gradient_explainer_fallback_when_deep_explainer_fails(caplog) -> None:
    # Prepare
    torch.manual_seed(0)
    model = _ReusedPool()
    x = torch.randn(10, 1, 8, 8)
    caplog.set_level(logging.INFO, logger="fltrust")
    memo.clear()
    # Execute
    values, used = shap_values(model, x[:8], x[8:], seed=3)
    # Assert: one info line, no warning (a supported fallback, e.g. Flower's quickstart Net reuses its pooling)
    said = [r for r in caplog.records if r.name.startswith("fltrust")]
    assert [r.levelno for r in said] == [logging.INFO]
    assert said[0].getMessage().startswith("SHAP: DeepExplainer cannot take this model (")
    assert said[0].getMessage().endswith("so GradientExplainer (expected gradients) explains it")
    memo.clear()  # computed again, not remembered
    again, _ = shap_values(model, x[:8], x[8:], seed=3)
    # Assert
    assert used == "gradient"
    assert values.shape == (2, 1, 8, 8, 3)
    assert np.array_equal(values, again)  # seeded
    assert math.isfinite(feature_importance_cv(model, x))
    with pytest.raises(Exception):  # noqa: B017 - shap raises assorted errors; an explicit "deep" must not fall back
        shap_values(model, x[:8], x[8:], explainer="deep")


def test_old_list_layout_is_stacked_on_a_trailing_axis() -> None:
    per_class = [np.full((2, 3), 1.0), np.full((2, 3), 2.0)]
    arr = _normalise_layout(per_class, (2, 3))
    assert arr.shape == (2, 3, 2) and arr[0, 0].tolist() == [1.0, 2.0]
    assert _normalise_layout(np.ones((2, 3)), (2, 3)).shape == (2, 3, 1)


def test_bad_arguments_are_named() -> None:
    model = _linear([[1, 2, 0]])
    with pytest.raises(ExplainabilityError, match="method"):
        feature_importance_cv(model, BACKGROUND, method="lime")
    with pytest.raises(ExplainabilityError, match="n_background"):
        feature_importance_cv(model, BACKGROUND[:1])
    with pytest.raises(ExplainabilityError, match="explainer"):
        shap_values(model, BACKGROUND, BACKGROUND, explainer="kernel")


def test_deep_explainer_runs_on_convnet2_and_its_class_sums_are_the_output_margins() -> None:
    # ConvNet2 (the trust experiments' model) gives every activation and pooling use its own module,
    # so the prototype's DeepExplainer runs on it; DeepSHAP additivity then fixes the class sums:
    # S_c = sum over explained x of (f_c(x) - mean over the background of f_c)
    from fltrust.models import build_model

    torch.manual_seed(0)
    model = build_model("convnet2", (1, 28, 28), 62).eval()
    x = torch.rand(10, 1, 28, 28)
    values, used = shap_values(model, x[:8], x[8:])
    assert used == "deep"
    assert values.shape == (2, 1, 28, 28, 62)
    with torch.no_grad():
        out = model(x)
    margins = (out[8:] - out[:8].mean(0)).sum(0).numpy()
    assert values.reshape(-1, 62).sum(0) == pytest.approx(margins, abs=1e-4)
