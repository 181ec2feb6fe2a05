"""The in-process memo of CLEVER and SHAP: one computation per model, samples and settings."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fltrust.trust.measures import memo
from fltrust.trust.measures.explainability import shap_values
from fltrust.trust.measures.robustness import clever_score


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def test_digest_changes_with_one_parameter_bit_the_inputs_and_the_settings():
    model, x = _mlp(), torch.ones(2, 4)
    key = memo.digest("clever", model, x, seed=0)
    assert memo.digest("clever", model, x.clone(), seed=0) == key  # content, not identity
    assert memo.digest("clever", model, x, seed=1) != key
    assert memo.digest("shap", model, x, seed=0) != key
    assert memo.digest("clever", model, x + 1e-7, seed=0) != key
    bits = model[0].weight.data.view(torch.int32)
    bits[0, 0] ^= 1  # the lowest mantissa bit of one weight
    assert memo.digest("clever", model, x, seed=0) != key


def test_remembered_computes_once_and_hands_out_copies():
    memo.clear()
    calls = []

    def compute():
        calls.append(1)
        return np.zeros(3)

    first = memo.remembered("k", compute)
    first[0] = 5.0  # the caller's copy
    assert memo.remembered("k", compute).tolist() == [0.0, 0.0, 0.0] and len(calls) == 1
    memo.clear()
    memo.remembered("k", compute)
    assert len(calls) == 2


def test_remembered_stores_nothing_when_the_computation_fails():
    memo.clear()
    with pytest.raises(ZeroDivisionError):
        memo.remembered("bad", lambda: 1 / 0)
    assert memo.remembered("bad", lambda: 2) == 2


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_clever_and_shap_of_the_same_model_are_computed_once(monkeypatch):
    from fltrust.trust.measures import robustness

    memo.clear()
    model, other, x = _mlp(), _mlp(), torch.randn(6, 4)
    with torch.no_grad():
        other[2].bias.add_(0.5)
    real, calls = robustness._clever_u, []
    monkeypatch.setattr(robustness, "_clever_u", lambda *a, **k: calls.append(1) or real(*a, **k))

    first = clever_score(model, x[:1], nb_classes=3, nb_batches=2, batch_size=2, seed=1)
    again = clever_score(_mlp(), x[:1], nb_classes=3, nb_batches=2, batch_size=2, seed=1)  # same parameters
    clever_score(other, x[:1], nb_classes=3, nb_batches=2, batch_size=2, seed=1)  # other parameters
    assert first == again and len(calls) == 2

    values, used = shap_values(model, x[:4], x[4:], seed=0)
    same, _ = shap_values(_mlp(), x[:4], x[4:], seed=0)
    assert np.array_equal(values, same) and values is not same and used == "deep"
