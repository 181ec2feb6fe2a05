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

    with pytest.raises(DatasetNotFoundError, match=r"femnist/test: no LEAF \*\.json or \*\.json\.gz files found"):
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


def write_gz(path, obj):
    import gzip
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(obj, handle)
    return path


def test_gzipped_shards_and_one_copy_per_writer(tiny, mk):
    # a second LEAF run ("r2_", gzipped) holds f_a with 5 samples (more than the 4 of run 1), f_b with 2
    # (equal to run 1: the tie goes to the first file in sorted path order, run 1's) and a new writer f_e
    r2_train = {"f_a": (images(4, 0.7), [1, 2, 3, 4]), "f_b": (images(1, 0.6), [7]), "f_e": (images(1, 0.8), [8])}
    r2_test = {"f_a": (images(1, 0.6), [5]), "f_b": (images(1, 0.6), [6]), "f_e": (images(1, 0.8), [9])}
    write_gz(tiny / "train" / "r2_all_data_0_niid_train_9.json.gz", mk.leaf_shard(r2_train))
    write_gz(tiny / "test" / "r2_all_data_0_niid_test_9.json.gz", mk.leaf_shard(r2_test))

    bundle = load_femnist(tiny)

    names = bundle.group_names
    assert sorted(names) == ["f_a", "f_b", "f_c", "f_d", "f_e"]
    per_writer = {w: (int((bundle.train.groups == names.index(w)).sum()), int((bundle.test.groups == names.index(w)).sum()))
                  for w in names}
    assert per_writer == {"f_a": (4, 1), "f_b": (1, 1), "f_c": (2, 1), "f_d": (0, 1), "f_e": (1, 1)}
    fa = bundle.train.y[bundle.train.groups == names.index("f_a")]
    np.testing.assert_array_equal(fa, [1, 2, 3, 4])  # run 2's copy of f_a
    fb = bundle.test.y[bundle.test.groups == names.index("f_b")]
    np.testing.assert_array_equal(fb, [1])  # run 1's copy of f_b (tie)
    assert bundle.source["duplicate_copies_dropped"] == 2
    assert len(bundle.train) == 8 and len(bundle.test) == 5


def test_copy_key_pairs_train_and_test_files():
    from pathlib import Path

    assert femnist.copy_key(Path("a_all_data_1_niid_train_9.json")) == femnist.copy_key(
        Path("a_all_data_1_niid_test_9.json.gz")
    )
    assert femnist.copy_key(Path("a_all_data_1_niid_train_9.json")) != femnist.copy_key(
        Path("b_all_data_1_niid_train_9.json")
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update(num_samples=s["num_samples"][:1]),
         r"'num_samples' must list one count per entry of 'users' \(1 counts for 2 users\)"),
        (lambda s: s.update(users=["f_x", "f_x", "f_y"], num_samples=[2, 2, 1]), r"user 'f_x' is listed 2 times"),
        (lambda s: s["user_data"]["f_x"].update(y=[3.7, 1]), r"user 'f_x' row 0: label 3.7 is not an integer"),
        (lambda s: s["user_data"]["f_y"]["x"][0].__setitem__(5, float("nan")), r"user 'f_y' row 0: pixels must be finite"),
        (lambda s: s["user_data"]["f_x"]["x"][1].__setitem__(0, 1e30),
         r"user 'f_x' row 1: pixels must be finite and lie in \[0, 1\].*1e\+30"),
        (lambda s: s["user_data"]["f_x"].update(y=[0, 62]), r"user 'f_x' row 1: label 62 must lie in 0..61"),
        # before: writers only in user_data were dropped silently (LEAF's own reader trains on them)
        (lambda s: s["user_data"].update(f_z={"x": [], "y": []}, f_w={"x": [], "y": []}),
         r"user_data holds 2 writer\(s\) missing from 'users' \('f_z', 'f_w'\)"),
        (lambda s: s.update(user_data=[1, 2]), r"'user_data' must map each writer id"),  # before: AttributeError, exit 70
        (lambda s: s.update(users=[["f_x"], "f_y"]), r"'users' must list writer ids \(strings\)"),  # before: TypeError
    ],
)
def test_malformed_shard_is_one_error_naming_file_user_and_row(tiny, mk, change, message):
    shard = mk.leaf_shard({"f_x": (images(2, 0.5), [0, 1]), "f_y": (images(1, 0.5), [2])})
    change(shard)
    path = tiny / "train" / "all_data_3_niid_train_9.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    import json

    path.write_text(json.dumps(shard))  # json writes a NaN pixel as the bare token NaN, which json.load reads back

    with pytest.raises(DatasetError, match=r"all_data_3_niid_train_9\.json: " + message):
        load_femnist(tiny)


