"""Local training (fltrust.engines.training.LocalTrainer) against updates computed by hand on tiny linear models.

The common set-up: ``Linear(2 -> 2)`` from W = 0, b = 0 on x_1 = (1, 0) with label 0 and x_2 = (0, 1)
with label 1, one batch holding both samples. Both logits are 0, softmax (1/2, 1/2), so the
cross-entropy gradient of the logits is p - e_y = (-1/2, 1/2) for x_1 and (1/2, -1/2) for x_2, and
the batch-mean gradients are

    dL/dW = 1/2 [(-1/2, 1/2)^T (1, 0) + (1/2, -1/2)^T (0, 1)] = [[-1/4, 1/4], [1/4, -1/4]],
    dL/db = 1/2 [(-1/2, 1/2) + (1/2, -1/2)] = (0, 0),

with loss ln 2 = 0.6931472 per sample.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from fltrust.config import TrainingConfig
from fltrust.core.evaluation import get_params
from fltrust.engines.training import LocalDP, LocalTrainer, _trainable_subset, num_batches

X = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
Y = torch.tensor([0, 1])
GRAD_W = np.array([[-0.25, 0.25], [0.25, -0.25]])
SIGMOID_HALF = 1 / (1 + math.exp(-0.5))  # 0.6224593


def zero_linear(inputs: int = 2, outputs: int = 2, bias: bool = True) -> nn.Linear:
    model = nn.Linear(inputs, outputs, bias=bias)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model


def trainer(model: nn.Module, **training) -> LocalTrainer:
    settings = {"optimizer": "sgd", "learning_rate": 1.0, "batch_size": 2} | training
    return LocalTrainer(model, TrainingConfig(**settings), num_classes=2, device=torch.device("cpu"))


def test_one_sgd_epoch_is_one_gradient_step():
    # Prepare
    model = zero_linear()

    # Execute: one epoch, one batch, SGD with lr 1
    (w, b), loss = trainer(model).train(get_params(model), X, Y, epochs=1, seed=0)

    # Assert: W_1 = W_0 - 1 * dL/dW = [[1/4, -1/4], [-1/4, 1/4]], b unchanged; the loss of the epoch is ln 2
    np.testing.assert_allclose(w, -GRAD_W, atol=1e-7)
    np.testing.assert_allclose(b, [0.0, 0.0], atol=1e-7)
    assert loss == pytest.approx(math.log(2), abs=1e-6)


def test_two_epochs_take_two_steps_and_report_the_last_epochs_loss():
    """Step 2 from W_1: the logits of x_1 are (1/4, -1/4), so p_0 = sigmoid(1/2) = 0.6224593, and
    symmetrically for x_2. dL/dW = 1/2 [[p_0 - 1, 1 - p_0], [1 - p_0, p_0 - 1]] = +-0.1887703 and
    W_2 = W_1 - dL/dW = +-(0.25 + 0.1887703) = +-0.4387703. The reported loss is the second epoch's:
    -ln sigmoid(1/2) = 0.4740770.
    """
    model = zero_linear()
    (w, _), loss = trainer(model).train(get_params(model), X, Y, epochs=2, seed=0)

    step2 = (1 - SIGMOID_HALF) / 2  # 0.1887703
    np.testing.assert_allclose(w, [[0.25 + step2, -0.25 - step2], [-0.25 - step2, 0.25 + step2]], atol=1e-6)
    np.testing.assert_allclose(w[0, 0], 0.4387703, atol=1e-6)
    assert loss == pytest.approx(-math.log(SIGMOID_HALF), abs=1e-6)  # 0.4740770


def test_sgd_momentum_carries_the_first_step():
    # buffer_2 = 0.9 * g_1 + g_2 = 0.9 * -0.25 - 0.1887703 = -0.4137703 -> W_2[0, 0] = 0.25 + 0.4137703 = 0.6637703
    model = zero_linear()
    (w, _), _ = trainer(model, momentum=0.9).train(get_params(model), X, Y, epochs=2, seed=0)
    np.testing.assert_allclose(w[0, 0], 0.25 + 0.9 * 0.25 + (1 - SIGMOID_HALF) / 2, atol=1e-6)
    np.testing.assert_allclose(w[0, 0], 0.6637703, atol=1e-6)


def test_batches_within_an_epoch_are_sequential_steps_and_the_loss_is_their_sample_mean():
    """Batch size 1, two copies of x = (1) with label 0, Linear(1 -> 2) without bias (order-free).

    Step 1: logits (0, 0), gradient (-1/2, 1/2) -> W = (1/2, -1/2), batch loss ln 2.
    Step 2: logits (1/2, -1/2), p_0 = sigmoid(1) = 0.7310586, gradient (p_0 - 1, 1 - p_0)
    -> W = (0.5 + 0.2689414, -0.5 - 0.2689414) = (0.7689414, -0.7689414), batch loss -ln p_0 = 0.3132617.
    Epoch loss: (0.6931472 + 0.3132617) / 2 = 0.5032044.
    """
    model = zero_linear(1, 2, bias=False)
    x, y = torch.ones(2, 1), torch.zeros(2, dtype=torch.int64)
    (w,), loss = trainer(model, batch_size=1).train(get_params(model), x, y, epochs=1, seed=3)
    np.testing.assert_allclose(w.ravel(), [0.7689414, -0.7689414], atol=1e-6)
    assert loss == pytest.approx(0.5032044, abs=1e-6)


def test_ditto_personal_step_plain_sgd_with_its_own_rate_and_the_proximal_term():
    """Ditto's personal update v <- v - eta (grad + lambda (v - anchor)), eta = 0.5, lambda = 0.5,
    anchor = 1 everywhere (fairness spec 5.3, docs/references.md#fairness-5-3). The configured optimiser (Adam, lr 1e-3)
    is not used.

    W: -0.5 (dL/dW + 0.5 (0 - 1)) = -0.5 dL/dW + 0.25 = [[0.375, 0.125], [0.125, 0.375]]
    b: -0.5 (0 + 0.5 (0 - 1)) = 0.25
    Reported loss: ln 2 + lambda/2 ||v - anchor||^2 = 0.6931472 + 0.25 * 6 = 2.1931472.
    """
    model = zero_linear()
    anchor = [np.ones((2, 2), np.float32), np.ones(2, np.float32)]
    (w, b), loss = trainer(model, optimizer="adam", learning_rate=1e-3).train(
        get_params(model), X, Y, epochs=1, seed=0, proximal_center=anchor, proximal_mu=0.5,
        learning_rate=0.5, plain_sgd=True)
    np.testing.assert_allclose(w, [[0.375, 0.125], [0.125, 0.375]], atol=1e-7)
    np.testing.assert_allclose(b, [0.25, 0.25], atol=1e-7)
    assert loss == pytest.approx(math.log(2) + 1.5, abs=1e-6)


def test_adams_first_step_is_the_learning_rate_times_the_gradient_sign():
    # m_hat = g, v_hat = g^2: step = lr * g / (|g| + 1e-8) = 0.1 * sign(g) where g != 0; b has g = 0: no step
    model = zero_linear()
    (w, b), _ = trainer(model, optimizer="adam", learning_rate=0.1).train(get_params(model), X, Y, epochs=1, seed=0)
    np.testing.assert_allclose(w, [[0.1, -0.1], [-0.1, 0.1]], atol=1e-6)
    np.testing.assert_allclose(b, [0.0, 0.0], atol=1e-7)


def test_gradient_clipping_scales_the_global_norm():
    # ||(dL/dW, dL/db)|| = sqrt(4 * 1/16) = 0.5; clipped to 0.1: factor 0.2, W_1 = 0.2 * [[1/4, -1/4], ...] = +-0.05
    model = zero_linear()
    (w, _), _ = trainer(model, grad_clip=0.1).train(get_params(model), X, Y, epochs=1, seed=0)
    np.testing.assert_allclose(w, [[0.05, -0.05], [-0.05, 0.05]], atol=1e-6)


def test_one_logit_models_train_with_binary_cross_entropy():
    # Linear(2 -> 1) from 0: p = 1/2 for both, dL/dz = p - y = (-1/2, 1/2) for labels (1, 0);
    # dL/dw = 1/2 ((-1/2)(1, 0) + (1/2)(0, 1)) = (-1/4, 1/4) -> w_1 = (1/4, -1/4); loss ln 2
    model = zero_linear(2, 1)
    (w, b), loss = trainer(model).train(get_params(model), X, torch.tensor([1, 0]), epochs=1, seed=0)
    np.testing.assert_allclose(w, [[0.25, -0.25]], atol=1e-7)
    np.testing.assert_allclose(b, [0.0], atol=1e-7)
    assert loss == pytest.approx(math.log(2), abs=1e-6)


def test_training_starts_from_the_given_params_not_the_models_state():
    # the trainer's model holds other weights; training from the given zeros gives the hand values
    model = zero_linear()
    start = get_params(model)
    with torch.no_grad():
        model.weight.fill_(5.0)
    (w, _), _ = trainer(model).train(start, X, Y, epochs=1, seed=0)
    np.testing.assert_allclose(w, -GRAD_W, atol=1e-7)
    assert np.all(start[0] == 0)  # the input arrays are not modified


def test_batch_order_and_dropout_follow_the_seed():
    # Prepare: 10 random samples, batches of 3, a dropout layer
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(10, 4, generator=generator), torch.randint(0, 2, (10,), generator=generator)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))
    local = trainer(model, batch_size=3, learning_rate=0.1)
    start = get_params(model)

    # Execute
    a, loss_a = local.train(start, x, y, epochs=2, seed=7)
    b, loss_b = local.train(start, x, y, epochs=2, seed=7)
    c, _ = local.train(start, x, y, epochs=2, seed=8)

    # Assert
    assert loss_a == loss_b and all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not all(np.array_equal(p, q) for p, q in zip(a, c))


def test_private_training_clips_per_sample_gradients():
    """Opacus DP-SGD without noise, rate 1 (batch = both samples), max_grad_norm = 0.0707107.

    Linear(2 -> 2) without bias: the per-sample gradients [[-1/2, 0], [1/2, 0]] and [[0, 1/2], [0, -1/2]]
    have norm sqrt(1/2) = 0.7071068 each, so each is scaled by 0.1; their mean is 0.1 dL/dW and
    W_1 = -0.1 dL/dW = [[0.025, -0.025], [-0.025, 0.025]]. The accountant saw 1 step at rate 1 per epoch.
    """
    model = zero_linear(bias=False)
    dp = LocalDP(noise_multiplier=0.0, max_grad_norm=0.1 * math.sqrt(0.5))
    (w,), loss, history = trainer(model).train_private(get_params(model), X, Y, epochs=1, seed=0, dp=dp)
    np.testing.assert_allclose(w, [[0.025, -0.025], [-0.025, 0.025]], atol=1e-6)
    assert loss == pytest.approx(math.log(2), abs=1e-6)
    assert history == [[0.0, 1.0, 1]]


def test_private_training_is_seeded_and_its_history_counts_the_steps():
    # Prepare
    model = zero_linear()
    local = trainer(model)
    dp = LocalDP(noise_multiplier=1.0, max_grad_norm=1.0)

    # Execute: 3 epochs of 1 step each (rate 2/2 = 1)
    a, _, history = local.train_private(get_params(model), X, Y, epochs=3, seed=1, dp=dp)
    b, _, _ = local.train_private(get_params(model), X, Y, epochs=3, seed=1, dp=dp)
    c, _, _ = local.train_private(get_params(model), X, Y, epochs=3, seed=2, dp=dp)

    # Assert: identical under one seed, other noise under another; steps merged into one entry
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    assert history == [[1.0, 1.0, 3]]


def test_num_batches_is_the_ceiling():
    assert [num_batches(n, 32) for n in (1, 31, 32, 33, 64, 65)] == [1, 1, 1, 2, 2, 3]


def test_trainable_subset_drops_the_buffers():
    # state_dict: weight, bias, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.num_batches_tracked
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    entries = [np.full(1, i) for i in range(7)]
    assert [int(p[0]) for p in _trainable_subset(model, entries)] == [0, 1, 2, 3]


def test_proximal_term_on_a_batchnorm_model_pulls_the_parameters_only():
    # A BatchNorm model: the center is a full state_dict list (buffers included); with the data
    # gradient removed (lr tiny) only the parameters move towards the center, the buffers' center is ignored
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    start = get_params(model)
    center = [p + 1.0 if p.dtype.kind == "f" else p for p in start]  # +1 on every float entry, buffers too
    local = trainer(model, learning_rate=1.0)
    plain, _ = local.train(start, X, Y, epochs=1, seed=0)
    pulled, _ = local.train(start, X, Y, epochs=1, seed=0, proximal_center=center, proximal_mu=0.5)
    # each trainable entry moves by an extra -lr * mu * (w - c) = +0.5
    for i in range(4):
        np.testing.assert_allclose(pulled[i] - plain[i], 0.5, atol=1e-6)
    # the running statistics are the batch's, not pulled: identical with and without the term
    for i in range(4, 7):
        np.testing.assert_array_equal(pulled[i], plain[i])
