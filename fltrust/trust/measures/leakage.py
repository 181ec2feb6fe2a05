r"""Information-leakage risk: a membership-inference attack on the global model.

FederatedTrust's taxonomy (paper Sec. 3.1, "Information gain/loss"; trust spec 6; docs/references.md#trust-6) names
*information leakage risk* without an implementation: the prototype left it out for its compute
cost. The paper mentions H-MINE (mutual information between gradients and inputs); we measure the
leakage of the *released* model instead, with the standard black-box test of whether a trained
model reveals which records it was trained on.

Loss-threshold attack (Yeom et al., "Privacy Risk in Machine Learning: Analyzing the Connection to
Overfitting", CSF 2018, arXiv:1709.01604): the adversary scores each record by its loss under the
model, :math:`s(x, y) = -\ell(f(x), y)`, and calls it a member when the score exceeds a threshold.
Sweeping the threshold gives the ROC curve of the attack; its area is

.. math:: \mathrm{AUC} = P\big(s(x_m, y_m) > s(x_n, y_n)\big) + \tfrac12 P(\cdot = \cdot)

for a random member :math:`(x_m, y_m)` (a client's training row) and a random non-member
:math:`(x_n, y_n)` (a held-out test row), computed with :func:`sklearn.metrics.roc_auc_score` on a
balanced sample. AUC 0.5 = the losses carry no membership information; AUC 1 (or 0) = perfect
separation. The **leakage risk** is the attack's distance from guessing, on [0, 1]:

.. math:: \mathrm{risk} = 2\,\lvert \mathrm{AUC} - 0.5 \rvert

and the metric scores ``1 - risk`` (``true_score`` with direction ``desc``, extended definitions).
The absolute value counts an attack that is *reliably wrong* (AUC < 0.5) as leakage too: flipping
its decision gives an equally good attack.

Cross-check: ART's :class:`~art.attacks.inference.membership_inference.MembershipInferenceBlackBoxRuleBased`
(Nicolae et al., ART 1.x) calls a record a member when the model classifies it correctly; its
membership *advantage* is TPR - FPR = train accuracy - test accuracy on the sample (Yeom et al.,
Theorem 2 for the 0-1 loss). Reported, not scored.

Everything here is a pure function of a model and arrays; :class:`fltrust.trust.observer.TrustObserver`
draws the samples (members: every client's training rows in the layout the client trained on;
non-members: the test split).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from fltrust.core.evaluation import loss_per_sample, predict

__all__ = [
    "MembershipInferenceResult",
    "LeakageError",
    "balanced_sample",
    "leakage_risk",
    "loss_threshold_attack",
    "membership_inference",
    "per_sample_losses",
    "rule_based_advantage",
]


class LeakageError(ValueError):
    """Invalid membership-inference input; the message names the argument and the fix."""


@dataclass(frozen=True)
class MembershipInferenceResult:
    """Outcome of a membership-inference test.

    Attributes
    ----------
    auc : float
        ROC AUC of the loss-threshold attack (0.5 = no leakage).
    risk : float
        ``2 |auc - 0.5|`` in [0, 1].
    num_members, num_nonmembers : int
        Sample sizes (equal: the sample is balanced).
    member_loss, nonmember_loss : float
        Mean per-sample loss of each side.
    rule_based_advantage : float or None
        TPR - FPR of the correct-classification attack (ART rule-based), or ``None`` if not run.
    rule_based_accuracy : float or None
        Its attack accuracy on the balanced sample (0.5 = guessing).
    """

    auc: float
    risk: float
    num_members: int
    num_nonmembers: int
    member_loss: float
    nonmember_loss: float
    rule_based_advantage: float | None = None
    rule_based_accuracy: float | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name (:func:`dataclasses.asdict`).
        """
        return asdict(self)


def leakage_risk(auc: float) -> float:
    r"""Membership-inference risk from an attack AUC: :math:`2\,|\mathrm{AUC} - 0.5|`.

    Parameters
    ----------
    auc : float
        In [0, 1].

    Returns
    -------
    float
        In [0, 1]; 0 = the attack does no better than guessing.

    Examples
    --------
    >>> leakage_risk(0.5), leakage_risk(0.75), leakage_risk(0.25)
    (0.0, 0.5, 0.5)
    """
    auc = float(auc)
    if not 0.0 <= auc <= 1.0:
        raise LeakageError(f"auc={auc!r} must lie in [0, 1]")
    return 2.0 * abs(auc - 0.5)


