"""What is on disk (fltrust.data.info): file listings, known checksums and sample counts."""

from __future__ import annotations

import hashlib

import pytest

from fltrust.data import dataset_info


def test_fltrust_data_exports_the_info_functions():
    import fltrust.data
    from fltrust.data import info

    assert fltrust.data.dataset_info is info.dataset_info
    assert "dataset_info" in fltrust.data.__all__


def test_dataset_info_reports_files_checksums_and_counts(kdd_root):
    info = {entry["name"]: entry for entry in dataset_info(kdd_root)}

    assert list(info) == ["cifar10", "femnist", "nsl_kdd", "n_baiot", "ffa-results"]
    kdd = info["nsl_kdd"]
    assert kdd["found"] and (kdd["train_samples"], kdd["test_samples"]) == (10, 4)
    assert kdd["folder"] == str(kdd_root / "nsl_kdd") and kdd["fetch"] == "manual"
    files = {f["path"]: f for f in kdd["files"]}
    content = (kdd_root / "nsl_kdd" / "KDDTrain+.txt").read_bytes()
    assert files["KDDTrain+.txt"] == {
        "path": "KDDTrain+.txt",
        "bytes": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "known": False,  # not the official file
    }
    assert not info["cifar10"]["found"] and "CIFAR-10 not found" in info["cifar10"]["problem"]
    assert info["femnist"]["files"] == []


@pytest.mark.realdata
def test_dataset_info_on_the_real_root(mk):
    root = mk.real_folder("nsl_kdd", "KDDTrain+.txt").parent

    info = {entry["name"]: entry for entry in dataset_info(root)}

    kdd = info["nsl_kdd"]
    assert kdd["found"] and (kdd["train_samples"], kdd["test_samples"]) == (125_973, 22_544)
    assert all(f["known"] for f in kdd["files"] if f["path"].endswith(".txt"))
    if info["femnist"]["found"]:
        femnist = info["femnist"]
        assert (femnist["natural_clients"], femnist["train_samples"], femnist["test_samples"]) == (311, 42_531, 4_883)
        assert all(f["known"] for f in femnist["files"] if ".json" in f["path"])
    if info["cifar10"]["found"]:
        cifar = info["cifar10"]
        assert (cifar["natural_clients"], cifar["train_samples"] + cifar["test_samples"]) == (100, 59_799)
        assert all(f["known"] for f in cifar["files"] if f["path"].endswith(".npz"))


def test_dataset_info_lists_the_authors_result_files(tmp_path):
    # Prepare: one of the 72 files in place (not the published bytes)
    from fltrust.data.registry import REFERENCE_SPECS

    folder = tmp_path / "ffa_results" / "Results"
    folder.mkdir(parents=True)
    (folder / "FedAvg_NSLKDD_iid_100C_5PC_5E_30R_v1.json").write_text("{}")

    # Execute
    entry = {e["name"]: e for e in dataset_info(tmp_path, count=False)}["ffa-results"]

    # Assert
    known = REFERENCE_SPECS["ffa-results"].known_sha256["Results/FedAvg_NSLKDD_iid_100C_5PC_5E_30R_v1.json"]
    assert entry["folder"] == str(tmp_path / "ffa_results") and entry["fetch"] == "download"
    assert "5e3115eb2350501e93a6b1f6d085d43d08078da8" in entry["source"]
    assert (entry["found"], entry["files_expected"], entry["files_missing"]) == (False, 72, 71)
    assert entry["problem"].startswith(f"71 of 72 files missing from {tmp_path / 'ffa_results'} (e.g. Results/Ditto_")
    assert entry["problem"].endswith("fetch them: fltrust data fetch ffa-results")
    assert entry["checksum_mismatch"] == [{"path": "Results/FedAvg_NSLKDD_iid_100C_5PC_5E_30R_v1.json",
                                           "sha256": hashlib.sha256(b"{}").hexdigest(), "expected": known}]


@pytest.mark.realdata
def test_dataset_info_finds_the_authors_72_files(mk):
    root = mk.real_folder("ffa_results", "Results").parent

    entry = {e["name"]: e for e in dataset_info(root, count=False)}["ffa-results"]

    assert entry["found"] and entry["files_missing"] == 0 and entry["checksum_mismatch"] == []
    assert sum(f["known"] is True for f in entry["files"]) == 72
