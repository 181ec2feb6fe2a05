"""N-BaIoT loader on a UCI-layout fixture built from the shared format sample rows."""

from __future__ import annotations

import zipfile

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


@pytest.mark.parametrize(("edit", "message"), [
    (lambda f: f + ["1"], r"line 2: 116 comma-separated fields, expected 115 \(the header's\)"),
    (lambda f: f[:-3], r"line 2: 112 comma-separated fields, expected 115"),
])
def test_a_row_with_another_number_of_fields_names_its_own_line(uci, edit, message):
    # before: a 116-field first row became pandas' index column and the next line was blamed
    path = uci / "Ecobee_Thermostat" / "gafgyt_attacks" / "udp.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], ",".join(edit(lines[1].split(",")))] + lines[2:]) + "\n")

    with pytest.raises(DatasetError, match=r"udp\.csv " + message):
        load_n_baiot(uci)


def test_a_traffic_file_with_only_its_header_is_an_error(uci):
    # before: a header-only benign_traffic.csv ran with no benign class and no warning
    path = uci / "Ecobee_Thermostat" / "benign_traffic.csv"
    path.write_text(path.read_text().splitlines()[0] + "\n")

    with pytest.raises(DatasetError, match=r"benign_traffic\.csv: has the N-BaIoT header but no rows"):
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


# -- partial real files (real_partial/) ----------------------------------------------------------

def csv_text(rows, label=None):
    """A UCI-header CSV of ``rows``; with ``label`` (one value per row) a final ``Normal`` column."""
    header = list(n_baiot.FEATURE_NAMES) + ([n_baiot.LABEL_COLUMN] if label is not None else [])
    lines = [",".join(header)]
    for i, row in enumerate(rows):
        fields = [repr(float(v)) for v in row] + ([str(label[i])] if label is not None else [])
        lines.append(",".join(fields))
    return "\n".join(lines) + "\n"


