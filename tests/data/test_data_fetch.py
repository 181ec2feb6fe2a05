"""fetch_dataset: manual instructions, offline messages, verified download and extraction.

The network is never used: conftest replaces ``fetch._download`` with a function that raises
``URLError``; tests that need a "download" install a fake that writes a local archive.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import re
import tarfile
import zipfile

import numpy as np
import pytest

from fltrust.data import SPECS, DatasetError, fetch, fetch_dataset, load_cifar10, load_femnist, load_n_baiot, n_baiot


def test_manual_nsl_kdd_names_files_and_folder(tmp_path):
    with pytest.raises(DatasetError) as info:
        fetch_dataset("nsl_kdd", tmp_path)

    message = str(info.value)
    assert "KDDTrain+.txt" in message and "KDDTest+.txt" in message
    assert str(tmp_path / "nsl_kdd") in message and "unb.ca" in message


def test_offline_femnist_names_the_archive_its_url_and_where_to_put_it(tmp_path):
    with pytest.raises(DatasetError) as info:
        fetch_dataset("femnist", tmp_path)

    message = str(info.value)
    assert "\n" not in message and message.startswith("could not download femnist from " + SPECS["femnist"].url)
    assert "https://storage.googleapis.com/tff-datasets-public/fed_emnist.tar.bz2" in message
    folder = tmp_path / "femnist"
    for path in ("fed_emnist.tar.bz2", "fed_emnist_train.h5", "fed_emnist_test.h5", "train/", "test/"):
        assert f"{folder}/{path}" in message
    assert SPECS["femnist"].archive_sha256 in message and "preprocess.sh" in message  # the LEAF route too


@pytest.mark.parametrize(
    "name, expected",
    [("cifar10", "cifar-10-batches-py"), ("n_baiot", "benign_traffic.csv"), ("femnist", "fed_emnist.tar.bz2")],
)
def test_offline_download_says_where_to_put_the_files(tmp_path, name, expected):
    with pytest.raises(DatasetError) as info:
        fetch_dataset(name, tmp_path)

    message = str(info.value)
    assert "could not download" in message and "network access is disabled" in message
    assert expected in message and str(tmp_path / name) in message


def test_unknown_and_synthetic_names(tmp_path):
    with pytest.raises(DatasetError, match="unknown real dataset"):
        fetch_dataset("mnist", tmp_path)
    with pytest.raises(DatasetError, match="nothing to fetch"):
        fetch_dataset("synthetic_cifar10", tmp_path)


def test_present_files_with_a_wrong_known_checksum_are_rejected(tmp_path, mk):
    mk.write_lines(tmp_path / "nsl_kdd" / "KDDTrain+.txt", [mk.kdd_line()])
    mk.write_lines(tmp_path / "nsl_kdd" / "KDDTest+.txt", [mk.kdd_line()])

    with pytest.raises(DatasetError, match=r"KDDTrain\+\.txt: sha256 .* differs from the known"):
        fetch_dataset("nsl_kdd", tmp_path)


def _cifar_tarball(tmp_path, mk) -> bytes:
    mk.write_cifar_batches(tmp_path / "src" / "cifar-10-batches-py", per_batch=1, test=2)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(tmp_path / "src" / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    return buffer.getvalue()


def _serve(monkeypatch, payload: bytes) -> list[str]:
    calls: list[str] = []

    def fake_download(url, dest, timeout):
        calls.append(url)
        dest.write_bytes(payload)

    monkeypatch.setattr(fetch, "_download", fake_download)
    return calls


def test_cifar10_download_is_verified_and_extracted(tmp_path, mk, monkeypatch):
    payload = _cifar_tarball(tmp_path, mk)
    digest = hashlib.sha256(payload).hexdigest()
    # a fake archive of fake batches: neither has the official SHA-256
    spec = dataclasses.replace(SPECS["cifar10"], archive_sha256=digest, archive_bytes=len(payload), known_sha256={})
    monkeypatch.setitem(SPECS, "cifar10", spec)
    calls = _serve(monkeypatch, payload)

    folder = fetch_dataset("cifar10", tmp_path / "root")

    assert calls == [spec.url] and folder == tmp_path / "root" / "cifar10"
    assert (folder / "cifar-10-batches-py" / "test_batch").is_file()
    assert len(load_cifar10(folder).train) == 5
    assert fetch_dataset("cifar10", tmp_path / "root") == folder and len(calls) == 1  # already there


def test_cifar10_checksum_mismatch_removes_the_archive(tmp_path, mk, monkeypatch):
    _serve(monkeypatch, _cifar_tarball(tmp_path, mk))
    spec = dataclasses.replace(SPECS["cifar10"], archive_bytes=None)  # the real published sha256
    monkeypatch.setitem(SPECS, "cifar10", spec)

    with pytest.raises(DatasetError, match="differs from the published 6d958be0"):
        fetch_dataset("cifar10", tmp_path / "root")

    assert not (tmp_path / "root" / "cifar10" / "cifar-10-python.tar.gz").exists()


def test_n_baiot_zip_is_unpacked_and_missing_unrar_is_explained(tmp_path, mk, monkeypatch, n_baiot_rows):
    src = mk.write_n_baiot_uci(tmp_path / "src", {"Danmini_Doorbell": n_baiot_rows["Danmini_Doorbell"]})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for path in src.rglob("*.csv"):
            zipped.write(path, f"nbaiot/{path.relative_to(src)}")  # nested one level, as some archives are
        benign = (src / "Danmini_Doorbell" / "benign_traffic.csv").read_text()
        zipped.writestr("nbaiot/Ecobee_Thermostat/benign_traffic.csv", benign)
        zipped.writestr("nbaiot/Ecobee_Thermostat/mirai_attacks.rar", b"Rar!")
    _serve(monkeypatch, buffer.getvalue())
    monkeypatch.setattr(fetch.shutil, "which", lambda tool: None)

    expected = r"no unrar/7z/bsdtar is installed.*Ecobee_Thermostat/mirai_attacks\.rar"
    with pytest.raises(DatasetError, match=expected):
        fetch_dataset("n_baiot", tmp_path / "root")

    folder = tmp_path / "root" / "n_baiot"
    (folder / "Ecobee_Thermostat" / "mirai_attacks.rar").unlink()  # as if the user extracted it elsewhere
    assert fetch_dataset("n_baiot", tmp_path / "root") == folder
    assert load_n_baiot(folder).group_names == ["Danmini_Doorbell", "Ecobee_Thermostat"]


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


def test_n_baiot_fetch_prints_the_archive_sha256(tmp_path, mk, monkeypatch, n_baiot_rows, capsys):
    # before: "the SHA-256 is only reported", but it was never printed
    src = mk.write_n_baiot_uci(tmp_path / "src", {"Danmini_Doorbell": n_baiot_rows["Danmini_Doorbell"]})
    payload = _zip_bytes({str(p.relative_to(src)): p.read_bytes() for p in src.rglob("*.csv")})
    _serve(monkeypatch, payload)

    folder = fetch_dataset("n_baiot", tmp_path / "root")

    out = capsys.readouterr().out
    assert f"sha256 {hashlib.sha256(payload).hexdigest()} (no published checksum" in out
    assert str(folder / SPECS["n_baiot"].archive) in out


@pytest.mark.parametrize(("caps", "message"), [
    ({"MAX_ZIP_MEMBER_BYTES": 1024**2},
     r"member Danmini_Doorbell/benign_traffic\.csv declares 4,194,304 bytes, over the cap of 1,048,576 "
     r"\(n_baiot\.MAX_ZIP_MEMBER_BYTES per member\); refused as a possible zip bomb"),
    ({"MAX_ZIP_TOTAL_BYTES": 6 * 1024**2},
     r"member Ecobee_Thermostat/benign_traffic\.csv brings the declared total to 8,388,608 bytes, over the cap of "
     r"6,291,456 \(n_baiot\.MAX_ZIP_TOTAL_BYTES in all\)"),
])
def test_a_planted_n_baiot_zip_bomb_is_refused_before_extraction(tmp_path, monkeypatch, capsys, caps, message):
    # before: a 1.5 MB zip was extracted into a 1,500 MiB file, with no cap (the cap lived in real_partial only)
    from fltrust.cli import main

    for name, value in caps.items():
        monkeypatch.setattr(n_baiot, name, value)
    zeros = b"0" * (4 * 1024**2)
    payload = _zip_bytes({"Danmini_Doorbell/benign_traffic.csv": zeros, "Ecobee_Thermostat/benign_traffic.csv": zeros})
    assert len(payload) < 64 * 1024
    _serve(monkeypatch, payload)

    assert main(["data", "fetch", "n_baiot", "--data-dir", str(tmp_path / "root")]) == 2

    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    folder = tmp_path / "root" / "n_baiot"
    assert not list(folder.rglob("*.csv")) and not list(folder.rglob("*.part"))  # nothing was written


def test_zip_extraction_counts_the_bytes_it_writes(tmp_path, monkeypatch):
    # a zip library that streamed past a member's declared size would still be stopped at the cap
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip_bytes({"x.csv": b"1,2\n"}))
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, info: io.BytesIO(b"9" * (3 * 1024**2)))

    with pytest.raises(DatasetError, match=r"member x\.csv inflates to at least 3,145,728 bytes, over the cap of 2,097,152"):
        fetch.extract_zip(archive, tmp_path / "out", max_member=2 * 1024**2)
    assert not list((tmp_path / "out").iterdir())  # the partial member was removed


def test_a_zip_member_that_understates_its_size_fails_as_corrupt(tmp_path):
    data = b"0" * (1024**2)
    payload = bytearray(_zip_bytes({"x.csv": data}))
    central = payload.rindex(b"PK\x01\x02")  # the central directory entry: uncompressed size at offset 24
    payload[central + 24:central + 28] = (1000).to_bytes(4, "little")
    archive = tmp_path / "a.zip"
    archive.write_bytes(bytes(payload))

    with pytest.raises(zipfile.BadZipFile, match="CRC"):
        fetch.extract_zip(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "x.csv").exists()


def test_a_member_declaring_more_than_the_real_cap_is_refused_before_writing(tmp_path):
    payload = bytearray(_zip_bytes({"x.csv": b"0" * 1000}))
    central = payload.rindex(b"PK\x01\x02")
    payload[central + 24:central + 28] = (600 * 1024**2).to_bytes(4, "little")  # declares 600 MiB
    archive = tmp_path / "a.zip"
    archive.write_bytes(bytes(payload))

    with pytest.raises(DatasetError, match=r"declares 629,145,600 bytes, over the cap of 536,870,912"):
        fetch.extract_zip(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["../evil.csv", "/etc/evil.csv", "a/../../evil.csv"])
def test_a_zip_member_outside_the_folder_is_refused(tmp_path, name):
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip_bytes({name: b"x"}))

    with pytest.raises(DatasetError, match="would be written outside"):
        fetch.extract_zip(archive, tmp_path / "out" / "inner")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("evil.csv"))


# -- FEMNIST: TensorFlow Federated's federated EMNIST ------------------------------------------

@pytest.fixture
def tff_archive(tmp_path, mk):
    """A tiny fed_emnist.tar.bz2 in TFF's layout (the two h5 files at the top), as bytes."""
    pytest.importorskip("h5py", reason="h5py is not installed (pinned in requirements.txt); the TFF h5 tests need it")
    src = tmp_path / "src"
    pixels = np.linspace(0, 1, 4 * 784).reshape(4, 784)
    mk.write_tff_h5(src / "fed_emnist_train.h5", {"f0001_02": (pixels[:2], [61, 0]), "f0000_14": (pixels[2:3], [10])})
    mk.write_tff_h5(src / "fed_emnist_test.h5", {"f0000_14": (pixels[3:], [36]), "f0001_02": (pixels[:1], [5])})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:bz2") as tar:
        for name in ("fed_emnist_train.h5", "fed_emnist_test.h5"):
            tar.add(src / name, arcname=name)
    return buffer.getvalue(), pixels