def loss_threshold_attack(member_losses: np.ndarray, nonmember_losses: np.ndarray) -> tuple[float, float]:
    """AUC and risk of the loss-threshold attack (Yeom et al. 2018) from per-sample losses.

    Parameters
    ----------
    member_losses, nonmember_losses : array-like of float
        Per-sample losses of training rows (members) and held-out rows (non-members); both
        non-empty and finite.

    Returns
    -------
    auc, risk : float
        ``roc_auc_score(is_member, -loss)`` and :func:`leakage_risk` of it.

    Examples
    --------
    Members with lower losses than every non-member are perfectly separated:

    >>> loss_threshold_attack([0.1, 0.2], [0.5, 0.9])
    (1.0, 1.0)
    """
    from sklearn.metrics import roc_auc_score

    members = np.asarray(member_losses, dtype=float).ravel()
    others = np.asarray(nonmember_losses, dtype=float).ravel()
    if members.size == 0 or others.size == 0:
        raise LeakageError("membership inference needs at least one member and one non-member loss")
    if not (np.all(np.isfinite(members)) and np.all(np.isfinite(others))):
        raise LeakageError("per-sample losses must be finite (the model diverged?)")
    labels = np.concatenate([np.ones(members.size), np.zeros(others.size)])
    scores = -np.concatenate([members, others])
    auc = float(roc_auc_score(labels, scores))
    return auc, leakage_risk(auc)


def rule_based_advantage(member_correct: np.ndarray, nonmember_correct: np.ndarray) -> tuple[float, float]:
    """Advantage (TPR - FPR) and accuracy of the "member iff correctly classified" attack.

    Parameters
    ----------
    member_correct, nonmember_correct : array-like of bool
        Whether the model classifies each member / non-member correctly (the attack's guesses).

    Returns
    -------
    advantage, accuracy : float
        ``mean(member_correct) - mean(nonmember_correct)`` and the balanced attack accuracy
        ``(TPR + 1 - FPR) / 2``.

    Examples
    --------
    >>> rule_based_advantage([True, True, True, False], [True, False, False, False])
    (0.5, 0.75)
    """
    tpr = float(np.mean(np.asarray(member_correct, dtype=bool)))
    fpr = float(np.mean(np.asarray(nonmember_correct, dtype=bool)))
    return tpr - fpr, (tpr + 1.0 - fpr) / 2.0


