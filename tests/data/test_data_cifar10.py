"""CIFAR-10 loader: npz and python-batch layouts, pixel scaling, natural clients, errors."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.data import DatasetError, DatasetNotFoundError, load_cifar10
from fltrust.data import cifar10


def write_npz(path, *, clients=True, drop=None, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {
        "x_train": rng.integers(0, 256, size=(6, 32, 32, 3), dtype=np.uint8),
        "y_train": np.array([0, 1, 2, 3, 4, 9]),
        "x_test": rng.integers(0, 256, size=(3, 32, 32, 3), dtype=np.uint8),
        "y_test": np.array([5, 6, 7]),
    }
    if clients:
        arrays["client_train"] = np.array([7, 3, 7, 3, 12, 7])
        arrays["client_test"] = np.array([12, 3, 40])
    arrays.pop(drop, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return arrays


def test_normalise_is_totensor_then_normalize_half():
    pixels = np.array([0, 51, 255], dtype=np.uint8)

    out = cifar10.normalise(pixels)

    np.testing.assert_allclose(out, [-1.0, 51 / 255 / 0.5 - 1.0, 1.0], rtol=0, atol=1e-7)
    assert out.dtype == np.float32


def test_npz_layout_nhwc_to_nchw_with_natural_clients(tmp_path):
    arrays = write_npz(tmp_path / "cifar10" / "tiny.npz")
    arrays["x_train"][0, 1, 2, 0] = 255  # image 0, row 1, column 2: red 255, blue 0
    arrays["x_train"][0, 1, 2, 2] = 0
    np.savez(tmp_path / "cifar10" / "tiny.npz", **arrays)

    bundle = load_cifar10(tmp_path / "cifar10")

    x = bundle.train.x
    assert x.shape == (6, 3, 32, 32) and x.dtype == np.float32 and x.flags.c_contiguous
    assert x[0, 0, 1, 2] == 1.0 and x[0, 2, 1, 2] == -1.0
    np.testing.assert_allclose(x, cifar10.normalise(arrays["x_train"].transpose(0, 3, 1, 2)))
    np.testing.assert_array_equal(bundle.train.y, arrays["y_train"])
    # client ids 3, 7, 12, 40 -> groups 0..3 shared by train and test
    assert bundle.group_names == ["client_3", "client_7", "client_12", "client_40"]
    np.testing.assert_array_equal(bundle.train.groups, [1, 0, 1, 0, 2, 1])
    np.testing.assert_array_equal(bundle.test.groups, [2, 0, 3])
    assert (bundle.num_classes, bundle.input_shape) == (10, (3, 32, 32))
    assert bundle.class_names[0] == "airplane" and bundle.class_names[9] == "truck"
    assert bundle.source["layout"] == "npz" and bundle.source["files"][0]["path"] == "tiny.npz"


def test_npz_without_client_ids_has_no_groups(tmp_path):
    write_npz(tmp_path / "cifar10" / "plain.npz", clients=False)

    bundle = load_cifar10(tmp_path / "cifar10")

    assert bundle.train.groups is None and bundle.group_names is None


def test_npz_missing_array_is_named(tmp_path):
    write_npz(tmp_path / "cifar10" / "cifar10_subset.npz", drop="y_train")

    with pytest.raises(DatasetError, match=r"cifar10_subset\.npz: missing array 'y_train'"):
        load_cifar10(tmp_path / "cifar10")


def test_npz_wrong_pixel_layout_is_explained(tmp_path):
    arrays = write_npz(tmp_path / "cifar10" / "bad.npz", clients=False)
    arrays["x_train"] = arrays["x_train"].transpose(0, 3, 1, 2).copy()  # NCHW instead of NHWC
    np.savez(tmp_path / "cifar10" / "bad.npz", **arrays)

    with pytest.raises(DatasetError, match=r"x_train must be uint8 \(N, 32, 32, 3\) NHWC"):
        load_cifar10(tmp_path / "cifar10")


def test_python_batches_layout(tmp_path, mk):
    raw = mk.write_cifar_batches(tmp_path / "cifar10" / "cifar-10-batches-py")

    bundle = load_cifar10(tmp_path / "cifar10")

    assert (len(bundle.train), len(bundle.test)) == (10, 3)
    # b'data' rows are channel-major: 1024 red, 1024 green, 1024 blue values
    assert bundle.train.x[0, 1, 0, 0] == pytest.approx(raw["x_train"][0, 1024] / 255 / 0.5 - 1, abs=1e-6)
    assert bundle.train.x[3, 2, 31, 31] == pytest.approx(raw["x_train"][3, 3071] / 255 / 0.5 - 1, abs=1e-6)
    np.testing.assert_array_equal(bundle.train.y, raw["y_train"])
    np.testing.assert_array_equal(bundle.test.y, raw["y_test"])
    assert bundle.source["layout"] == "python_batches" and len(bundle.source["files"]) == 6
    assert bundle.train.groups is None


def test_batches_directly_in_the_folder_and_preferred_over_npz(tmp_path, mk):
    mk.write_cifar_batches(tmp_path / "cifar10")
    write_npz(tmp_path / "cifar10" / "other.npz")

    bundle = load_cifar10(tmp_path / "cifar10")

    assert bundle.source["layout"] == "python_batches"
    assert load_cifar10(tmp_path / "cifar10", train_files=["other.npz"]).source["layout"] == "npz"


def test_chosen_batches_and_a_corrupt_batch(tmp_path, mk):
    mk.write_cifar_batches(tmp_path / "cifar10" / "cifar-10-batches-py", per_batch=2)

    bundle = load_cifar10(tmp_path / "cifar10", train_files=["data_batch_1", "data_batch_2"])
    assert len(bundle.train) == 4

    (tmp_path / "cifar10" / "cifar-10-batches-py" / "data_batch_2").write_bytes(b"not a pickle")
    with pytest.raises(DatasetError, match="data_batch_2: sha256 [0-9a-f]{64} differs from the official data_batch_2's"):
        load_cifar10(tmp_path / "cifar10")


def test_nothing_there_says_what_is_expected(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"data_batch_1.*test_batch.*\.npz"):
        load_cifar10(tmp_path / "cifar10")


def test_several_npz_parts_are_concatenated_in_name_order(tmp_path):
    b = write_npz(tmp_path / "cifar10" / "b_part2.npz", seed=1)
    a = write_npz(tmp_path / "cifar10" / "a_part1.npz", seed=0)

    bundle = load_cifar10(tmp_path / "cifar10")

    assert (len(bundle.train), len(bundle.test)) == (12, 6)
    np.testing.assert_allclose(bundle.train.x[:6], cifar10.normalise(a["x_train"].transpose(0, 3, 1, 2)))
    np.testing.assert_allclose(bundle.train.x[6:], cifar10.normalise(b["x_train"].transpose(0, 3, 1, 2)))
    # client ids are global: client 7 of both parts is one natural client
    assert bundle.group_names == ["client_3", "client_7", "client_12", "client_40"]
    np.testing.assert_array_equal(bundle.train.groups, [1, 0, 1, 0, 2, 1] * 2)
    assert [f["path"] for f in bundle.source["files"]] == ["a_part1.npz", "b_part2.npz"]


def test_npz_parts_can_be_chosen_and_a_part_may_have_an_empty_split(tmp_path):
    write_npz(tmp_path / "cifar10" / "a.npz")
    fill = write_npz(tmp_path / "cifar10" / "fill.npz", seed=2)
    fill["x_test"], fill["y_test"], fill["client_test"] = fill["x_test"][:0], fill["y_test"][:0], fill["client_test"][:0]
    np.savez(tmp_path / "cifar10" / "fill.npz", **fill)
    write_npz(tmp_path / "cifar10" / "other.npz")

    bundle = load_cifar10(tmp_path / "cifar10", train_files=["a.npz", "fill.npz"])

    assert (len(bundle.train), len(bundle.test)) == (12, 3)


def test_npz_parts_must_agree_on_client_ids(tmp_path):
    write_npz(tmp_path / "cifar10" / "a.npz")
    write_npz(tmp_path / "cifar10" / "b.npz", clients=False)

    with pytest.raises(DatasetError, match=r"b\.npz: no client_train/client_test while other npz parts have them"):
        load_cifar10(tmp_path / "cifar10")


@pytest.mark.realdata
def test_real_cifar10_all_parts(mk):
    folder = mk.real_folder("cifar10", "cifar10_subset.npz")

    bundle = load_cifar10(folder)

    # data/PROVENANCE.md#cifar10: 59,799 distinct images in three parts, 100 clients (75 has train data again)
    assert len(bundle.train) + len(bundle.test) == 59_799
    assert (len(bundle.train), len(bundle.test)) == (19_981 + 23_849 + 934, 6_685 + 8_350)
    assert bundle.train.x.min() == -1.0 and bundle.train.x.max() == 1.0
    assert len(bundle.group_names) == 100
    counts = np.bincount(np.concatenate([bundle.train.y, bundle.test.y]), minlength=10).tolist()
    assert counts == [6000, 5999 + 1, 6000, 5999 + 1, 5993 + 6, 5994 + 5, 5992 + 8, 5981 + 11, 4907 + 902, 6000]


@pytest.mark.realdata
def test_real_cifar10_first_part_alone(mk):
    folder = mk.real_folder("cifar10", "cifar10_subset.npz")

    bundle = load_cifar10(folder, train_files=["cifar10_subset.npz"])

    assert (len(bundle.train), len(bundle.test)) == (19_981, 6_685)
    assert len(bundle.group_names) == 50
    counts = np.bincount(bundle.train.y, minlength=10).tolist()
    assert counts == [1201, 1982, 2081, 2484, 1589, 2367, 2734, 2168, 1968, 1407]  # data/PROVENANCE.md#cifar10


# -- the python batches are unpickled with a restricted unpickler ---------------------------------

def py2_batch(data: np.ndarray, labels: list[int]) -> bytes:
    """The bytes of an official batch: a Python 2 cPickle (protocol 2) of a dict of py2 str keys,
    whose array goes through ``numpy.core.multiarray._reconstruct`` (hand-assembled opcodes; a
    Python 3 pickler writes neither py2 strings nor the ``numpy.core`` path)."""
    import struct

    def string(value: bytes) -> bytes:  # SHORT_BINSTRING / BINSTRING: py2 str, bytes under encoding="bytes"
        return (b"U" + bytes([len(value)]) if len(value) < 256 else b"T" + struct.pack("<i", len(value))) + value

    def integer(value: int) -> bytes:  # BININT1 / BININT
        return b"K" + bytes([value]) if 0 <= value < 256 else b"J" + struct.pack("<i", value)

    dtype = b"cnumpy\ndtype\n" + string(b"u1") + integer(0) + integer(1) + b"\x87R" + (
        b"(" + integer(3) + string(b"|") + b"NNN" + integer(-1) + integer(-1) + integer(0) + b"tb")
    array = (b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + integer(0) + b"\x85" + string(b"b")
             + b"\x87R(" + integer(1) + integer(data.shape[0]) + integer(data.shape[1]) + b"\x86" + dtype
             + b"\x89" + string(np.ascontiguousarray(data).tobytes()) + b"tb")
    items = (string(b"batch_label") + string(b"training batch 1 of 5") + string(b"labels") + b"](" +
             b"".join(integer(v) for v in labels) + b"e" + string(b"data") + array)
    return b"\x80\x02}(" + items + b"u."


def test_official_batches_load_through_the_restricted_unpickler(tmp_path, fresh_cache, official_test_batches):
    from fltrust.data.cache import file_sha256

    import pickle

    rng = np.random.default_rng(3)
    folder = tmp_path / "cifar10" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    x = rng.integers(0, 256, size=(12, 3072), dtype=np.uint8)
    y = [int(v) for v in rng.integers(0, 10, size=12)]
    for i, name in enumerate(cifar10.TRAIN_BATCHES + cifar10.TEST_BATCHES):
        (folder / name).write_bytes(py2_batch(x[2 * i:2 * i + 2], y[2 * i:2 * i + 2]))
        official_test_batches[name] = file_sha256(folder / name)  # these stand in for the official files
    assert pickle.loads((folder / "test_batch").read_bytes(), encoding="bytes")[b"labels"] == y[10:]

    bundle = load_cifar10(tmp_path / "cifar10")

    np.testing.assert_array_equal(bundle.train.y, y[:10])
    np.testing.assert_array_equal(bundle.test.y, y[10:])
    assert bundle.train.x[9, 2, 31, 31] == pytest.approx(x[9, 3071] / 255 / 0.5 - 1, abs=1e-6)


class PlantedPayload:
    """What an attacker puts in a batch: unpickling it runs a shell command that creates ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch '{self.marker}'",))