def test_femnist_download_is_verified_and_read_as_tff_h5(tmp_path, tff_archive, monkeypatch):
    payload, pixels = tff_archive
    spec = dataclasses.replace(SPECS["femnist"], archive_sha256=hashlib.sha256(payload).hexdigest())
    monkeypatch.setitem(SPECS, "femnist", spec)
    calls = _serve(monkeypatch, payload)

    folder = fetch_dataset("femnist", tmp_path / "root")

    assert calls == ["https://storage.googleapis.com/tff-datasets-public/fed_emnist.tar.bz2"]
    assert folder == tmp_path / "root" / "femnist" and (folder / "fed_emnist.tar.bz2").is_file()
    bundle = load_femnist(folder)
    assert bundle.group_names == ["f0000_14", "f0001_02"]
    np.testing.assert_array_equal(bundle.train.y, [10, 61, 0])
    np.testing.assert_array_equal(bundle.test.y, [36, 5])
    np.testing.assert_array_equal(bundle.train.groups, [0, 1, 1])
    np.testing.assert_array_equal(bundle.train.x.reshape(3, 784), pixels[[2, 0, 1]].astype(np.float32))
    assert fetch_dataset("femnist", tmp_path / "root") == folder and len(calls) == 1  # already there


def test_femnist_checksum_mismatch_is_one_error_and_removes_the_archive(tmp_path, tff_archive, monkeypatch):
    _serve(monkeypatch, tff_archive[0])  # the spec keeps TFF's published sha256

    with pytest.raises(DatasetError) as info:
        fetch_dataset("femnist", tmp_path / "root")

    message = str(info.value)
    assert "\n" not in message and "fed_emnist.tar.bz2: sha256 " in message
    assert "differs from the published fe1ed5a502cea3a952eb105920bff8cffb32836b5173cb18a57a32c3606f3ea0" in message
    assert not (tmp_path / "root" / "femnist" / "fed_emnist.tar.bz2").exists()
    assert not (tmp_path / "root" / "femnist" / "fed_emnist_train.h5").exists()


