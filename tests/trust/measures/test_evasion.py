"""Empirical robustness: ART FGSM / PGD accuracy of the final model (fltrust.trust.measures.robustness)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fltrust.trust.measures.robustness import RobustnessError, accuracy_retention, evasion_accuracy


def _linear_binary() -> nn.Module:
    """One logit z = x0 - x1 (a BCE model, as the NSL-KDD MLP emits)."""
    model = nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -1.0]]))
        model.bias.zero_()
    return model


# margins |z| = 0.5, 0.05, 0.5, 0.05; labels agree with sign(z): clean accuracy 1
X = np.array([[0.5, 0.0], [0.05, 0.0], [-0.5, 0.0], [0.0, 0.05]], dtype=np.float32)
Y = np.array([1, 1, 0, 0])


def test_accuracy_retention_by_hand():
    assert accuracy_retention(0.8, 0.6) == pytest.approx(0.75)
    assert accuracy_retention(0.8, 0.9) == 1.0
    assert accuracy_retention(0.0, 0.0) == 0.0


def test_fgsm_and_pgd_on_a_linear_model_by_hand():
    # An L-inf step of eps against the label moves z by eps * ||w||_1 = 0.2 toward the boundary:
    # margins 0.5 survive (0.3), margins 0.05 flip (-0.15) -> adversarial accuracy 2/4.
    # PGD (10 steps of eps/4, projected) ends at the same corner of the eps-box.
    result = evasion_accuracy(_linear_binary(), X, Y, nb_classes=2, eps=0.1, pgd_steps=10)
    assert result.clean_accuracy == 1.0
    assert result.fgsm_accuracy == pytest.approx(0.5)
    assert result.pgd_accuracy == pytest.approx(0.5)
    assert result.retention == pytest.approx(0.5)
    assert result.num_samples == 4 and result.eps == 0.1


def test_a_tiny_budget_changes_nothing_and_the_model_is_not_modified():
    model = _linear_binary()
    before = [p.detach().clone() for p in model.parameters()]
    result = evasion_accuracy(model, X, Y, nb_classes=2, eps=0.01, pgd_steps=3, clip_values=(-1.0, 1.0))
    assert result.fgsm_accuracy == result.pgd_accuracy == result.clean_accuracy == 1.0
    assert result.retention == 1.0
    assert result.to_dict()["clip_values"] == [-1.0, 1.0]
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_multiclass_models_and_errors():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3))
    x = torch.randn(6, 4)
    y = model(x).argmax(1)
    result = evasion_accuracy(model, x, y, nb_classes=3, eps=0.05, pgd_steps=2)
    assert result.clean_accuracy == 1.0
    assert 0.0 <= result.pgd_accuracy <= result.clean_accuracy
    with pytest.raises(RobustnessError, match="logits"):
        evasion_accuracy(model, x, y, nb_classes=2)
    with pytest.raises(RobustnessError, match="eps"):
        evasion_accuracy(model, x, y, nb_classes=3, eps=0.0)
