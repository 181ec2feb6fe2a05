"""CLEVER through ART on tiny models (trust spec 3.10, docs/references.md#trust-3-10).

For a linear classifier the margin gradient is constant, so CLEVER equals the exact L2 distance
to the nearest decision boundary, min_j (f_c - f_j)(x) / ||w_c - w_j||, capped at the radius.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fltrust.trust.measures import memo
from fltrust.trust.measures.robustness import BinaryLogitAsTwoClasses, RobustnessError, clever_score

# A linear model has one constant gradient norm, so scipy's Weibull fit warns about identical data.
linear_fit_warning = pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")


def _identity_linear() -> torch.nn.Module:
    model = torch.nn.Linear(4, 3)
    with torch.no_grad():
        model.weight.copy_(torch.eye(3, 4))
        model.bias.zero_()
    return model


@linear_fit_warning
def test_linear_model_clever_is_the_distance_to_the_boundary() -> None:
    # Prepare: logits = x[:3]; x = (1, 0.2, 0.1, 0): class 0 wins by 0.8 over class 1,
    # ||w_0 - w_1|| = sqrt(2) -> distance 0.8 / sqrt(2) (class 2: 0.9 / sqrt(2) is farther)
    x = np.array([[1.0, 0.2, 0.1, 0.0]], dtype=np.float32)
    # Execute
    score = clever_score(_identity_linear(), x, nb_classes=3, nb_batches=5, batch_size=5, seed=0)
    # Assert
    assert score == pytest.approx(0.8 / math.sqrt(2), rel=1e-5)


@linear_fit_warning
def test_clever_is_capped_at_the_radius() -> None:
    x = np.array([[3.0, 0.0, 0.0, 0.0]], dtype=np.float32)  # distance 3 / sqrt(2) = 2.12 > radius 2
    assert clever_score(_identity_linear(), x, nb_classes=3, nb_batches=5, batch_size=5, radius=2.0) == 2.0


@linear_fit_warning
def test_binary_single_logit_model_is_wrapped_as_two_classes() -> None:
    # Prepare: z = 2 x_0, boundary x_0 = 0; at x_0 = 0.5 the distance is 0.5
    model = torch.nn.Linear(4, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[2.0, 0.0, 0.0, 0.0]]))
        model.bias.zero_()
    wrapped = BinaryLogitAsTwoClasses(model)
    x = np.array([[0.5, 0.0, 0.0, 0.0]], dtype=np.float32)
    # Execute
    score = clever_score(model, x, nb_classes=2, nb_batches=5, batch_size=5)
    # Assert
    assert wrapped(torch.as_tensor(x)).tolist() == [[0.0, 1.0]]
    assert score == pytest.approx(0.5, rel=1e-5)


def test_clever_of_a_small_mlp_is_in_range_and_deterministic_with_a_seed() -> None:
    # Prepare
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x = torch.as_tensor(np.random.default_rng(0).normal(size=(2, 4)), dtype=torch.float32)
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    # Execute
    first = clever_score(model, x, nb_classes=3, nb_batches=4, batch_size=4, seed=1)
    memo.clear()  # computed again, not remembered
    second = clever_score(model, x, nb_classes=3, nb_batches=4, batch_size=4, seed=1)
    # Assert
    assert math.isfinite(first) and 0.0 <= first <= 2.0
    assert first == second
    assert np.array_equal(np.random.get_state()[1], before)  # global NumPy RNG restored
    assert model.training  # the caller's model is untouched
    assert all(p.requires_grad for p in model.parameters())  # only the measured copy is frozen


def test_bad_arguments_are_named() -> None:
    model = _identity_linear()
    x = np.zeros((1, 4), dtype=np.float32)
    with pytest.raises(RobustnessError, match="nb_classes=5"):
        clever_score(model, x, nb_classes=5)
    with pytest.raises(RobustnessError, match="norm"):
        clever_score(model, x, nb_classes=3, norm=3)
    with pytest.raises(RobustnessError, match="x_samples"):
        clever_score(model, np.zeros((0, 4), dtype=np.float32), nb_classes=3)
    with pytest.raises(RobustnessError, match="one logit"):
        clever_score(torch.nn.Linear(4, 1), x, nb_classes=3)


@pytest.mark.parametrize(("norm", "clip_values"), [(2, None), (1, None), (2, (0.0, 0.8))])
def test_clever_equals_art_on_its_own_classifier(norm: int, clip_values: tuple[float, float] | None) -> None:
    # clever_score makes ART's random draws first and computes all margin gradients in batched
    # passes; the score must be ART's clever_u on ART's own PyTorchClassifier, same seed
    from art.estimators.classification import PyTorchClassifier
    from art.metrics import clever_u

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(32, 5))
    model.eval()
    x = np.random.default_rng(1).random((2, 1, 6, 6), dtype=np.float32)
    art = PyTorchClassifier(model=model, loss=torch.nn.CrossEntropyLoss(), input_shape=(1, 6, 6), nb_classes=5,
                            clip_values=clip_values)
    memo.clear()
    score = clever_score(model, x, nb_classes=5, nb_batches=4, batch_size=3, radius=2.0, norm=norm, pool_factor=2,
                         clip_values=clip_values, seed=5)
    np.random.seed(5)
    expected = [clever_u(art, sample, nb_batches=4, batch_size=3, radius=2.0, norm=norm, pool_factor=2, verbose=False)
                for sample in x]
    assert score == pytest.approx(float(np.mean(expected)), rel=1e-6)
    assert 0.0 < score < 2.0  # a score below the cap: the fitted Weibull locations enter it
