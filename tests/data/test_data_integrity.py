"""Known checksums are verified on load; corrupt files name themselves and say to re-fetch."""

from __future__ import annotations

import dataclasses
import hashlib
import warnings

import numpy as np
import pytest

from fltrust.config import DataConfig
from fltrust.data import SPECS, DataIntegrityWarning, DatasetError, dataset_info, load_cifar10, load_dataset
from fltrust.data.registry import STRICT_ENV


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def known_kdd(tmp_path, mk, monkeypatch, fresh_cache):
    """A tiny NSL-KDD root whose KDDTrain+.txt is registered as the known-good file."""
    folder = tmp_path / "root" / "nsl_kdd"
    lines = [mk.kdd_line(src_bytes=i, label="normal" if i % 2 else "smurf") for i in range(20)]
    train = mk.write_lines(folder / "KDDTrain+.txt", lines)
    mk.write_lines(folder / "KDDTest+.txt", lines[:4])
    known = sha(train)
    monkeypatch.setitem(SPECS, "nsl_kdd", dataclasses.replace(SPECS["nsl_kdd"], known_sha256={"KDDTrain+.txt": known}))
    monkeypatch.delenv(STRICT_ENV, raising=False)
    return DataConfig(name="nsl_kdd", root=str(tmp_path / "root")), train, known


def test_the_known_file_loads_silently(known_kdd):
    cfg, _, _ = known_kdd
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataIntegrityWarning)
        bundle = load_dataset(cfg)
    assert len(bundle.train) == 20 and "checksum_mismatch" not in bundle.source


def test_a_file_cut_at_a_line_boundary_warns_with_both_hashes(known_kdd):
    cfg, train, known = known_kdd
    train.write_text("\n".join(train.read_text().splitlines()[:12]) + "\n")

    with pytest.warns(DataIntegrityWarning) as caught:
        bundle = load_dataset(cfg)

    message = str(caught[0].message)
    assert str(train) in message and known in message and sha(train) in message and "re-fetch" in message
    assert len(bundle.train) == 12  # what was parsed ...
    assert bundle.source["train_files"][0]["sha256"] == sha(train)  # ... is what is recorded
    assert bundle.source["checksum_mismatch"] == [{"path": "KDDTrain+.txt", "sha256": sha(train), "expected": known}]


def test_strict_mode_makes_a_mismatch_an_error(known_kdd, monkeypatch):
    cfg, train, known = known_kdd
    train.write_text("\n".join(train.read_text().splitlines()[:12]) + "\n")
    monkeypatch.setenv(STRICT_ENV, "1")

    with pytest.raises(DatasetError, match="strict mode") as info:
        load_dataset(cfg)
    assert str(train) in str(info.value) and known in str(info.value)


def test_a_file_cut_mid_line_names_the_line_and_the_hash(known_kdd):
    cfg, train, known = known_kdd
    train.write_bytes(train.read_bytes()[:-30])

    with pytest.raises(DatasetError) as info:
        load_dataset(cfg)
    message = str(info.value)
    assert "KDDTrain+.txt line 20" in message and known[:12] in message and sha(train)[:12] in message


def test_dataset_info_reports_mismatches_without_warning(known_kdd):
    cfg, train, known = known_kdd
    train.write_text("\n".join(train.read_text().splitlines()[:5]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataIntegrityWarning)
        info = {entry["name"]: entry for entry in dataset_info(cfg.root)}
    assert info["nsl_kdd"]["checksum_mismatch"] == [{"path": "KDDTrain+.txt", "sha256": sha(train), "expected": known}]
    assert info["cifar10"]["checksum_mismatch"] == []


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04", None], ids=["empty", "zip-header-only", "truncated"])
def test_unreadable_cifar_npz_names_the_file_and_says_refetch(tmp_path, content, fresh_cache):
    folder = tmp_path / "cifar10"
    folder.mkdir()
    path = folder / "data.npz"
    if content is None:
        x = np.zeros((4, 32, 32, 3), dtype=np.uint8)
        np.savez_compressed(path, x_train=x, y_train=np.zeros(4, int), x_test=x, y_test=np.zeros(4, int))
        content = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(content)

    with pytest.raises(DatasetError, match="re-fetch") as info:
        load_cifar10(folder)
    assert str(path) in str(info.value)


def test_unreadable_cifar_batch_names_the_file(tmp_path, mk, fresh_cache):
    folder = tmp_path / "cifar10"
    mk.write_cifar_batches(folder)
    (folder / "data_batch_3").write_bytes(b"")

    with pytest.raises(DatasetError, match=r"data_batch_3: sha256 e3b0c442\w+ differs from the official "
                                           r"data_batch_3's .*re-fetch"):
        load_cifar10(folder)