def test_femnist_archive_whose_h5_is_not_tff_layout_is_rejected(tmp_path, mk, monkeypatch):
    h5py = pytest.importorskip("h5py", reason="h5py is not installed (pinned in requirements.txt); the TFF h5 tests need it")
    src = tmp_path / "src"
    mk.write_tff_h5(src / "fed_emnist_train.h5", {"f0000_14": (np.ones((1, 784)), [1])})
    with h5py.File(src / "fed_emnist_test.h5", "w") as handle:
        handle.create_group("clients")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:bz2") as tar:
        for name in ("fed_emnist_train.h5", "fed_emnist_test.h5"):
            tar.add(src / name, arcname=name)
    payload = buffer.getvalue()
    monkeypatch.setitem(SPECS, "femnist",
                        dataclasses.replace(SPECS["femnist"], archive_sha256=hashlib.sha256(payload).hexdigest()))
    _serve(monkeypatch, payload)

    with pytest.raises(DatasetError, match=r"fed_emnist_test\.h5: no group 'examples'; expected TensorFlow Federated's"):
        fetch_dataset("femnist", tmp_path / "root")


def test_femnist_leaf_shards_in_place_are_not_downloaded_again(tmp_path, mk):
    folder = tmp_path / "femnist"
    shard = mk.leaf_shard({"f_a": (np.ones((1, 784)), [3])})
    mk.write_json(folder / "train" / "all_data_0_niid_train_9.json", shard)
    mk.write_json(folder / "test" / "all_data_0_niid_test_9.json", shard)

    assert fetch_dataset("femnist", tmp_path) == folder  # the offline downloader was never called


