"""FEMNIST loader: LEAF JSON shards, writers as natural clients, errors."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.data import DatasetError, DatasetNotFoundError, load_femnist
from fltrust.data import femnist


def images(n: int, value: float) -> np.ndarray:
    x = np.full((n, 784), value)
    x[:, 0] = np.arange(n) / 10  # a distinct first pixel per image
    return x


@pytest.fixture
def tiny(tmp_path, mk):
    """Two shards (k = 2 and k = 10) with writers f_a, f_b, f_c; f_d only in test."""
    folder = tmp_path / "femnist"
    mk.write_json(
        folder / "train" / "all_data_10_niid_train_9.json", mk.leaf_shard({"f_c": (images(2, 0.3), [61, 0])})
    )
    mk.write_json(
        folder / "train" / "all_data_2_niid_train_9.json",
        mk.leaf_shard({"f_a": (images(3, 1.0), [0, 10, 36]), "f_b": (images(1, 0.5), [9])}),
    )
    mk.write_json(folder / "test" / "all_data_10_niid_test_9.json", mk.leaf_shard({"f_c": (images(1, 0.2), [5])}))
    mk.write_json(
        folder / "test" / "all_data_2_niid_test_9.json",
        mk.leaf_shard({"f_a": (images(1, 0.9), [35]), "f_b": (images(1, 0.4), [1]), "f_d": (images(1, 0.1), [2])}),
    )
    return folder


def test_class_names():
    assert len(femnist.CLASS_NAMES) == 62
    assert (femnist.CLASS_NAMES[9], femnist.CLASS_NAMES[10], femnist.CLASS_NAMES[35], femnist.CLASS_NAMES[36]) == (
        "9", "A", "Z", "a",
    )


def test_leaf_shards_become_writer_groups(tiny):
    bundle = load_femnist(tiny)

    # natural shard order: all_data_2 before all_data_10; writers numbered by first appearance
    assert bundle.group_names == ["f_a", "f_b", "f_c", "f_d"]
    np.testing.assert_array_equal(bundle.train.groups, [0, 0, 0, 1, 2, 2])
    np.testing.assert_array_equal(bundle.test.groups, [0, 1, 3, 2])
    np.testing.assert_array_equal(bundle.train.y, [0, 10, 36, 9, 61, 0])
    np.testing.assert_array_equal(bundle.test.y, [35, 1, 2, 5])
    assert bundle.train.x.shape == (6, 1, 28, 28) and bundle.train.x.dtype == np.float32
    # pixels are kept as stored: image 1 of f_a has first pixel 0.1 and the rest 1.0
    assert bundle.train.x[1, 0, 0, 0] == pytest.approx(0.1) and bundle.train.x[1, 0, 27, 27] == 1.0
    assert (bundle.num_classes, bundle.input_shape) == (62, (1, 28, 28))
    assert [r["path"] for r in bundle.source["train_files"]] == [
        "train/all_data_2_niid_train_9.json",
        "train/all_data_10_niid_train_9.json",
    ]


def test_chosen_shards(tiny):
    bundle = load_femnist(
        tiny, train_files=["train/all_data_10_niid_train_9.json"], test_files=["test/all_data_10_niid_test_9.json"]
    )

    assert bundle.group_names == ["f_c"]
    assert (len(bundle.train), len(bundle.test)) == (2, 1)


def test_missing_split_folder_is_explained(tmp_path, mk):
    mk.write_json(tmp_path / "femnist" / "train" / "a.json", mk.leaf_shard({"u": (images(1, 0.5), [0])}))

    with pytest.raises(DatasetNotFoundError, match=r"femnist/test: no LEAF \*\.json files found"):
        load_femnist(tmp_path / "femnist")


def test_wrong_image_size_names_file_and_user(tiny, mk):
    bad = mk.leaf_shard({"f_x": (np.zeros((2, 783)), [0, 1])})
    mk.write_json(tiny / "train" / "all_data_3_niid_train_9.json", bad)

    with pytest.raises(DatasetError, match=r"all_data_3_niid_train_9\.json: user 'f_x' x must be a list of 784"):
        load_femnist(tiny)


def test_inconsistent_counts_and_bad_json(tiny, mk):
    shard = mk.leaf_shard({"f_x": (images(2, 0.5), [0, 1])})
    shard["num_samples"] = [3]
    mk.write_json(tiny / "train" / "all_data_3_niid_train_9.json", shard)
    with pytest.raises(DatasetError, match="num_samples 3; they must agree"):
        load_femnist(tiny)

    (tiny / "train" / "all_data_3_niid_train_9.json").write_text("{not json")
    with pytest.raises(DatasetError, match="not readable LEAF JSON"):
        load_femnist(tiny)


@pytest.mark.realdata
def test_real_femnist_subset(mk):
    folder = mk.real_folder("femnist", "train", "test")

    bundle = load_femnist(folder)

    assert len(bundle.group_names) == 110
    assert (len(bundle.train), len(bundle.test)) == (14_697, 1_695)
    assert set(np.unique(bundle.train.groups)) == set(np.unique(bundle.test.groups)) == set(range(110))
    assert len(np.unique(bundle.train.y)) == len(np.unique(bundle.test.y)) == 62
    assert bundle.train.x.min() >= 0 and bundle.train.x.max() <= 1
