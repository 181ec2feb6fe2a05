"""load_dataset dispatch and options, synthetic fallback, data root (dataset_info: test_data_info.py)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from fltrust.config import DATASETS, DataConfig
from fltrust.data import (
    GENERATORS,
    SPECS,
    DatasetError,
    DatasetNotFoundError,
    SyntheticFallbackWarning,
    cifar10,
    data_root,
    load_dataset,
    nsl_kdd,
)

# The hand-written NSL-KDD files below are not the official ones; their checksum warning is expected
# (tests/data/test_data_integrity.py tests it).
pytestmark = pytest.mark.filterwarnings("ignore::fltrust.data.registry.DataIntegrityWarning")


def test_registry_covers_every_configured_dataset():
    assert set(SPECS) | set(GENERATORS) == set(DATASETS)
    assert {spec.synthetic for spec in SPECS.values()} == set(GENERATORS)


def test_data_root_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("FLTRUST_DATA", str(tmp_path / "env"))
    assert data_root(tmp_path / "explicit") == tmp_path / "explicit"
    assert data_root() == tmp_path / "env"

    monkeypatch.delenv("FLTRUST_DATA")
    assert data_root() == Path("data")


def test_real_dataset_through_the_config(kdd_root):
    cfg = DataConfig(name="nsl_kdd", root=str(kdd_root), test_files=["KDDTest+.txt", "KDDTest-21.txt"])

    bundle = load_dataset(cfg)

    assert (len(bundle.train), len(bundle.test)) == (10, 5)
    assert bundle.source["onehot_order"] == "global" and not bundle.synthetic


def test_onehot_order_and_scaling_reach_the_nsl_kdd_loader(kdd_root):
    cfg = DataConfig(name="nsl_kdd", root=str(kdd_root), onehot_order="per_partition", scaling="fixed")

    bundle = load_dataset(cfg)

    assert bundle.source["onehot_order"] == "per_partition" and bundle.source["scaling"] == "fixed"
    src_bytes = nsl_kdd.FEATURE_NAMES.index("src_bytes")
    assert bundle.train.x[9, src_bytes] == pytest.approx(9 / 1379963888.0)  # the fixed maximum


def test_synthetic_dataset_uses_synthetic_samples_and_seed():
    cfg = DataConfig(name="synthetic_femnist", synthetic_samples=80)

    a, b = load_dataset(cfg, seed=4), load_dataset(cfg, seed=4)

    assert (len(a.train), len(a.test)) == (80, 20) and a.source["seed"] == 4
    np.testing.assert_array_equal(a.train.x, b.train.x)


def test_max_samples_is_a_seeded_ordered_subsample(kdd_root):
    cfg = DataConfig(name="nsl_kdd", root=str(kdd_root), max_train_samples=4, max_test_samples=100)
    full = load_dataset(DataConfig(name="nsl_kdd", root=str(kdd_root)))

    a, b, c = load_dataset(cfg, seed=1), load_dataset(cfg, seed=1), load_dataset(cfg, seed=2)

    assert len(a.train) == 4 and len(a.test) == 4  # test has only 4 rows: unchanged
    np.testing.assert_array_equal(a.train.x, b.train.x)
    rows = [int(np.flatnonzero((full.train.x == r).all(axis=1))[0]) for r in a.train.x]
    assert rows == sorted(rows)  # original order kept
    assert not np.array_equal(a.train.x, c.train.x)
    assert a.source["subsample"] == {"max_train_samples": 4, "max_test_samples": 100, "seed": 1}


def test_missing_files_raise_unless_fallback_is_allowed(tmp_path):
    cfg = DataConfig(name="nsl_kdd", root=str(tmp_path), synthetic_samples=40)
    with pytest.raises(DatasetNotFoundError, match=r"KDDTrain\+\.txt"):
        load_dataset(cfg)

    fallback = DataConfig(name="nsl_kdd", root=str(tmp_path), synthetic_samples=40, allow_synthetic_fallback=True)
    with pytest.warns(SyntheticFallbackWarning, match="SYNTHETIC stand-in synthetic_nsl_kdd"):
        bundle = load_dataset(fallback, seed=3)

    assert bundle.synthetic and bundle.name == "synthetic_nsl_kdd" and len(bundle.train) == 40
    assert bundle.source["requested"] == "nsl_kdd" and "KDDTrain+.txt" in bundle.source["fallback_reason"]
    assert bundle.source["seed"] == 3


def test_corrupt_files_never_fall_back(kdd_root, mk):
    mk.write_lines(kdd_root / "nsl_kdd" / "KDDTest+.txt", ["1,2,3"])
    cfg = DataConfig(name="nsl_kdd", root=str(kdd_root), allow_synthetic_fallback=True)

    with warnings.catch_warnings():
        warnings.simplefilter("error", SyntheticFallbackWarning)
        with pytest.raises(DatasetError, match="got 3"):
            load_dataset(cfg)


def test_options_that_do_not_apply_are_errors(tmp_path):
    with pytest.raises(DatasetError, match="onehot_order"):
        load_dataset(DataConfig(name="synthetic_cifar10", onehot_order="per_partition"))
    with pytest.raises(DatasetError, match="scaling"):
        load_dataset(DataConfig(name="synthetic_femnist", scaling="fixed"))
    with pytest.raises(DatasetError, match="balance"):
        load_dataset(DataConfig(name="nsl_kdd", root=str(tmp_path), balance=True))
    with pytest.raises(DatasetError, match="train_files"):
        load_dataset(DataConfig(name="n_baiot", root=str(tmp_path), train_files=["x.csv"]))


def test_n_baiot_config_options_reach_the_loader(tmp_path, mk, n_baiot_rows):
    mk.write_n_baiot_uci(tmp_path / "n_baiot", n_baiot_rows)

    bundle = load_dataset(DataConfig(name="n_baiot", root=str(tmp_path), balance=True), seed=7)

    assert bundle.source["balance"] is True and bundle.source["seed"] == 7
    assert len(bundle.group_names) == 3


def test_femnist_stand_in_has_as_many_writers_as_the_local_subset(tmp_path):
    # trust experiments 2-3 need 50 and 100 natural clients, also on a bare clone
    from fltrust.data.registry import FALLBACK_FEMNIST_WRITERS

    with pytest.warns(UserWarning, match="SYNTHETIC"):
        bundle = load_dataset(DataConfig(name="femnist", root=str(tmp_path), allow_synthetic_fallback=True))
    assert bundle.synthetic and len(bundle.group_names) == FALLBACK_FEMNIST_WRITERS == 110


def test_pooled_train_samples_redraws_the_split_from_the_pool():
    from fltrust.data.registry import pool_and_split

    cfg = DataConfig(name="synthetic_cifar10", synthetic_samples=40)
    bundle = load_dataset(cfg, seed=0)
    total = len(bundle.train) + len(bundle.test)

    pooled = load_dataset(DataConfig(name="synthetic_cifar10", synthetic_samples=40, pooled_train_samples=45), seed=0)

    assert (len(pooled.train), len(pooled.test)) == (45, total - 45)
    pool_y = np.concatenate([bundle.train.y, bundle.test.y])
    np.testing.assert_array_equal(np.sort(np.concatenate([pooled.train.y, pooled.test.y])), np.sort(pool_y))
    assert pooled.source["pooled"] == {"train_samples": 45, "test_samples": total - 45, "seed": 0}
    again = pool_and_split(bundle, 45, seed=0)
    np.testing.assert_array_equal(again.train.x, pooled.train.x)
    with pytest.raises(DatasetError, match=rf"data.pooled_train_samples={total} needs a larger pool.*at most {total - 1}"):
        pool_and_split(bundle, total, seed=0)


def test_the_provenance_page_states_the_checksums_the_registry_checks():
    # Prepare: the provenance page (data/PROVENANCE.md#cifar10, #nsl-kdd, #n-baiot) states the sha256 of every
    # mirror file the registry knows by digest (FEMNIST's 120 and the authors' 72: their committed sums files)
    page = (Path(__file__).resolve().parents[2] / "data" / "PROVENANCE.md").read_text(encoding="utf-8")
    lines = page.splitlines()
    known = {digest: path for name in ("cifar10", "nsl_kdd", "n_baiot")
             for path, digest in SPECS[name].known_sha256.items() if digest not in cifar10.OFFICIAL_SHA256.values()}

    # Execute: each digest on the page with the file name of its line (or of the heading above it)
    stated = {}
    for number, line in enumerate(lines):
        for digest in re.findall(r"\b[0-9a-f]{64}\b", line):
            heading = next((lines[i] for i in range(number, -1, -1) if lines[i].startswith("#")), "")
            stated[digest] = line + heading

    # Assert
    assert set(stated) == set(known)
    for digest, path in known.items():
        assert Path(path).name in stated[digest], (path, digest)
    for name in ("femnist", "ffa_results"):
        assert f"fltrust/data/known_sha256/{name}.sha256" in page
