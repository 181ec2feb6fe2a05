"""N-BaIoT loader on a UCI-layout fixture built from the shared format sample rows."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.data import DatasetError, DatasetNotFoundError, load_n_baiot
from fltrust.data import n_baiot


@pytest.fixture
def uci(tmp_path, mk, n_baiot_rows):
    return mk.write_n_baiot_uci(tmp_path / "n_baiot", n_baiot_rows)


def raw_in_loader_order(rows):
    """Rows, labels, devices and traffic names in the loader's order (device, benign, sorted attacks)."""
    x, y, g, a = [], [], [], []
    for d, device in enumerate(rows):
        for label in ["benign"] + sorted(k for k in rows[device] if k != "benign"):
            x.append(rows[device][label])
            y += [int(label != "benign")] * len(rows[device][label])
            g += [d] * len(rows[device][label])
            a += [label] * len(rows[device][label])
    return np.concatenate(x), np.array(y), np.array(g), np.array(a)


def test_feature_names_follow_the_archive_header():
    assert n_baiot.NUM_FEATURES == 115
    assert n_baiot.FEATURE_NAMES[:3] == ("MI_dir_L5_weight", "MI_dir_L5_mean", "MI_dir_L5_variance")
    assert n_baiot.FEATURE_NAMES[3] == "MI_dir_L3_weight"
    assert n_baiot.FEATURE_NAMES[-1] == "HpHp_L0.01_pcc"


def test_stratified_split_by_hand():
    y = np.array([0] * 5 + [1] * 10 + [1] * 4)
    groups = np.array([0] * 15 + [1] * 4)

    train, test = n_baiot.stratified_split(y, groups, 0.2, np.random.default_rng(0))

    # cells: (0, benign) 5 -> 1 test; (0, attack) 10 -> 2 test; (1, attack) 4 -> round(0.8) = 1 test
    assert len(test) == 4 and len(train) == 15
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(19))
    assert (y[test[groups[test] == 0]] == 0).sum() == 1


def test_balance_per_group_by_hand():
    y = np.array([0, 1, 1, 1, 0, 0, 0, 1, 1, 1])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])

    keep = n_baiot.balance_per_group(y, groups, np.random.default_rng(1))

    # group 0: 1 benign + 1 of 3 attacks; group 1: 3 benign + 3 attacks
    assert len(keep) == 8 and np.all(np.diff(keep) > 0)
    for g in (0, 1):
        kept = keep[groups[keep] == g]
        assert (y[kept] == 0).sum() == (y[kept] == 1).sum()


def test_standardise_uses_training_statistics():
    train = np.array([[1.0, 5.0], [3.0, 5.0]])
    test = np.array([[5.0, 6.0]])

    a, b = n_baiot.standardise(train, test)

    np.testing.assert_allclose(a, [[-1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(b, [[3.0, 1.0]])  # mean 2, std 1; constant column keeps std 1


def test_uci_layout_loads_devices_as_natural_clients(uci, n_baiot_rows):
    bundle = load_n_baiot(uci, seed=3)

    assert bundle.group_names == ["Danmini_Doorbell", "Ecobee_Thermostat", "Ennio_Doorbell"]
    assert (bundle.num_classes, bundle.input_shape, bundle.class_names) == (2, (115,), ["benign", "attack"])
    assert bundle.train.x.dtype == np.float32
    # the split is the documented composition of the helpers
    x, y, g, a = raw_in_loader_order(n_baiot_rows)
    train, test = n_baiot.stratified_split(y, g, 0.2, np.random.default_rng(3))
    x_train, x_test = n_baiot.standardise(x[train].astype(np.float32), x[test].astype(np.float32))
    np.testing.assert_allclose(bundle.train.x, x_train, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bundle.test.x, x_test, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(bundle.train.y, y[train])
    np.testing.assert_array_equal(bundle.test.groups, g[test])
    np.testing.assert_array_equal(bundle.test.extras["attack"], a[test])
    # 80/20 within every (device, class) cell: Danmini benign 40 -> 8 test, gafgyt.udp 50 + mirai.scan 30 -> 16
    danmini = bundle.test.groups == 0
    assert (bundle.test.y[danmini] == 0).sum() == 8 and (bundle.test.y[danmini] == 1).sum() == 16
    assert set(bundle.train.extras["attack"]) == {"benign", "gafgyt.udp", "gafgyt.scan", "mirai.scan"}


def test_split_is_seeded(uci):
    first, again, other = load_n_baiot(uci, seed=1), load_n_baiot(uci, seed=1), load_n_baiot(uci, seed=2)

    np.testing.assert_array_equal(first.train.x, again.train.x)
    assert not np.array_equal(first.train.x, other.train.x)


def test_flat_layout_gives_the_same_bundle(tmp_path, mk, n_baiot_rows, uci):
    flat = mk.write_n_baiot_flat(tmp_path / "flat", n_baiot_rows)

    a, b = load_n_baiot(uci, seed=0), load_n_baiot(flat, seed=0)

    assert a.group_names == b.group_names
    np.testing.assert_array_equal(a.train.x, b.train.x)
    np.testing.assert_array_equal(a.test.extras["attack"], b.test.extras["attack"])


def test_balance_gives_fifty_fifty_per_device(uci):
    bundle = load_n_baiot(uci, seed=0, balance=True)

    y = np.concatenate([bundle.train.y, bundle.test.y])
    g = np.concatenate([bundle.train.groups, bundle.test.groups])
    for device, benign in enumerate((40, 25, 20)):
        assert (y[g == device] == 0).sum() == (y[g == device] == 1).sum() == benign
    assert bundle.source["balance"] is True


def test_bad_header_and_bad_value_are_named(uci, mk):
    path = uci / "Ecobee_Thermostat" / "gafgyt_attacks" / "udp.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0].replace("MI_dir_L5_weight", "weight")] + lines[1:]) + "\n")
    with pytest.raises(DatasetError, match=r"udp\.csv: expected the 115-column N-BaIoT header"):
        load_n_baiot(uci)

    fields = lines[3].split(",")
    fields[1] = "oops"
    path.write_text("\n".join(lines[:3] + [",".join(fields)] + lines[4:]) + "\n")
    with pytest.raises(DatasetError, match=r"udp\.csv line 4: column MI_dir_L5_mean = 'oops' is not a finite"):
        load_n_baiot(uci)


def test_unextracted_rar_and_empty_folder(tmp_path, uci):
    (uci / "Ennio_Doorbell" / "mirai_attacks.rar").write_bytes(b"Rar!")
    with pytest.raises(DatasetError, match=r"mirai_attacks\.rar is not extracted"):
        load_n_baiot(uci)

    with pytest.raises(DatasetNotFoundError, match="benign_traffic.csv"):
        load_n_baiot(tmp_path / "nothing")


@pytest.mark.realdata
def test_shared_format_sample_has_the_documented_header(mk):
    folder = mk.real_folder("n_baiot", "demonstrate_structure.csv")

    header = (folder / "demonstrate_structure.csv").read_text().strip().split(",")

    assert tuple(header) == n_baiot.FEATURE_NAMES