@pytest.mark.parametrize("where", ["payload", "labels"])
def test_a_planted_batch_is_one_data_error_and_never_runs(tmp_path, mk, fresh_cache, where):
    import pickle

    from fltrust.data import dataset_info

    folder = tmp_path / "root" / "cifar10" / "cifar-10-batches-py"
    mk.write_cifar_batches(folder)
    marker = tmp_path / "payload-ran"
    batch = {b"data": np.zeros((2, 3072), np.uint8), b"labels": [1, 2]}
    if where == "payload":
        batch[b"extra"] = PlantedPayload(marker)
    else:
        batch[b"labels"] = PlantedPayload(marker)
    (folder / "data_batch_3").write_bytes(pickle.dumps(batch))

    # the planted file is not the official one: refused by its checksum, before it is unpickled
    with pytest.raises(DatasetError, match=r"data_batch_3: sha256 [0-9a-f]{64} differs from the official "
                                           r"data_batch_3's .*only the official files are read"):
        load_cifar10(tmp_path / "root" / "cifar10")
    entry = {e["name"]: e for e in dataset_info(tmp_path / "root")}["cifar10"]  # fltrust data info
    assert entry["found"] is False and "data_batch_3: sha256" in entry["problem"]
    assert not marker.exists()

    # and were its checksum listed as official, the restricted unpickler still refuses it
    from fltrust.data.cache import file_sha256

    cifar10.OFFICIAL_SHA256["data_batch_3"] = file_sha256(folder / "data_batch_3")
    with pytest.raises(DatasetError) as info:
        load_cifar10(tmp_path / "root" / "cifar10")
    assert str(info.value) == (f"{folder / 'data_batch_3'}: not a CIFAR-10 python batch: it references posix.system, "
                               "which an official batch never does; it was refused, so nothing in the file ran")
    assert not marker.exists()