def test_a_gzip_bomb_is_refused_before_it_fills_memory(tiny, monkeypatch):
    # before: a 2.4 MB .json.gz that inflates to 2 GiB was read whole (peak 5 GB)
    import gzip
    import tracemalloc

    monkeypatch.setattr(femnist, "MAX_DECODED_BYTES", 4 * 1024**2)
    bomb = tiny / "train" / "all_data_3_niid_train_9.json.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as handle:  # 64 MiB of spaces, about 90 KB on disk
        handle.write(b"{" + b" " * (1 << 20))
        for _ in range(63):
            handle.write(b" " * (1 << 20))
    assert bomb.stat().st_size < 1024**2

    tracemalloc.start()
    try:
        with pytest.raises(DatasetError, match=r"all_data_3_niid_train_9\.json\.gz: inflates to more than 4,194,304 "
                                               r"bytes \(femnist\.MAX_DECODED_BYTES\); refused as a possible gzip bomb"):
            load_femnist(tiny)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024**2  # the cap plus a few chunks, not the 64 MiB the file inflates to


@pytest.mark.realdata
def test_real_femnist_three_leaf_runs(mk):
    folder = mk.real_folder("femnist", "train", "test")

    bundle = load_femnist(folder)

    # data/PROVENANCE.md#femnist: flic + slz + adarsh = 311 distinct writers. Keeping each writer's
    # largest copy gives 42,531 / 4,883 samples; 42,167 / 4,842 would be the totals of
    # a priority rule (flic > slz > adarsh), which keeps some truncated copies (f2261_76: 28 of 173).
    assert len(bundle.group_names) == 311
    assert (len(bundle.train), len(bundle.test)) == (42_531, 4_883)
    assert bundle.source["duplicate_copies_dropped"] == 13
    assert set(np.unique(bundle.train.groups)) == set(np.unique(bundle.test.groups)) == set(range(311))
    assert len(np.unique(bundle.train.y)) == len(np.unique(bundle.test.y)) == 62
    assert bundle.train.x.min() >= 0 and bundle.train.x.max() <= 1
    f2261 = bundle.group_names.index("f2261_76")
    assert int((bundle.train.groups == f2261).sum()) + int((bundle.test.groups == f2261).sum()) == 173


@pytest.mark.realdata
def test_real_femnist_first_run_alone(mk):
    folder = mk.real_folder("femnist", "train", "test")
    train = sorted(f"train/{p.name}" for p in (folder / "train").glob("all_data_*.json"))
    test = sorted(f"test/{p.name}" for p in (folder / "test").glob("all_data_*.json"))

    bundle = load_femnist(folder, train_files=train, test_files=test)

    assert len(bundle.group_names) == 110
    assert (len(bundle.train), len(bundle.test)) == (14_697, 1_695)


# -- TensorFlow Federated's federated EMNIST h5 files ------------------------------------------

@pytest.fixture
def h5py_module():
    return pytest.importorskip("h5py", reason="h5py is not installed (pinned in requirements.txt); the TFF h5 tests need it")


@pytest.fixture
def tff(tmp_path, mk, h5py_module):
    """TFF's fed_emnist_{train,test}.h5 with writers f_b, f_a, f_c (written out of order)."""
    folder = tmp_path / "tff" / "femnist"
    mk.write_tff_h5(folder / "fed_emnist_train.h5", {
        "f_b": (images(2, 0.25), [61, 3]), "f_a": (images(3, 1.0), [0, 10, 36]), "f_c": (images(1, 0.5), [9]),
    })
    mk.write_tff_h5(folder / "fed_emnist_test.h5", {
        "f_c": (images(1, 0.75), [35]), "f_a": (images(1, 0.125), [1]), "f_b": (images(1, 0.0), [2]),
    })
    return folder


