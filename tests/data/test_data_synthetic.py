"""Synthetic stand-ins: shapes, dtypes, structure, determinism and learnability (speed is not a test)."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.data import GENERATORS, DatasetError, per_partition_column_order
from fltrust.data import n_baiot, nsl_kdd

SHAPES = {
    "synthetic_cifar10": ((3, 32, 32), 10, -1.0, 1.0),
    "synthetic_femnist": ((1, 28, 28), 62, 0.0, 1.0),
    "synthetic_nsl_kdd": ((122,), 2, 0.0, 1.0),
    "synthetic_n_baiot": ((115,), 2, None, None),
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_shapes_dtypes_and_labels(name):
    shape, classes, low, high = SHAPES[name]

    bundle = GENERATORS[name](200, seed=1)

    assert bundle.synthetic is True and bundle.name == name
    assert (len(bundle.train), len(bundle.test)) == (200, 50)  # test = a quarter
    assert bundle.input_shape == shape and bundle.train.x.shape == (200, *shape)
    assert bundle.train.x.dtype == np.float32 and bundle.train.y.dtype == np.int64
    assert bundle.num_classes == classes and len(bundle.class_names) == classes
    assert bundle.train.y.min() >= 0 and bundle.train.y.max() < classes
    if low is not None:
        assert bundle.train.x.min() >= low and bundle.train.x.max() <= high
    assert bundle.source == {"generator": name, "seed": 1, "train_samples": 200, "test_samples": 50} | (
        {"balance": False} if name == "synthetic_n_baiot" else {}
    )


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_deterministic_from_the_seed(name):
    a, b, c = GENERATORS[name](100, seed=5), GENERATORS[name](100, seed=5), GENERATORS[name](100, seed=6)

    np.testing.assert_array_equal(a.train.x, b.train.x)
    np.testing.assert_array_equal(a.test.y, b.test.y)
    assert not np.array_equal(a.train.x, c.train.x)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_classes_are_learnable_by_nearest_centroid(name):
    bundle = GENERATORS[name](2000, seed=0)
    x_train = bundle.train.x.reshape(len(bundle.train), -1)
    x_test = bundle.test.x.reshape(len(bundle.test), -1)
    labels = np.unique(bundle.train.y)
    centroids = np.stack([x_train[bundle.train.y == k].mean(axis=0) for k in labels])

    distances = ((x_test[:, None, :] - centroids[None]) ** 2).sum(axis=-1)
    accuracy = (labels[distances.argmin(axis=1)] == bundle.test.y).mean()

    chance = np.bincount(bundle.test.y).max() / len(bundle.test)
    assert accuracy > chance + 0.1


def test_femnist_writers_have_skewed_labels():
    bundle = GENERATORS["synthetic_femnist"](2000, seed=0)

    assert bundle.group_names == [f"writer_{i:02d}" for i in range(20)]
    assert set(np.unique(bundle.test.groups)) <= set(range(20))
    hist = np.stack([np.bincount(bundle.train.y[bundle.train.groups == w], minlength=62) for w in range(20)])
    top_share = hist.max(axis=1) / np.maximum(hist.sum(axis=1), 1)
    assert np.median(top_share) > 3 / 62  # far from uniform labels per writer


def test_nsl_kdd_one_hot_blocks_are_valid_and_extras_present():
    bundle = GENERATORS["synthetic_nsl_kdd"](300, seed=2)

    x = bundle.train.x
    for start, stop in ((38, 41), (41, 111), (111, 122)):
        np.testing.assert_array_equal(x[:, start:stop].sum(axis=1), np.ones(300))
    services = bundle.train.extras["service"]
    columns = 41 + np.array([nsl_kdd.SERVICES.index(s) for s in services])
    np.testing.assert_array_equal(x[np.arange(300), columns], 1)
    np.testing.assert_array_equal(bundle.train.y, (bundle.train.extras["attack"] != "normal").astype(int))
    assert 0.35 < bundle.train.y.mean() < 0.6
    assert len(per_partition_column_order(bundle.train, np.arange(50))) == 122


def test_n_baiot_devices_and_attack_share():
    bundle = GENERATORS["synthetic_n_baiot"](2000, seed=0)

    assert bundle.group_names == list(n_baiot.DEVICES)
    assert set(np.unique(bundle.train.groups)) == set(range(9))
    assert 0.75 < bundle.train.y.mean() < 0.85
    assert abs(bundle.train.x.mean()) < 1e-3 and abs(bundle.train.x.std() - 1) < 1e-2  # standardised
    ennio = bundle.train.groups == n_baiot.DEVICES.index("Ennio_Doorbell")
    assert not any(a.startswith("mirai") for a in bundle.train.extras["attack"][ennio])
    np.testing.assert_array_equal(bundle.train.y, (bundle.train.extras["attack"] != "benign").astype(int))


def test_n_baiot_balance():
    bundle = GENERATORS["synthetic_n_baiot"](2000, seed=0, balance=True)

    for split in (bundle.train, bundle.test):
        for device in range(9):
            y = split.y[split.groups == device]
            assert (y == 0).sum() == (y == 1).sum()
    assert bundle.source["train_samples"] == len(bundle.train) < 2000


def test_bad_sizes():
    with pytest.raises(DatasetError, match="n_train >= 1"):
        GENERATORS["synthetic_cifar10"](0)