def balanced_sample(num_members: int, num_nonmembers: int, num_samples: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw the indices of a balanced member / non-member sample of size ``min(num_samples, both sides)`` each.

    Parameters
    ----------
    num_members, num_nonmembers : int
        Available rows on each side.
    num_samples : int
        Wanted rows per side.
    seed : int
        Seed of the draw (without replacement).

    Returns
    -------
    member_index, nonmember_index : np.ndarray
        Sorted int64 indices, equally long.
    """
    n = min(int(num_samples), int(num_members), int(num_nonmembers))
    if n < 1:
        raise LeakageError(
            f"cannot draw a balanced sample: {num_members} members, {num_nonmembers} non-members, "
            f"num_samples={num_samples}"
        )
    rng = np.random.default_rng([int(seed), 31])
    members = np.sort(rng.choice(num_members, size=n, replace=False)).astype(np.int64)
    others = np.sort(rng.choice(num_nonmembers, size=n, replace=False)).astype(np.int64)
    return members, others


@torch.no_grad()
def per_sample_losses(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *,
                      batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample training loss (BCE or cross-entropy, as the model was trained) and correctness.

    Parameters
    ----------
    model : nn.Module
        Evaluated in eval mode (its mode is restored).
    x, y : torch.Tensor
        Rows and labels on the model's device.
    batch_size : int
        Evaluation batch size.

    Returns
    -------
    losses : np.ndarray of float
    correct : np.ndarray of bool
    """
    was_training = model.training
    model.eval()
    losses, correct = [], []
    for start in range(0, len(y), batch_size):
        xb, yb = x[start : start + batch_size], y[start : start + batch_size]
        logits = model(xb)
        losses.append(loss_per_sample(logits, yb).double().cpu().numpy())
        correct.append((predict(logits) == yb).cpu().numpy())
    model.train(was_training)
    if not losses:
        return np.zeros(0), np.zeros(0, dtype=bool)
    return np.concatenate(losses), np.concatenate(correct)


def _art_rule_based(model: nn.Module, x: np.ndarray, y: np.ndarray, nb_classes: int) -> np.ndarray:
    """Membership guesses of ART's ``MembershipInferenceBlackBoxRuleBased`` (1 = member)."""
    from art.attacks.inference.membership_inference import MembershipInferenceBlackBoxRuleBased

    from fltrust.trust.measures.robustness import _art_classifier

    classifier, classes = _art_classifier(model, x, nb_classes)
    attack = MembershipInferenceBlackBoxRuleBased(classifier)
    # one-hot labels of width K: ART one-hots integer labels with len(np.unique(y)) classes, which
    # fails (IndexError) when the sample does not contain every class
    one_hot = np.eye(classes, dtype=np.float32)[np.asarray(y, dtype=np.int64)]
    return np.asarray(attack.infer(x.astype(np.float32), one_hot)).ravel()


def membership_inference(
    model: nn.Module,
    x_members: torch.Tensor,
    y_members: torch.Tensor,
    x_nonmembers: torch.Tensor,
    y_nonmembers: torch.Tensor,
    *,
    num_samples: int = 200,
    seed: int = 0,
    nb_classes: int | None = None,
    use_art: bool = True,
    batch_size: int = 256,
) -> MembershipInferenceResult:
    """Loss-threshold membership inference on a balanced sample (module docstring).

    Parameters
    ----------
    model : nn.Module
        The final global model (not modified).
    x_members, y_members : torch.Tensor
        Rows the model was trained on (clients' training rows).
    x_nonmembers, y_nonmembers : torch.Tensor
        Rows it never saw (the test split).
    num_samples : int
        Rows drawn per side (fewer if a side is smaller).
    seed : int
        Seed of the draw.
    nb_classes : int or None
        Number of classes; needed only for the ART cross-check (``None`` skips it).
    use_art : bool
        Also run ART's rule-based attack and check it against our computation of the same rule.
    batch_size : int
        Evaluation batch size.

    Returns
    -------
    MembershipInferenceResult
    """
    if len(x_members) != len(y_members) or len(x_nonmembers) != len(y_nonmembers):
        raise LeakageError("x and y of each side must have the same number of rows")
    mi, ni = balanced_sample(len(y_members), len(y_nonmembers), num_samples, seed=seed)
    device = x_members.device
    xm, ym = x_members[torch.as_tensor(mi, device=device)], y_members[torch.as_tensor(mi, device=device)]
    dn = x_nonmembers.device
    xn, yn = x_nonmembers[torch.as_tensor(ni, device=dn)], y_nonmembers[torch.as_tensor(ni, device=dn)]
    member_losses, member_correct = per_sample_losses(model, xm, ym, batch_size=batch_size)
    other_losses, other_correct = per_sample_losses(model, xn, yn, batch_size=batch_size)
    auc, risk = loss_threshold_attack(member_losses, other_losses)
    advantage = accuracy = None
    if use_art and nb_classes is not None:
        x_all = torch.cat([xm.cpu(), xn.cpu()]).numpy()
        y_all = torch.cat([ym.cpu(), yn.cpu()]).numpy()
        guesses = _art_rule_based(model, x_all, y_all, nb_classes)
        n = len(mi)
        advantage, accuracy = rule_based_advantage(guesses[:n] == 1, guesses[n:] == 1)
    elif use_art:
        advantage, accuracy = rule_based_advantage(member_correct, other_correct)
    return MembershipInferenceResult(
        auc=auc, risk=risk, num_members=len(mi), num_nonmembers=len(ni),
        member_loss=float(member_losses.mean()), nonmember_loss=float(other_losses.mean()),
        rule_based_advantage=advantage, rule_based_accuracy=accuracy,
    )
