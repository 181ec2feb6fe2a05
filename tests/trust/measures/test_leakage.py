"""Information-leakage risk: loss-threshold membership inference (fltrust.trust.measures.leakage)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from fltrust.trust.measures.leakage import (
    LeakageError,
    balanced_sample,
    leakage_risk,
    loss_threshold_attack,
    membership_inference,
    rule_based_advantage,
)


def test_risk_is_twice_the_distance_of_the_auc_from_guessing():
    assert leakage_risk(0.5) == 0.0
    assert leakage_risk(1.0) == 1.0
    assert leakage_risk(0.0) == 1.0  # a reliably wrong attack, flipped, is perfect
    assert leakage_risk(0.8) == pytest.approx(0.6)
    with pytest.raises(LeakageError, match="auc"):
        leakage_risk(1.2)


def test_loss_threshold_auc_by_hand():
    # Prepare: member losses [0.1, 0.4], non-member losses [0.2, 0.5]
    # pairs (member, non-member) where the member has the LOWER loss: (0.1, 0.2), (0.1, 0.5), (0.4, 0.5)
    # -> 3 of 4 -> AUC 0.75, risk 0.5
    auc, risk = loss_threshold_attack([0.1, 0.4], [0.2, 0.5])
    assert auc == pytest.approx(0.75)
    assert risk == pytest.approx(0.5)
    # identical distributions -> no information
    assert loss_threshold_attack([0.3, 0.3], [0.3, 0.3]) == (0.5, 0.0)


def test_loss_threshold_rejects_bad_input():
    with pytest.raises(LeakageError, match="at least one"):
        loss_threshold_attack([], [0.1])
    with pytest.raises(LeakageError, match="finite"):
        loss_threshold_attack([np.nan], [0.1])


def test_rule_based_advantage_by_hand():
    # TPR = 3/4 (members classified correctly), FPR = 1/4 -> advantage 0.5, accuracy (0.75 + 0.75)/2
    advantage, accuracy = rule_based_advantage([1, 1, 1, 0], [1, 0, 0, 0])
    assert advantage == pytest.approx(0.5)
    assert accuracy == pytest.approx(0.75)


def test_balanced_sample_is_seeded_balanced_and_bounded():
    a = balanced_sample(100, 7, 50, seed=3)
    b = balanced_sample(100, 7, 50, seed=3)
    assert len(a[0]) == len(a[1]) == 7
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert len(np.unique(a[0])) == 7 and a[0].max() < 100 and a[1].max() < 7
    with pytest.raises(LeakageError, match="balanced"):
        balanced_sample(0, 5, 5, seed=0)


def _memorising_model() -> tuple[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A 2-class linear model that fits random members (random labels) and guesses on the rest."""
    torch.manual_seed(0)
    x_m, x_n = torch.randn(40, 60), torch.randn(40, 60)
    y_m, y_n = torch.randint(0, 2, (40,)), torch.randint(0, 2, (40,))
    model = nn.Linear(60, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x_m), y_m).backward()
        opt.step()
    return model, x_m, y_m, x_n, y_n


def test_membership_inference_detects_a_memorising_model_and_art_agrees():
    # Prepare: 60 features, 40 random-label members -> memorised, held-out rows at chance
    model, x_m, y_m, x_n, y_n = _memorising_model()
    # Execute: with ART's rule-based attack (nb_classes given) and with our own rule
    art = membership_inference(model, x_m, y_m, x_n, y_n, num_samples=40, seed=1, nb_classes=2)
    ours = membership_inference(model, x_m, y_m, x_n, y_n, num_samples=40, seed=1, nb_classes=None)
    # Assert: the losses separate members from non-members almost perfectly
    assert art.auc > 0.8 and art.risk > 0.6
    assert art.num_members == art.num_nonmembers == 40
    assert art.member_loss < art.nonmember_loss
    # ART's rule-based attack ("member iff correctly classified") = our TPR - FPR
    assert art.rule_based_advantage == pytest.approx(ours.rule_based_advantage)
    assert art.rule_based_advantage > 0.3


def test_membership_inference_of_an_untrained_model_is_near_guessing():
    torch.manual_seed(1)
    model = nn.Linear(10, 2)
    x = torch.randn(400, 10)
    y = torch.randint(0, 2, (400,))
    result = membership_inference(model, x[:200], y[:200], x[200:], y[200:], num_samples=200, seed=0, use_art=False)
    assert result.risk < 0.2
    assert result.rule_based_advantage is None


def test_art_cross_check_when_the_sample_lacks_some_classes():
    # Prepare: 5 classes, but the labels of the sample use only classes 0 and 4 (ART used to one-hot them
    # with len(unique) = 2 columns and fail with an IndexError)
    torch.manual_seed(2)
    model = nn.Linear(6, 5)
    x = torch.randn(40, 6)
    y = torch.where(torch.rand(40) < 0.5, 0, 4)
    # Execute
    art = membership_inference(model, x[:20], y[:20], x[20:], y[20:], num_samples=20, seed=0, nb_classes=5)
    ours = membership_inference(model, x[:20], y[:20], x[20:], y[20:], num_samples=20, seed=0, nb_classes=None)
    # Assert: ART's rule ("member iff correctly classified") equals ours
    assert art.rule_based_advantage == pytest.approx(ours.rule_based_advantage)