def test_tff_h5_files_are_read_as_stored(tff):
    bundle = load_femnist(tff)

    # writers in sorted id order (as TFF lists them), the same index in train and test
    assert bundle.group_names == ["f_a", "f_b", "f_c"]
    np.testing.assert_array_equal(bundle.train.groups, [0, 0, 0, 1, 1, 2])
    np.testing.assert_array_equal(bundle.test.groups, [0, 1, 2])
    np.testing.assert_array_equal(bundle.train.y, [0, 10, 36, 61, 3, 9])
    np.testing.assert_array_equal(bundle.test.y, [1, 2, 35])
    assert bundle.train.x.shape == (6, 1, 28, 28) and bundle.train.x.dtype == np.float32
    # pixels unchanged: f_b's second image has first pixel 0.1 (float32) and background 0.25
    assert bundle.train.x[4, 0, 0, 0] == np.float32(0.1) and bundle.train.x[4, 0, 27, 27] == np.float32(0.25)
    assert bundle.test.x[0, 0, 5, 5] == np.float32(0.125)
    assert [r["path"] for r in bundle.source["train_files"]] == ["fed_emnist_train.h5"]
    assert bundle.source["layout"] == "tff_h5" and bundle.source["duplicate_copies_dropped"] == 0


def test_tff_h5_labels_stored_as_a_column_and_chosen_files(tff, mk):
    mk.write_tff_h5(tff / "fed_emnist_test.h5", {"f_a": (images(2, 0.5), [7, 8])}, label_column=True)

    bundle = load_femnist(tff, train_files=["fed_emnist_train.h5"], test_files=["fed_emnist_test.h5"])

    np.testing.assert_array_equal(bundle.test.y, [7, 8])
    np.testing.assert_array_equal(bundle.test.groups, [0, 0])