def test_a_batch_that_is_not_the_official_file_is_refused_before_unpickling(tmp_path, mk, fresh_cache,
                                                                           official_test_batches):
    from fltrust.config import DataConfig
    from fltrust.data import load_dataset

    mk.write_cifar_batches(tmp_path / "cifar10" / "cifar-10-batches-py")
    official_test_batches["data_batch_1"] = "54636561a3ce25bd3e19253c6b0d8538147b0ae398331ac4a2d86c6d987368cd"

    with pytest.raises(DatasetError, match=r"cifar-10-batches-py/data_batch_1: sha256 [0-9a-f]{64} differs from the "
                                           r"official data_batch_1's "
                                           r"54636561a3ce25bd3e19253c6b0d8538147b0ae398331ac4a2d86c6d987368cd"):
        load_dataset(DataConfig(name="cifar10", root=str(tmp_path)))
    # a batch under a name no official file has is refused too
    mk.write_cifar_batch(tmp_path / "cifar10" / "cifar-10-batches-py" / "my_batch", np.zeros((1, 3072), np.uint8), [0])
    del official_test_batches["my_batch"]  # the writer lists every batch it writes as official
    with pytest.raises(DatasetError, match="'my_batch' is not an official batch name"):
        load_cifar10(tmp_path / "cifar10", train_files=["my_batch"])
