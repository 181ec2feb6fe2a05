"""NbAFL as FederatedScope implements it (``privacy.mode: nbafl``, :class:`fltrust.algorithms.privacy.NbAFL`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from fltrust.config import ConfigError, ExperimentConfig, PrivacyConfig, TrainingConfig
from fltrust.core.evaluation import get_params, set_params
from fltrust.core.observers import BaseObserver
from fltrust.experiment import check_experiment, run_experiment
from fltrust.algorithms.privacy import NbAFL, NbAFLMechanism, nbafl_from_config, trainable_mask
from fltrust.engines.training import LocalTrainer
from fltrust.engines.vectorized import vectorize_reason


def nbafl(**overrides) -> NbAFL:
    settings = dict(mu=0.0, w_clip=1.0, constant=30.0, epsilon=10.0, rounds=5, num_clients=4,
                    clients_per_round=2, min_samples=100)
    settings.update(overrides)
    return NbAFL(**settings)


def tiny(**sections) -> ExperimentConfig:
    base = {"run": {"name": "nbafl", "torch_threads": None, "device": "cpu"}}
    for key, value in sections.items():
        base.setdefault(key, {}).update(value)
    return ExperimentConfig.tiny(**base)


# -- noise scales ---------------------------------------------------------------------------
def test_upload_std_hand_computed():
    # sigma_U = w_clip * T * c / (n_k * eps) = 1 * 5 * 30 / (100 * 10) = 150 / 1000 = 0.15
    assert nbafl().upload_std(100) == pytest.approx(0.15)
    # FederatedTrust example constants, experiment 3: 0.1 * 50 * 1 / (120 * 6) = 5 / 720 = 0.0069444
    assert nbafl(w_clip=0.1, constant=1.0, epsilon=6.0, rounds=50).upload_std(120) == pytest.approx(0.0069444, abs=1e-7)


def test_upload_noise_has_the_stated_std_on_trainable_entries_only():
    zeros = np.zeros((1000, 1000), dtype=np.float32)
    buffer = np.full(3, 7.0, dtype=np.float32)
    counter = np.array(4, dtype=np.int64)
    out = nbafl().perturb_upload([zeros, buffer, counter], [True, False, False], 100, np.random.default_rng(0))
    assert out[0].dtype == np.float32 and abs(out[0].mean()) < 1e-3
    assert out[0].std() == pytest.approx(0.15, rel=0.01)  # 1e6 draws: the sample std is within 0.1 %
    np.testing.assert_array_equal(out[1], buffer)
    assert out[2] == 4
    assert np.all(zeros == 0)  # the input is not modified


# -- server broadcast -----------------------------------------------------------------------
def test_broadcast_clips_each_weight_to_w_clip():
    weights = np.array([-3.0, -0.5, 0.2, 2.0], dtype=np.float32)
    running_var = np.array([5.0, -5.0], dtype=np.float32)  # a buffer: untouched
    # T = 4 = sqrt(4) * 2: FederatedScope's condition T > sqrt(N) K is false, so no noise
    sent = nbafl(w_clip=1.0, rounds=4).broadcast([weights, running_var], [True, False], np.random.default_rng(0))
    np.testing.assert_array_equal(sent[0], np.array([-1.0, -0.5, 0.2, 1.0], dtype=np.float32))
    np.testing.assert_array_equal(sent[1], running_var)


def test_broadcast_noise_only_when_rounds_exceed_sqrt_clients_times_sampled():
    assert nbafl(rounds=4).broadcast_std() == 0.0  # T = 4, sqrt(N) K = 2 * 2 = 4: not strictly greater
    assert nbafl(rounds=5).broadcast_std() > 0
    # T = 10, N = 4, K = 2, m = 100: 2 * 1 * 30 * sqrt(100 - 4 * 4) / (100 * 4 * 10)
    #   = 60 * 9.1651514 / 4000 = 0.1374773
    scheme = nbafl(rounds=10)
    assert scheme.broadcast_std() == pytest.approx(0.1374773, abs=1e-7)
    sent = scheme.broadcast([np.zeros((1000, 1000))], [True], np.random.default_rng(1))[0]
    assert sent.std() == pytest.approx(0.1374773, rel=0.01)
    # FederatedTrust experiments 2 (N=50, K=30, T=25) and 3 (N=100, K=40, T=50): no server noise
    assert nbafl(num_clients=50, clients_per_round=30, rounds=25).broadcast_std() == 0.0
    assert nbafl(num_clients=100, clients_per_round=40, rounds=50).broadcast_std() == 0.0


def test_from_config_takes_m_as_epochs_times_smallest_client():
    privacy = PrivacyConfig(mode="nbafl", target_epsilon=20.0, nbafl_mu=0.01, nbafl_w_clip=0.1, nbafl_constant=1.0)
    scheme = nbafl_from_config(privacy, rounds=25, num_clients=3, clients_per_round=2, local_epochs=2,
                               client_sizes=[130, 90, 200])
    assert (scheme.mu, scheme.w_clip, scheme.constant, scheme.epsilon) == (0.01, 0.1, 1.0, 20.0)
    assert scheme.min_samples == 180
    # T = 25 > sqrt(3) * 2 = 3.46: 2 * 0.1 * 1 * sqrt(625 - 12) / (180 * 3 * 20) = 0.2 * 24.758837 / 10800
    assert scheme.broadcast_std() == pytest.approx(4.584970e-4, rel=1e-6)


# -- local training -------------------------------------------------------------------------
def test_proximal_term_gradient_by_hand():
    """Linear(1 -> 2, no bias) from W0 = 0, x = 1, y = 0, plain SGD with lr 1, two one-sample steps.

    Step 1: logits (0, 0), softmax (1/2, 1/2), dL/dW = p - e_0 = (-1/2, 1/2); the proximal gradient
    mu (W - W0) is 0, so W1 = (1/2, -1/2).
    Step 2: logits (1/2, -1/2), p_0 = sigmoid(1) = 0.7310586, data gradient (p_0 - 1, 1 - p_0)
    = (-0.2689414, 0.2689414); proximal gradient mu (W1 - W0) = 0.5 (1/2, -1/2) = (0.25, -0.25);
    W2 = W1 - (data + proximal) = (0.5 + 0.2689414 - 0.25, -(0.5 + 0.2689414 - 0.25))
    = (0.5189414, -0.5189414). Without the proximal term: (0.7689414, -0.7689414).
    """
    model = nn.Linear(1, 2, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    training = TrainingConfig(optimizer="sgd", learning_rate=1.0, batch_size=1)
    trainer = LocalTrainer(model, training, num_classes=2, device=torch.device("cpu"))
    x, y = torch.ones(2, 1), torch.zeros(2, dtype=torch.int64)
    w0 = get_params(model)
    new, _ = trainer.train(w0, x, y, epochs=1, seed=0, **nbafl(mu=0.5).train_kwargs(w0))
    np.testing.assert_allclose(new[0].ravel(), [0.5189414, -0.5189414], atol=1e-6)
    set_params(model, w0)
    plain, _ = trainer.train(w0, x, y, epochs=1, seed=0, **nbafl(mu=0.0).train_kwargs(w0))
    np.testing.assert_allclose(plain[0].ravel(), [0.7689414, -0.7689414], atol=1e-6)


def test_trainable_mask_leaves_out_buffers():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    # state_dict: weight, bias, bn.weight, bn.bias, running_mean, running_var, num_batches_tracked
    assert trainable_mask(model) == [True, True, True, True, False, False, False]


# -- configuration --------------------------------------------------------------------------
@pytest.mark.parametrize("field, value, bound", [("nbafl_w_clip", 0.0, "> 0"), ("nbafl_constant", -1.0, "> 0"),
                                                 ("nbafl_mu", -0.1, ">= 0")])
def test_config_rejects_bad_constants_naming_the_field(field, value, bound):
    with pytest.raises(ConfigError, match=rf"privacy\.{field}=.* must be {bound}"):
        PrivacyConfig(mode="nbafl", **{field: value})


def test_config_defaults_are_federatedscopes():
    p = PrivacyConfig(mode="nbafl")
    assert (p.nbafl_mu, p.nbafl_w_clip, p.nbafl_constant) == (0.0, 1.0, 30.0)


def test_config_rejects_fedprox_and_flower():
    with pytest.raises(ConfigError, match="privacy.mode='nbafl' has its own proximal term"):
        check_experiment(tiny(privacy={"mode": "nbafl"}, strategy={"name": "fedprox"}))
    with pytest.raises(ConfigError, match="privacy.mode='nbafl' runs in the in-process engine only"):
        check_experiment(tiny(privacy={"mode": "nbafl"}, run={"engine": "flower"}))


def test_vectorised_training_falls_back_to_sequential():
    mechanism = NbAFLMechanism(nbafl=nbafl(), trainable=[True, True], seed=0)
    assert "NbAFL" in vectorize_reason(TrainingConfig(), mechanism, nn.Linear(2, 2), 3)


# -- end to end -----------------------------------------------------------------------------
class Received(BaseObserver):
    name = "received"

    def __init__(self):
        self.before, self.uploads = [], []

    def on_round_end(self, record):
        if record.round >= 1:
            self.before.append(record.global_params_before)
            self.uploads.append(record.client_params)
        return {}


def test_tiny_run_completes_records_the_mode_and_is_seeded(tmp_path):
    privacy = {"mode": "nbafl", "target_epsilon": 2.0, "nbafl_w_clip": 0.05, "nbafl_mu": 0.01}
    seen = Received()
    record = run_experiment(tiny(privacy=privacy), observers=[seen], out_dir=tmp_path / "a")
    assert record.status == "complete"
    assert record.config["privacy"]["mode"] == "nbafl"
    assert [r.server_metrics["epsilon"] for r in record.rounds[1:]] == [2.0, 2.0, 2.0]
    assert math.isfinite(record.summary["final_aux_loss"])
    # tiny: T = 3 <= sqrt(6) * 3, so the broadcast is clipped only (nsl_kdd_mlp has no buffers)
    assert max(np.abs(p).max() for p in seen.before[0]) <= 0.05
    assert max(np.abs(p).max() for p in seen.before[1]) <= 0.05
    again = run_experiment(tiny(privacy=privacy), out_dir=tmp_path / "b")
    losses = [r.server_metrics["aux_loss"] for r in record.rounds]
    assert [r.server_metrics["aux_loss"] for r in again.rounds] == losses
    other = run_experiment(tiny(privacy=privacy, run={"seed": 1}), out_dir=tmp_path / "c")
    assert [r.server_metrics["aux_loss"] for r in other.rounds][1:] != losses[1:]


def test_upload_noise_in_a_run_has_the_formula_std(tmp_path):
    """Two runs that differ only in the noise constant receive the same clipped round-1 model and
    train identically, so the difference of a client's round-1 uploads is its upload noise."""
    base = {"mode": "nbafl", "target_epsilon": 5.0, "nbafl_w_clip": 0.5, "nbafl_mu": 0.1}
    noisy, quiet = Received(), Received()
    record = run_experiment(tiny(privacy={**base, "nbafl_constant": 30.0}), observers=[noisy], out_dir=tmp_path / "n")
    run_experiment(tiny(privacy={**base, "nbafl_constant": 1e-9}), observers=[quiet], out_dir=tmp_path / "q")
    diff = np.concatenate([(a.astype(np.float64) - b).ravel() for a, b in zip(noisy.uploads[0][0], quiet.uploads[0][0])])
    n_k = record.rounds[1].client_metrics["num_samples"][0]
    # sigma_U = w_clip * T * c / (n_k * eps) = 0.5 * 3 * 30 / (n_k * 5) = 9 / n_k
    assert diff.size == 45_141
    assert diff.std() == pytest.approx(9.0 / n_k, rel=0.02)


def test_a_run_records_the_noise_against_the_model_norm(tmp_path):
    """Every round reports NbAFL's expected noise norms (formula) and the model's own norms."""
    privacy = {"mode": "nbafl", "target_epsilon": 5.0, "nbafl_w_clip": 0.5, "nbafl_constant": 30.0}
    record = run_experiment(tiny(privacy=privacy), out_dir=tmp_path)
    for r in record.rounds[1:]:
        sizes = r.client_metrics["num_samples"]
        stds = 0.5 * 3 * 30 / (sizes * 5.0)  # sigma_U = w_clip * T * c / (n_k * eps), T = 3 rounds
        weights = sizes / sizes.sum()
        s = r.server_metrics
        assert s["nbafl_upload_noise_norm"] == pytest.approx(stds.mean() * math.sqrt(45_141))
        assert s["nbafl_aggregate_noise_norm"] == pytest.approx(math.sqrt(45_141 * np.sum((weights * stds) ** 2)))
        assert s["weight_norm"] > 0 and s["update_norm"] > 0
