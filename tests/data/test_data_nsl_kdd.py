"""NSL-KDD loader: parsing, scaling, one-hot order, extras, errors, the authors' column-order bug."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fltrust.data import DatasetError, DatasetNotFoundError, load_nsl_kdd, per_partition_column_order
from fltrust.data import nsl_kdd
from fltrust.data.base import ArraySplit


def col(name: str) -> int:
    return nsl_kdd.FEATURE_NAMES.index(name)


@pytest.fixture
def tiny(tmp_path, mk):
    """Train: 4 rows, test: 2 rows, with hand-picked values."""
    folder = tmp_path / "nsl_kdd"
    mk.write_lines(
        folder / "KDDTrain+.txt",
        [
            mk.kdd_line("tcp", "http", "SF", "normal", src_bytes=100, duration=57715, same_srv_rate=0.5),
            mk.kdd_line("udp", "IRC", "S0", "neptune", src_bytes=300, count=511),
            mk.kdd_line("icmp", "ecr_i", "REJ", "satan", src_bytes=500, hot=101),
            mk.kdd_line("tcp", "aol", "SH", "mystery_attack", src_bytes=500),
        ],
    )
    mk.write_lines(
        folder / "KDDTest+.txt",
        [
            mk.kdd_line("tcp", "private", "REJ", "guess_passwd", src_bytes=700),
            mk.kdd_line("udp", "Z39_50", "OTH", "normal", src_bytes=200),
        ],
    )
    return folder


def test_layout_constants_match_the_spec():
    # Prepare / Execute / Assert: 38 continuous + 3 + 70 + 11 = 122 (fairness spec 6.7, docs/references.md#fairness-6-7)
    assert len(nsl_kdd.CONTINUOUS_COLUMNS) == 38
    assert (len(nsl_kdd.PROTOCOL_TYPES), len(nsl_kdd.SERVICES), len(nsl_kdd.FLAGS)) == (3, 70, 11)
    assert nsl_kdd.NUM_FEATURES == 122 == len(set(nsl_kdd.FEATURE_NAMES))
    assert len(nsl_kdd.FILE_COLUMNS) == 43


def test_fixed_scaling_uses_the_authors_table(tiny):
    bundle = load_nsl_kdd(tiny, scaling="fixed")

    x = bundle.train.x
    assert x.dtype == np.float32 and x.shape == (4, 122)
    assert x[0, col("duration")] == pytest.approx(1.0)  # 57715 / 57715
    assert x[0, col("src_bytes")] == pytest.approx(100 / 1379963888.0)
    assert x[0, col("same_srv_rate")] == pytest.approx(0.5)  # max 1
    assert x[1, col("count")] == pytest.approx(1.0)  # 511 / 511
    assert x[2, col("hot")] == pytest.approx(1.0)  # 101 / 101
    assert bundle.test.x[0, col("src_bytes")] == pytest.approx(700 / 1379963888.0)
    assert bundle.source["scaling"] == "fixed"


def test_fit_train_scaling_is_fitted_on_train_and_clips_test(tiny):
    bundle = load_nsl_kdd(tiny)  # default: fit_train

    # src_bytes train values 100, 300, 500, 500 -> min 100, max 500
    np.testing.assert_allclose(bundle.train.x[:, col("src_bytes")], [0.0, 0.5, 1.0, 1.0])
    # test 700 -> 1.5 clipped to 1; 200 -> 0.25
    np.testing.assert_allclose(bundle.test.x[:, col("src_bytes")], [1.0, 0.25])
    # constant column (num_outbound_cmds is 0 everywhere) stays 0, no division by zero
    assert np.all(bundle.train.x[:, col("num_outbound_cmds")] == 0)
    assert bundle.train.x[:, :38].min() >= 0 and bundle.train.x[:, :38].max() <= 1


def test_one_hot_blocks_use_the_global_order(tiny):
    bundle = load_nsl_kdd(tiny)

    x = bundle.train.x
    # row 1: udp / IRC / S0
    assert x[1, col("protocol_type=udp")] == 1 and col("protocol_type=udp") == 38 + 1
    assert x[1, col("service=IRC")] == 1 and col("service=IRC") == 41 + nsl_kdd.SERVICES.index("IRC")
    assert x[1, col("flag=S0")] == 1 and col("flag=S0") == 111 + 5
    for start, stop in ((38, 41), (41, 111), (111, 122)):
        np.testing.assert_array_equal(x[:, start:stop].sum(axis=1), np.ones(4))
    # the same category has the same column in train and test
    assert bundle.test.x[1, col("service=Z39_50")] == 1


def test_labels_and_extras(tiny):
    bundle = load_nsl_kdd(tiny)

    np.testing.assert_array_equal(bundle.train.y, [0, 1, 1, 1])
    np.testing.assert_array_equal(bundle.test.y, [1, 0])
    assert bundle.train.y.dtype == np.int64
    assert bundle.train.extras["attack"].tolist() == ["normal", "neptune", "satan", "mystery_attack"]
    assert bundle.train.extras["attack_category"].tolist() == ["normal", "DoS", "Probe", "unknown"]
    assert bundle.test.extras["attack_category"].tolist() == ["R2L", "normal"]
    assert bundle.train.extras["service"].tolist() == ["http", "IRC", "ecr_i", "aol"]
    assert (bundle.num_classes, bundle.input_shape, bundle.class_names) == (2, (122,), ["normal", "attack"])
    assert bundle.synthetic is False and bundle.train.groups is None


def test_files_are_concatenated_in_the_given_order(tiny, mk):
    mk.write_lines(tiny / "KDDTrain+_20Percent.txt", [mk.kdd_line("tcp", "smtp", "SF", "normal", src_bytes=1)])

    bundle = load_nsl_kdd(tiny, ["KDDTrain+_20Percent.txt", "KDDTrain+.txt"], ["KDDTest+.txt"])

    assert len(bundle.train) == 5
    assert bundle.train.extras["service"][0] == "smtp"
    assert [r["path"] for r in bundle.source["train_files"]] == ["KDDTrain+_20Percent.txt", "KDDTrain+.txt"]
    assert all(len(r["sha256"]) == 64 and r["bytes"] > 0 for r in bundle.source["train_files"])


def test_short_row_names_file_line_and_field_count(tiny, mk):
    lines = (tiny / "KDDTrain+.txt").read_text().splitlines()
    lines.insert(2, "0,tcp,http,SF,1,2,3,4,5,6,7,8")  # 12 fields on line 3
    mk.write_lines(tiny / "KDDTrain+.txt", lines)

    with pytest.raises(DatasetError, match=r"KDDTrain\+\.txt line 3: expected 43 comma-separated fields .*got 12"):
        load_nsl_kdd(tiny)


def test_long_row_and_non_numeric_field_are_reported(tiny, mk):
    good = mk.kdd_line()
    mk.write_lines(tiny / "KDDTest+.txt", [good, good + ",extra"])
    with pytest.raises(DatasetError, match=r"KDDTest\+\.txt line 2: expected 43 .*got 44"):
        load_nsl_kdd(tiny)

    mk.write_lines(tiny / "KDDTest+.txt", [good, good.replace("0,tcp", "zero,tcp", 1)])
    with pytest.raises(DatasetError, match=r"line 2: field 1 \(duration\) = 'zero' is not a number"):
        load_nsl_kdd(tiny)


def test_unknown_category_is_rejected(tiny, mk):
    mk.write_lines(tiny / "KDDTest+.txt", [mk.kdd_line(service="gopherish")])

    with pytest.raises(DatasetError, match=r"KDDTest\+\.txt line 1: unknown service 'gopherish'"):
        load_nsl_kdd(tiny)


@pytest.mark.parametrize("value", ["inf", "-inf", "Infinity"])
def test_infinite_value_names_file_line_and_field(tiny, mk, value):
    # before: 'inf' parsed as a float and min-max scaling turned the whole column into NaN
    line = mk.kdd_line(src_bytes=7).replace(",7,", f",{value},", 1)
    mk.write_lines(tiny / "KDDTest+.txt", [mk.kdd_line(), "", line])

    with pytest.raises(DatasetError, match=rf"KDDTest\+\.txt line 3: field 5 \(src_bytes\) = '{value}' is not a finite"):
        load_nsl_kdd(tiny)


def test_a_line_that_is_not_utf8_and_an_overlong_value_are_named_in_one_short_line(tiny, mk):
    # before: the codec's error without a line number; a 400-digit value was repeated whole in the message
    (tiny / "KDDTest+.txt").write_bytes(mk.kdd_line().encode() + b"\n" + mk.kdd_line(label="nept\xffune").encode("latin-1"))
    with pytest.raises(DatasetError, match=r"KDDTest\+\.txt line 2: not UTF-8 text \(byte 0xff at column \d+\)"):
        load_nsl_kdd(tiny)

    mk.write_lines(tiny / "KDDTest+.txt", [mk.kdd_line(), mk.kdd_line(src_bytes=7).replace(",7,", f",{'9' * 400},", 1)])
    with pytest.raises(DatasetError, match=r"line 2: field 5 \(src_bytes\) = '9{37}'\.\.\. is not a finite number") as info:
        load_nsl_kdd(tiny)
    assert len(str(info.value)) < 200


def test_nan_names_the_line(tiny, mk):
    # before: "KDDTest+.txt: empty fields; expected 43 per line", without a line number
    line = mk.kdd_line(hot=7).replace(",7,", ",nan,", 1)
    mk.write_lines(tiny / "KDDTest+.txt", [mk.kdd_line(), line])

    with pytest.raises(DatasetError, match=r"KDDTest\+\.txt line 2: field 10 \(hot\) = 'nan' is not a finite number"):
        load_nsl_kdd(tiny)


def test_a_category_that_reads_as_missing_names_the_line(tiny, mk):
    mk.write_lines(tiny / "KDDTest+.txt", [mk.kdd_line(), mk.kdd_line(service="NA")])

    with pytest.raises(DatasetError, match=r"line 2: field 3 \(service\) = 'NA' is empty or reads as a missing value"):
        load_nsl_kdd(tiny)


@pytest.mark.parametrize("label", ["Normal", "NORMAL", "normal "])
def test_a_mis_spelt_normal_label_is_an_error_naming_the_line(tiny, mk, label):
    # before: 'Normal' was not 'normal', so the row silently became an attack (y = 1)
    mk.write_lines(tiny / "KDDTest+.txt", [mk.kdd_line(), mk.kdd_line(label=label)])

    with pytest.raises(DatasetError, match=rf"KDDTest\+\.txt line 2: label '{label}'; the normal class is spelt 'normal'"):
        load_nsl_kdd(tiny)


def test_missing_file_and_bad_options(tiny):
    with pytest.raises(DatasetNotFoundError, match=r"KDDTest-21\.txt"):
        load_nsl_kdd(tiny, test_files=["KDDTest-21.txt"])
    with pytest.raises(DatasetError, match="scaling='minmax'"):
        load_nsl_kdd(tiny, scaling="minmax")
    with pytest.raises(DatasetError, match="onehot_order"):
        load_nsl_kdd(tiny, onehot_order="sorted")


# -- the authors' per-partition column order ---------------------------------------------------

def _split(protocols, services, flags) -> ArraySplit:
    raw = {
        "protocol_type": np.array(protocols),
        "service": np.array(services),
        "flag": np.array(flags),
        "attack": np.array(["normal"] * len(protocols)),
    }
    continuous = np.linspace(0, 1, len(protocols) * 38).reshape(len(protocols), 38)
    return nsl_kdd.build_split(raw, continuous)


def test_per_partition_order_by_hand():
    split = _split(["udp", "tcp", "udp", "icmp"], ["http", "IRC", "aol", "smtp"], ["SF", "SF", "S0", "SF"])
    partition = np.array([0, 1, 2])  # udp/tcp, http/IRC/aol, SF/S0

    perm = per_partition_column_order(split, partition)

    s = 41  # first service column
    assert perm.dtype == np.int64 and sorted(perm) == list(range(122))
    np.testing.assert_array_equal(perm[:38], np.arange(38))
    assert perm[38:40].tolist() == [38, 39]  # present protocols sorted: tcp, udp
    assert perm[40:43].tolist() == [s + 26, s + 0, s + 21]  # IRC, aol, http (upper case first)
    assert perm[43:45].tolist() == [111 + 5, 111 + 9]  # S0, SF
    assert perm[45] == 40  # absent protocol icmp
    absent_services = [s + i for i, v in enumerate(nsl_kdd.SERVICES) if v not in ("http", "IRC", "aol")]
    assert perm[46 : 46 + 67].tolist() == absent_services  # list order
    assert perm[113:].tolist() == [111 + i for i, v in enumerate(nsl_kdd.FLAGS) if v not in ("S0", "SF")]
    # row 2 (udp, aol, S0) in the authors' layout: udp at 39, aol at 41, S0 at 43
    authors_row = split.x[2, perm]
    assert authors_row[39] == 1 and authors_row[41] == 1 and authors_row[43] == 1


def test_per_partition_order_matches_pandas_get_dummies_as_the_authors_used_it():
    rng = np.random.default_rng(3)
    n = 40
    split = _split(
        rng.choice(["tcp", "udp"], n).tolist(),
        rng.choice(["http", "X11", "private", "aol", "Z39_50", "ftp_data"], n).tolist(),
        rng.choice(["SF", "S0", "RSTO", "OTH"], n).tolist(),
    )
    index = np.sort(rng.choice(n, 15, replace=False))

    perm = per_partition_column_order(split, index)

    # the authors' apply_transforms (source/load_nslkdd.py), on the raw partition
    frame = pd.DataFrame(split.x[index, :38], columns=list(nsl_kdd.CONTINUOUS_COLUMNS))
    for field in nsl_kdd.CATEGORICAL_COLUMNS:
        frame[field] = split.extras[field][index]
    dummies = pd.get_dummies(frame, columns=list(nsl_kdd.CATEGORICAL_COLUMNS), prefix="", prefix_sep="")
    for values in nsl_kdd.CATEGORIES.values():
        for value in values:
            if value not in dummies.columns:
                dummies[value] = False
    np.testing.assert_array_equal(split.x[index][:, perm], dummies.to_numpy(dtype=np.float32))


def test_per_partition_order_needs_the_raw_categories():
    with pytest.raises(DatasetError, match="extras"):
        per_partition_column_order(ArraySplit(x=np.zeros((2, 122)), y=np.zeros(2)), np.arange(2))


# -- real data ---------------------------------------------------------------------------------

@pytest.mark.realdata
def test_real_nsl_kdd_counts(mk):
    folder = mk.real_folder("nsl_kdd", "KDDTrain+.txt", "KDDTest+.txt")

    bundle = load_nsl_kdd(folder)

    assert (len(bundle.train), len(bundle.test)) == (125_973, 22_544)
    assert bundle.train.x.shape[1] == 122 and bundle.train.x.dtype == np.float32
    assert int((bundle.train.y == 0).sum()) == 67_343
    assert int((bundle.test.y == 0).sum()) == 9_711
    assert bundle.train.extras["attack"][0] == "normal" and bundle.test.extras["attack"][0] == "neptune"
    categories = set(bundle.train.extras["attack_category"]) | set(bundle.test.extras["attack_category"])
    assert categories == {"normal", "DoS", "Probe", "R2L", "U2R"}


@pytest.mark.realdata
def test_real_union_matches_the_authors_table_and_service_list(mk):
    files = ("KDDTrain+.txt", "KDDTrain+_20Percent.txt", "KDDTest+.txt", "KDDTest-21.txt")
    folder = mk.real_folder("nsl_kdd", *files)

    bundle = load_nsl_kdd(folder, list(files[:2]), list(files[2:]), scaling="fixed")

    assert (len(bundle.train), len(bundle.test)) == (151_165, 34_394)  # the authors' HF copy
    x = np.concatenate([bundle.train.x[:, :38], bundle.test.x[:, :38]])
    assert x.min() >= 0 and x.max() <= 1
    for name in nsl_kdd.FIXED_MAXIMA:  # the table's maxima are the data's maxima
        assert x[:, col(name)].max() == pytest.approx(1.0), name
    seen = set(bundle.train.extras["service"]) | set(bundle.test.extras["service"])
    assert seen == set(nsl_kdd.SERVICES)
