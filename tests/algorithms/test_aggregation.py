"""Aggregation rules against values computed by hand on tiny arrays."""

import numpy as np
import pytest

from fltrust.algorithms.aggregation import clip_update, coordinate_median, qffl_aggregate, weighted_average
from fltrust.algorithms.privacy import server_dp_aggregate


def test_fedavg_weights_by_samples():
    # Prepare: two clients, one scalar tensor each, 1 and 3 samples.
    a, b = [np.array([1.0, 2.0], dtype=np.float32)], [np.array([5.0, 6.0], dtype=np.float32)]
    # Execute
    out = weighted_average([a, b], [1, 3])
    # Assert: (1*1 + 3*5)/4 = 4, (1*2 + 3*6)/4 = 5
    np.testing.assert_allclose(out[0], [4.0, 5.0])
    assert out[0].dtype == np.float32


def test_fedavg_by_batches_differs_from_by_samples():
    # 33 samples -> 2 batches of 32; 64 samples -> 2 batches: batch weights are equal.
    a, b = [np.array([0.0])], [np.array([3.0])]
    by_samples = weighted_average([a, b], [33, 64])[0]
    by_batches = weighted_average([a, b], [2, 2])[0]
    np.testing.assert_allclose(by_samples, [3.0 * 64 / 97])
    np.testing.assert_allclose(by_batches, [1.5])


def test_integer_buffers_are_cast_back():
    a = [np.array([1.0]), np.array(3, dtype=np.int64)]
    b = [np.array([2.0]), np.array(4, dtype=np.int64)]
    out = weighted_average([a, b], [1, 1])
    assert out[1].dtype == np.int64 and int(out[1]) == 4  # rint(3.5) = 4 (half to even)


def test_weighted_average_rejects_bad_weights():
    with pytest.raises(ValueError, match="weights"):
        weighted_average([[np.zeros(1)]], [0])


def test_coordinate_median():
    sets = [[np.array([1.0, 10.0])], [np.array([2.0, -5.0])], [np.array([9.0, 0.0])]]
    np.testing.assert_allclose(coordinate_median(sets)[0], [2.0, 0.0])


def test_qffl_by_hand():
    # theta = [1], clients w1 = [0], w2 = [2]; lr = 0.5, q = 1, losses 2 and 4.
    # g1 = (1-0)/0.5 = 2, g2 = (1-2)/0.5 = -2
    # Delta1 = 2*2 = 4, Delta2 = 4*(-2) = -8  -> sum = -4
    # h1 = 1*2^0*4 + 2/0.5 = 8, h2 = 1*4^0*4 + 4/0.5 = 12 -> sum = 20
    # theta' = 1 - (-4/20) = 1.2  (losses get +1e-10, negligible)
    out = qffl_aggregate([np.array([1.0])], [[np.array([0.0])], [np.array([2.0])]], [2.0, 4.0], q=1.0, learning_rate=0.5)
    np.testing.assert_allclose(out[0], [1.2], rtol=1e-8)


def test_qffl_with_q_zero_and_one_shared_loss_is_a_damped_mean():
    # q = 0: Delta_n = g_n, h_n = 1/lr, so theta' = theta - lr * mean(g) = mean(w).
    theta = [np.array([4.0, 0.0])]
    sets = [[np.array([0.0, 2.0])], [np.array([2.0, 4.0])]]
    out = qffl_aggregate(theta, sets, [0.7, 0.7], q=0.0, learning_rate=0.1)
    np.testing.assert_allclose(out[0], [1.0, 3.0])


def test_clip_update():
    clipped, norm = clip_update([np.array([3.0]), np.array([4.0])], 1.0)
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose([clipped[0][0], clipped[1][0]], [0.6, 0.8])


def test_server_dp_without_noise_is_mean_of_clipped_updates():
    g = [np.array([0.0, 0.0])]
    sets = [[np.array([3.0, 4.0])], [np.array([0.1, 0.0])]]
    new, info = server_dp_aggregate(g, sets, clipping_norm=1.0, noise_multiplier=0.0, rng=np.random.default_rng(0))
    # update 1 clipped to [0.6, 0.8], update 2 unchanged -> mean [0.35, 0.4]
    np.testing.assert_allclose(new[0], [0.35, 0.4])
    assert info["update_norms"] == pytest.approx([5.0, 0.1])