# -- a published file set (ffa-results) ---------------------------------------------------------

FFA_URL = "https://raw.githubusercontent.com/oscardilley/federated-fairness/5e3115eb2350501e93a6b1f6d085d43d08078da8/"


def test_offline_ffa_results_names_every_missing_file_its_folder_and_url(tmp_path, monkeypatch):
    # Prepare: count the download attempts of the offline downloader (conftest)
    calls = []
    offline = fetch._download
    monkeypatch.setattr(fetch, "_download", lambda url, dest, timeout: (calls.append(url), offline(url, dest, timeout)))

    # Execute
    with pytest.raises(DatasetError) as info:
        fetch_dataset("ffa-results", tmp_path)

    # Assert: a first line, then one line per file with the folder to put it in and its source URL
    first, *lines = str(info.value).split("\n")
    folder = tmp_path / "ffa_results" / "Results"
    assert first == (f"ffa-results: 72 of 72 files missing or wrong in {tmp_path / 'ffa_results'}; could not download "
                     "(network access is disabled in tests; offline?); one line per file:")
    assert len(lines) == 72
    assert lines[0] == (f"Ditto_CIFAR_iid_100C_5PC_10E_30R_v1.json missing: put it in {folder}/ "
                        f"(source {FFA_URL}Results/Ditto_CIFAR_iid_100C_5PC_10E_30R_v1.json)")
    assert all(line.endswith(".json)") and f"put it in {folder}/" in line and FFA_URL in line for line in lines)
    assert "q_FedAvg_NSLKDD_niid_100C_5PC_5E_30R_v3.json missing" in lines[-1]
    assert len(calls) == 1  # offline after the first failure: the other 71 are not tried
    assert not any(p.is_file() for p in tmp_path.rglob("*"))  # nothing partial left behind


@pytest.fixture
def two_file_set(monkeypatch):
    """ffa-results replaced by a two-file set whose known contents are b"one" and b"two"."""
    from fltrust.data.registry import REFERENCE_SPECS

    contents = {"Results/a.json": b"one", "Results/b.json": b"two"}
    spec = dataclasses.replace(REFERENCE_SPECS["ffa-results"], url_base="https://example.org/pinned/",
                               known_sha256={k: hashlib.sha256(v).hexdigest() for k, v in contents.items()})
    monkeypatch.setitem(REFERENCE_SPECS, "ffa-results", spec)
    return contents