def write_zip(path, members):
    """A zip with ``{member name: text}`` (deflated)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


@pytest.fixture
def partial(tmp_path):
    """An n_baiot folder with real_partial/: a device-3 tcp zip (3 rows) and a labelled Danmini CSV (2 + 1)."""
    rng = np.random.default_rng(0)
    rows = {"tcp": rng.uniform(0, 100, (3, 115)), "danmini": rng.uniform(0, 100, (3, 115))}
    folder = tmp_path / "partial" / "n_baiot"
    write_zip(folder / "real_partial" / "3.gafgyt.tcp.zip", {"tcp.csv": csv_text(rows["tcp"])})
    (folder / "real_partial" / "1.benign+gafgyt.scan.Danmini_Doorbell.csv").write_text(
        csv_text(rows["danmini"], label=[1, 1, 0]))
    (folder / "real_partial" / "SHA256SUMS").write_text("ignored\n")
    return folder, rows


def test_real_partial_reads_the_zip_and_the_labelled_csv(partial):
    folder, rows = partial

    frame = n_baiot.load_n_baiot_real_partial(folder)

    assert list(frame.columns) == list(n_baiot.META_COLUMNS) + list(n_baiot.FEATURE_NAMES)
    # files in name order: the labelled Danmini CSV, then the device-3 zip
    assert frame["device"].tolist() == ["Danmini_Doorbell"] * 3 + ["Ennio_Doorbell"] * 3
    assert frame["traffic"].tolist() == ["benign", "benign", "gafgyt.scan"] + ["gafgyt.tcp"] * 3
    assert frame["label"].tolist() == [0, 0, 1, 1, 1, 1]  # Normal=1 is benign (label 0)
    assert frame["file"].tolist()[-1] == "real_partial/3.gafgyt.tcp.zip"
    features = frame[list(n_baiot.FEATURE_NAMES)].to_numpy()
    assert features.dtype == np.float32
    np.testing.assert_array_equal(features, np.concatenate([rows["danmini"], rows["tcp"]]).astype(np.float32))
    assert n_baiot.real_partial_summary(frame) == {
        "rows": 6, "benign_rows": 2, "attack_rows": 4,
        "devices": {"Danmini_Doorbell": {"benign": 2, "gafgyt.scan": 1}, "Ennio_Doorbell": {"gafgyt.tcp": 3}},
        "files": {"real_partial/1.benign+gafgyt.scan.Danmini_Doorbell.csv": 3, "real_partial/3.gafgyt.tcp.zip": 3},
    }


def test_real_partial_files_leave_load_n_baiot_unchanged(uci, partial, tmp_path):
    before = load_n_baiot(uci, seed=0)
    (uci / "real_partial").mkdir()
    for path in (partial[0] / "real_partial").iterdir():
        (uci / "real_partial" / path.name).write_bytes(path.read_bytes())

    after = load_n_baiot(uci, seed=0)

    np.testing.assert_array_equal(before.train.x, after.train.x)
    assert before.group_names == after.group_names
    assert [r["path"] for r in after.source["files"]] == [r["path"] for r in before.source["files"]]
    # a folder holding only real_partial/ is still "not found" for the federated loader
    with pytest.raises(DatasetNotFoundError):
        load_n_baiot(partial[0])


def test_data_info_counts_the_partial_real_rows(partial):
    from fltrust.data import dataset_info

    info = {e["name"]: e for e in dataset_info(partial[0].parent)}["n_baiot"]

    assert not info["found"] and "N-BaIoT not found" in info["problem"]
    assert info["real_partial"]["rows"] == 6 and info["real_partial"]["benign_rows"] == 2
    assert info["real_partial"]["devices"]["Ennio_Doorbell"] == {"gafgyt.tcp": 3}
    files = {f["path"]: f for f in info["files"]}
    assert files["real_partial/3.gafgyt.tcp.zip"]["known"] is False  # a fixture, not the mirror's file
    assert files["real_partial/SHA256SUMS"]["known"] is None


def test_zip_needs_exactly_one_csv_member(partial):
    folder, rows = partial
    path = folder / "real_partial" / "3.gafgyt.tcp.zip"

    write_zip(path, {"tcp.csv": csv_text(rows["tcp"]), "udp.csv": csv_text(rows["tcp"])})
    two = r"3\.gafgyt\.tcp\.zip: expected exactly one CSV member, found \['tcp\.csv', 'udp\.csv'\]"
    with pytest.raises(DatasetError, match=two):
        n_baiot.load_n_baiot_real_partial(folder)

    write_zip(path, {"tcp.txt": csv_text(rows["tcp"])})
    with pytest.raises(DatasetError, match=r"3\.gafgyt\.tcp\.zip: expected exactly one CSV member"):
        n_baiot.load_n_baiot_real_partial(folder)

    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(DatasetError, match=r"3\.gafgyt\.tcp\.zip: cannot read as a zip"):
        n_baiot.load_n_baiot_real_partial(folder)


def test_zip_member_size_is_bounded(partial):
    path = partial[0] / "real_partial" / "3.gafgyt.tcp.zip"
    size = zipfile.ZipFile(path).infolist()[0].file_size

    name, data = n_baiot.read_zip_member(path, max_bytes=size)
    assert name == "tcp.csv" and len(data) == size

    with pytest.raises(DatasetError, match=rf"member tcp\.csv is larger than {size - 1:,} bytes .*zip bomb"):
        n_baiot.read_zip_member(path, max_bytes=size - 1)


def test_zip_member_that_understates_its_size_is_rejected_not_truncated(partial, monkeypatch):
    path = partial[0] / "real_partial" / "3.gafgyt.tcp.zip"
    size = zipfile.ZipFile(path).infolist()[0].file_size
    real_infolist = zipfile.ZipFile.infolist

    def understated(self):
        members = real_infolist(self)
        members[0].file_size = 10  # what a zip bomb's central directory may claim
        return members

    monkeypatch.setattr(zipfile.ZipFile, "infolist", understated)
    # zipfile stops inflating at the claimed 10 bytes and the CRC check then fails
    with pytest.raises(DatasetError, match=r"3\.gafgyt\.tcp\.zip: cannot read as a zip \(Bad CRC-32"):
        n_baiot.read_zip_member(path, max_bytes=size - 1)


def test_bad_rows_inside_a_zip_and_a_bad_label_are_named(partial):
    folder, rows = partial
    text = csv_text(rows["tcp"]).replace("MI_dir_L5_weight", "weight", 1)
    write_zip(folder / "real_partial" / "3.gafgyt.tcp.zip", {"tcp.csv": text})
    with pytest.raises(DatasetError, match=r"3\.gafgyt\.tcp\.zip:tcp\.csv: expected the 115-column N-BaIoT header"):
        n_baiot.load_n_baiot_real_partial(folder)

    lines = csv_text(rows["tcp"]).splitlines()
    fields = lines[2].split(",")
    fields[2] = "oops"
    lines[2] = ",".join(fields)
    write_zip(folder / "real_partial" / "3.gafgyt.tcp.zip", {"tcp.csv": "\n".join(lines) + "\n"})
    with pytest.raises(DatasetError, match=r"tcp\.zip:tcp\.csv line 3: column MI_dir_L5_variance = 'oops'"):
        n_baiot.load_n_baiot_real_partial(folder)

    (folder / "real_partial" / "3.gafgyt.tcp.zip").unlink()
    (folder / "real_partial" / "1.benign+gafgyt.scan.Danmini_Doorbell.csv").write_text(
        csv_text(rows["danmini"], label=[1, 2, 0]))
    with pytest.raises(DatasetError, match=r"Doorbell\.csv line 3: column Normal = 2; expected 1 \(benign\) or 0"):
        n_baiot.load_n_baiot_real_partial(folder)

    (folder / "real_partial" / "1.benign+gafgyt.scan.Danmini_Doorbell.csv").write_text(csv_text(rows["danmini"]))
    with pytest.raises(DatasetError, match=r"header \(MI_dir_L5_weight, \.\.\., HpHp_L0\.01_pcc\) then \['Normal'\]"):
        n_baiot.load_n_baiot_real_partial(folder)


def test_real_partial_names_must_carry_device_and_traffic(partial, tmp_path):
    folder, rows = partial
    write_zip(folder / "real_partial" / "tcp.zip", {"tcp.csv": csv_text(rows["tcp"])})
    with pytest.raises(DatasetError, match=r"tcp\.zip: cannot tell its device and traffic from the name"):
        n_baiot.load_n_baiot_real_partial(folder)

    with pytest.raises(DatasetNotFoundError, match="no partial real N-BaIoT files"):
        n_baiot.load_n_baiot_real_partial(tmp_path / "empty")


@pytest.mark.realdata
def test_real_partial_files_of_the_mirror(mk):
    folder = mk.real_folder("n_baiot", "real_partial/3.gafgyt.tcp.zip", "real_partial/5.gafgyt.udp.zip",
                            "real_partial/1.benign+gafgyt.scan.Danmini_Doorbell.csv")

    frame = n_baiot.load_n_baiot_real_partial(folder)

    summary = n_baiot.real_partial_summary(frame)
    # row counts of data/PROVENANCE.md#n-baiot-a1 ... #n-baiot-a5
    assert summary["devices"] == {
        "Danmini_Doorbell": {"benign": 3050, "gafgyt.scan": 250},
        "Ennio_Doorbell": {"gafgyt.tcp": 101_536, "gafgyt.udp": 103_933},
        "Provision_PT_737E_Security_Camera": {"gafgyt.tcp": 104_510, "gafgyt.udp": 104_011},
    }
    danmini = frame[frame["device"] == "Danmini_Doorbell"]
    assert (danmini["label"].to_numpy() == np.repeat([0, 1], [3050, 250])).all()  # benign rows first
    # data/PROVENANCE.md#n-baiot-a1: MI_dir_L5_weight >= 1 and MI_dir_L5_mean in [60, 873.5] in the device-3 tcp file
    tcp3 = frame[frame["file"] == "real_partial/3.gafgyt.tcp.zip"]
    assert tcp3["MI_dir_L5_weight"].min() >= 1.0
    assert (tcp3["MI_dir_L5_mean"].min(), round(float(tcp3["MI_dir_L5_mean"].max()), 1)) == (60.0, 873.5)
    # the mirror's first benign sample file holds Danmini benign rows 0-298 (data/PROVENANCE.md#n-baiot-d)
    sample = np.loadtxt(folder / "benign_traffic.csv", delimiter=",", skiprows=1, max_rows=5)
    np.testing.assert_allclose(danmini[list(n_baiot.FEATURE_NAMES)].to_numpy()[:5], sample, rtol=1e-6)


@pytest.mark.realdata
def test_known_checksums_cover_the_partial_real_files(mk):
    from fltrust.data import SPECS
    from fltrust.data.info import file_listing

    folder = mk.real_folder("n_baiot", "real_partial/SHA256SUMS")

    listed = {f["path"]: f for f in file_listing("n_baiot", folder)}

    sums = dict(line.split()[::-1] for line in (folder / "real_partial" / "SHA256SUMS").read_text().splitlines())
    for name, digest in sums.items():
        assert SPECS["n_baiot"].known_sha256[f"real_partial/{name}"] == digest
        assert listed[f"real_partial/{name}"]["known"] is True