def test_leaf_shards_and_tff_h5_keep_one_copy_per_writer(tiny, mk, h5py_module):
    # the h5 pair holds f_a with 6 samples (LEAF: 4) and f_b with 1 (LEAF: 2), and a new writer f_z
    mk.write_tff_h5(tiny / "fed_emnist_train.h5", {"f_a": (images(5, 0.7), [1, 2, 3, 4, 5]), "f_z": (images(1, 0.7), [6])})
    mk.write_tff_h5(tiny / "fed_emnist_test.h5", {"f_a": (images(1, 0.7), [7]), "f_b": (images(1, 0.7), [8]),
                                                  "f_z": (images(1, 0.7), [9])})

    bundle = load_femnist(tiny)

    names = bundle.group_names
    assert names == ["f_b", "f_c", "f_a", "f_z", "f_d"]  # f_a's kept copy is read after the LEAF shards
    np.testing.assert_array_equal(bundle.train.y[bundle.train.groups == names.index("f_a")], [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(bundle.test.y[bundle.test.groups == names.index("f_b")], [1])  # LEAF's copy
    assert bundle.source["duplicate_copies_dropped"] == 2 and bundle.source["layout"] == "leaf+tff_h5"
    assert (len(bundle.train), len(bundle.test)) == (1 + 2 + 5 + 1, 1 + 1 + 1 + 1 + 1)


def test_check_tff_h5_counts_writers_and_samples(tff):
    assert femnist.check_tff_h5(tff / "fed_emnist_train.h5") == {"writers": 3, "samples": 6}


def h5py_external(filename, path):
    import h5py

    return h5py.ExternalLink(filename, path)


def h5py_soft(path):
    import h5py

    return h5py.SoftLink(path)


def _bad_h5(h5py, path, change):
    with h5py.File(path, "w") as handle:
        group = handle.create_group("examples").create_group("f_x")
        group.create_dataset("label", data=np.array([0, 1], dtype=np.int32))
        group.create_dataset("pixels", data=np.full((2, 28, 28), 0.5, dtype=np.float32))
        change(handle, group)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h, g: h.move("examples", "data"), r"no group 'examples'; expected TensorFlow Federated's"),
        (lambda h, g: g.move("label", "labels"), r"examples/f_x lacks the dataset 'pixels' or 'label'"),
        (lambda h, g: (g.__delitem__("pixels"), g.create_dataset("pixels", data=np.zeros((2, 27, 28)))),
         r"user 'f_x' pixels must be n x 28 x 28 images, got shape \(2, 27, 28\)"),
        (lambda h, g: (g.__delitem__("label"), g.create_dataset("label", data=np.array([b"a", b"b"]))),
         r"user 'f_x' pixels and label must be numeric"),
        (lambda h, g: (g.__delitem__("label"), g.create_dataset("label", data=np.array([0, 1, 2]))),
         r"user 'f_x' has 2 images but labels of shape \(3,\)"),
        (lambda h, g: g["label"].__setitem__(1, 62), r"user 'f_x' row 1: label 62 must lie in 0..61"),
        (lambda h, g: g["pixels"].__setitem__((1, 3, 3), 1.5),
         r"user 'f_x' row 1: pixels must be finite and lie in \[0, 1\].*1\.5"),
        # before: a KeyError from h5py (exit 70); a link reads another file or object
        (lambda h, g: h["examples"].__setitem__("f_y", h5py_external("/etc/other.h5", "/x")),
         r"examples/f_y is a link to /etc/other.h5:/x, not data stored in the file"),
        (lambda h, g: (g.__delitem__("label"), g.__setitem__("label", h5py_soft("/examples/f_x/pixels"))),
         r"examples/f_x/label is a link to /examples/f_x/pixels"),
        (lambda h, g: (g.__delitem__("label"), g.create_dataset("label", shape=(2,), dtype="i4", external=[("lab.bin", 0, 8)])),
         r"examples/f_x/label keeps its data in other files \(external storage\)"),
        # before: a MemoryError (exit 70) reading 10^8 declared images from a file of a few KB
        (lambda h, g: (g.__delitem__("pixels"), g.__delitem__("label"),
                       g.create_dataset("pixels", shape=(10**8, 28, 28), dtype="f4", chunks=(1, 28, 28)),
                       g.create_dataset("label", shape=(10**8,), dtype="i4", chunks=(1000,))),
         r"user 'f_x' declares 100,000,000 images, more than 85,598 \(femnist\.MAX_DECODED_BYTES"),
    ],
)
def test_malformed_tff_h5_is_one_error_naming_file_and_writer(tff, h5py_module, change, message):
    _bad_h5(h5py_module, tff / "fed_emnist_train.h5", change)

    with pytest.raises(DatasetError, match=r"fed_emnist_train\.h5: " + message):
        load_femnist(tff)


def test_a_file_that_is_not_hdf5_is_unreadable(tff):
    (tff / "fed_emnist_test.h5").write_bytes(b"not an hdf5 file")

    with pytest.raises(DatasetError, match=r"fed_emnist_test\.h5: not a readable HDF5 file .*re-fetch it"):
        load_femnist(tff)


def test_without_h5py_the_h5_path_says_what_to_install(tmp_path, monkeypatch):
    import sys

    folder = tmp_path / "femnist"
    folder.mkdir()
    for name in femnist.TFF_H5_FILES.values():
        (folder / name).write_bytes(b"")
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py now raises ImportError

    with pytest.raises(DatasetError,
                       match=r"fed_emnist_train\.h5: reading TensorFlow Federated's h5 files needs h5py.*h5py==3\.16\.0"):
        load_femnist(folder)


def test_fltrust_data_imports_without_h5py():
    import subprocess
    import sys

    code = ("import sys; sys.modules['h5py'] = None; import fltrust.data, fltrust.data.fetch, fltrust.data.femnist; "
            "print('imported')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)

    assert result.returncode == 0 and result.stdout.strip() == "imported", result.stderr


def test_missing_files_name_both_layouts(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"femnist/train: no LEAF .* and no .*fed_emnist_train\.h5"):
        load_femnist(tmp_path / "femnist")
