"""Client reputation and data quality (fltrust.trust.measures.reputation), and label-noise detection in a real run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from fltrust.trust.measures.reputation import (
    ContributionRound,
    ReputationError,
    beta_reputation,
    client_reputation,
    data_quality,
    fedsv_consistency,
    peer_median,
    reference_interactions,
)


def test_peer_median_leaves_the_client_out():
    assert peer_median([1.0, 2.0, 4.0]).tolist() == [3.0, 2.5, 1.5]
    assert np.isnan(peer_median([5.0])[0])


def test_data_quality_by_hand():
    # round 1: agreement [1, 1, 0.6/0.9]; fit [1, 1, 0.2/0.8]
    # round 2: clients 0 and 2 only: agreement [1, 0.45/0.9 = 0.5]; fit [1, 0.25/1.0]
    rounds = [
        ContributionRound(1, [0, 1, 2], reward_accuracy=[0.9, 0.9, 0.6], train_loss=[0.2, 0.2, 0.8]),
        ContributionRound(2, [0, 2], reward_accuracy=[0.9, 0.45], train_loss=[0.25, 1.0]),
    ]
    result = data_quality(rounds, 4)
    agreement_2 = (0.6 / 0.9 + 0.5) / 2
    fit_2 = (0.25 + 0.25) / 2
    assert result.per_client[:3] == pytest.approx([1.0, 1.0, (agreement_2 + fit_2) / 2])
    assert np.isnan(result.per_client[3])  # never took part
    assert result.flagged == [2]
    assert result.score == pytest.approx((2.0 + (agreement_2 + fit_2) / 2) / 3)
    assert result.components == ["agreement", "fit"]


def test_data_quality_with_one_component_and_without_peers():
    only_agreement = data_quality([ContributionRound(1, [0, 1], reward_accuracy=[0.5, 1.0])], 2)
    assert only_agreement.per_client.tolist() == [0.5, 1.0]
    assert only_agreement.components == ["agreement"]
    alone = data_quality([ContributionRound(1, [1], reward_accuracy=[0.3])], 2)
    assert np.all(np.isnan(alone.per_client)) and np.isnan(alone.score)
    with pytest.raises(ReputationError, match="outside"):
        data_quality([ContributionRound(1, [5], reward_accuracy=[0.3])], 2)
    with pytest.raises(ReputationError, match="values for"):
        ContributionRound(1, [0, 1], reward_accuracy=[0.3])


def test_beta_reputation_by_hand():
    # (alpha p + a W) / (alpha p + beta n + W), alpha 1, beta 2, W 2, a 0.5
    assert beta_reputation([0, 5, 0, 3], [0, 0, 5, 1]) == pytest.approx([0.5, 6 / 7, 1 / 12, 4 / 7])


def test_interactions_and_reputation_by_hand():
    # peer medians 0.575, 0.55, 0.225: the 0.9 loss exceeds 1.5 x 0.225
    assert reference_interactions(np.array([0.2, 0.25, 0.9]), 0.3).tolist() == [True, True, False]
    rounds = [ContributionRound(t, [0, 1, 2], reference_loss=[0.2, 0.22, 0.7], global_reference_loss=0.3)
              for t in (1, 2, 3)]
    result = client_reputation(rounds, 4)
    assert result.per_client[:3] == pytest.approx([0.8, 0.8, 0.125])
    assert np.isnan(result.per_client[3])
    assert result.positive.tolist() == [3, 3, 0, 0] and result.negative.tolist() == [0, 0, 3, 0]
    assert result.score == pytest.approx((0.8 + 0.8 + 0.125) / 3)
    assert result.fedsv_mean is None


def test_fedsv_consistency_by_hand():
    rounds = [ContributionRound(1, [0, 1], fedsv=[0.1, -0.2]), ContributionRound(2, [0, 1], fedsv=[0.3, -0.2])]
    mean, cv = fedsv_consistency(rounds, 3)
    assert mean[:2] == pytest.approx([0.2, -0.2]) and cv[:2] == pytest.approx([0.5, 0.0])
    assert np.isnan(mean[2])
    assert fedsv_consistency([ContributionRound(1, [0])], 1) is None


# -------------------------------------------------------------------------------------------
# A client with 40 % flipped labels, in a real federated run
# -------------------------------------------------------------------------------------------

NOISY = 0


def _noisy_run(tmp_path: Path, *, flip_validation: bool) -> dict:
    """5 clients (3 per round, 8 rounds) on synthetic NSL-KDD; client 0 has 40 % of its labels flipped.

    The federation is prepared, the labels flipped in ``federation.y_train`` (the client's training
    rows, and its validation rows when ``flip_validation``), then the experiment runs through the
    engine and a RunRecorder exactly as ``run_experiment`` does.
    """
    from fltrust.config import ExperimentConfig
    from fltrust.experiment import build_engine, prepare_experiment
    from fltrust.federation import prepare_federation, resolve_device
    from fltrust.runs import RunFolder, RunRecorder

    cfg = ExperimentConfig.from_dict({
        "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 1200},
        "partition": {"num_clients": 5, "aux_max_samples": 60},
        "strategy": {"name": "fedavg", "clients_per_round": 3},
        "training": {"rounds": 8, "local_epochs": 1},
        "metrics": {"trust": {"enabled": True, "mode": "extended", "clever_samples": 0, "shap_samples": 0,
                              "evasion_samples": 20, "mia_samples": 50}},
        "run": {"name": "noisy", "progress": False, "device": "cpu", "torch_threads": 1, "checkpoint": False},
    })
    federation = prepare_federation(cfg, resolve_device("cpu"))
    rows = federation.train_index[NOISY]
    if flip_validation:
        rows = torch.cat([rows, federation.val_index[NOISY]])
    rng = np.random.default_rng(0)
    flip = rows[torch.as_tensor(rng.choice(len(rows), size=int(0.4 * len(rows)), replace=False))]
    labels = federation.y_train.clone()
    labels[flip] = 1 - labels[flip]
    federation.y_train = labels
    experiment = prepare_experiment(cfg, federation=federation)
    folder = RunFolder(tmp_path / "noisy")
    folder.path.mkdir(parents=True)
    for observer in experiment.observers.observers:
        if hasattr(observer, "run_folder"):
            observer.run_folder = folder.path
    build_engine(experiment).run(RunRecorder(folder, experiment.observers), experiment.run_info("noisy"), resume=False)
    summary = json.loads(folder.summary.read_text())
    return summary["observers"]["trust"]["extended"]["robustness"]


@pytest.mark.slow
@pytest.mark.parametrize("flip_validation", [True, False], ids=["train+val rows", "train rows only"])
def test_a_client_with_flipped_labels_scores_clearly_lower(tmp_path, flip_validation):
    # Execute
    robustness = _noisy_run(tmp_path, flip_validation=flip_validation)
    reputation = np.asarray(robustness["reputation"]["per_client"], dtype=float)
    quality = np.asarray(robustness["data_quality"]["per_client"], dtype=float)
    clean = [c for c in range(5) if c != NOISY]
    # Assert: every client took part; the noisy one is far below every clean one on both metrics
    assert np.all(np.isfinite(reputation)) and np.all(np.isfinite(quality))
    assert reputation[NOISY] < 0.4 < 0.75 < reputation[clean].min()
    assert quality[NOISY] < 0.75 < 0.9 < quality[clean].min()
    assert robustness["data_quality"]["flagged"] == [NOISY]