def _serve_pages(monkeypatch, pages, calls=None):
    """A downloader that writes ``pages[url]`` as the real one does (``dest.part``, then renamed)."""
    def download(url, dest, timeout):
        if calls is not None:
            calls.append(url)
        part = dest.with_name(dest.name + ".part")
        part.write_bytes(pages[url])
        part.rename(dest)

    monkeypatch.setattr(fetch, "_download", download)


def test_file_set_download_is_checked_before_it_is_put_in_place(tmp_path, monkeypatch, two_file_set):
    # Prepare: the source serves the right a.json and a corrupted b.json
    _serve_pages(monkeypatch, {"https://example.org/pinned/Results/a.json": b"one",
                         "https://example.org/pinned/Results/b.json": b"tw0"})

    # Execute
    with pytest.raises(DatasetError) as info:
        fetch_dataset("ffa-results", tmp_path)

    # Assert: b.json is named with both hashes and not written; a.json is in place; no temporary file
    folder = tmp_path / "ffa_results" / "Results"
    first, line = str(info.value).split("\n")
    assert first.startswith("ffa-results: 1 of 2 files missing or wrong") and "offline" not in first
    assert line.startswith(f"{folder / 'b.json'}: the download from https://example.org/pinned/Results/b.json has "
                           f"sha256 {hashlib.sha256(b'tw0').hexdigest()}, the known file {hashlib.sha256(b'two').hexdigest()}")
    assert sorted(p.name for p in folder.iterdir()) == ["a.json"] and (folder / "a.json").read_bytes() == b"one"


def test_file_set_reports_a_wrong_local_file_with_both_hashes(tmp_path, two_file_set):
    # Prepare: both files there, b.json edited; the network is off (conftest)
    folder = tmp_path / "ffa_results" / "Results"
    folder.mkdir(parents=True)
    (folder / "a.json").write_bytes(b"one")
    (folder / "b.json").write_bytes(b"edited")

    # Execute
    with pytest.raises(DatasetError) as info:
        fetch_dataset("ffa-results", tmp_path)

    # Assert
    lines = str(info.value).split("\n")
    assert len(lines) == 2 and "1 of 2 files missing or wrong" in lines[0]
    assert lines[1] == (f"{folder / 'b.json'}: sha256 {hashlib.sha256(b'edited').hexdigest()} differs from the known "
                        f"{hashlib.sha256(b'two').hexdigest()}; replace it with https://example.org/pinned/Results/b.json")
    assert (folder / "b.json").read_bytes() == b"edited"  # reported, not deleted


def test_file_set_downloads_what_is_missing_and_replaces_a_wrong_file(tmp_path, monkeypatch, two_file_set):
    # Prepare: a.json already right, b.json wrong; the source serves the right b.json
    folder = tmp_path / "ffa_results" / "Results"
    folder.mkdir(parents=True)
    (folder / "a.json").write_bytes(b"one")
    (folder / "b.json").write_bytes(b"edited")
    calls = []
    _serve_pages(monkeypatch, {"https://example.org/pinned/Results/b.json": b"two"}, calls)

    # Execute
    path = fetch_dataset("ffa-results", tmp_path)

    # Assert: only b.json was downloaded; both right now; a second call downloads nothing
    assert path == tmp_path / "ffa_results"
    assert calls == ["https://example.org/pinned/Results/b.json"]
    assert sorted(p.name for p in folder.iterdir()) == ["a.json", "b.json"] and (folder / "b.json").read_bytes() == b"two"
    assert fetch_dataset("ffa-results", tmp_path) == path and len(calls) == 1


def test_file_set_leaves_no_partial_file_when_a_download_breaks(tmp_path, monkeypatch, two_file_set):
    # Prepare: the transfer of a.json stops half-way
    import urllib.error

    def broken(url, dest, timeout):
        dest.with_name(dest.name + ".part").write_bytes(b"o")
        raise urllib.error.URLError("connection reset")

    monkeypatch.setattr(fetch, "_download", broken)

    # Execute
    with pytest.raises(DatasetError, match="connection reset"):
        fetch_dataset("ffa-results", tmp_path)

    # Assert
    assert list((tmp_path / "ffa_results" / "Results").iterdir()) == []
