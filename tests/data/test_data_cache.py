"""Parsed-data cache: parse once, key on file identity, atomic writes, memory cache, sha256 memo."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from fltrust.data import cache, femnist, load_femnist, load_nsl_kdd, nsl_kdd


@pytest.fixture
def kdd_folder(tmp_path, mk):
    folder = tmp_path / "nsl_kdd"
    train = [mk.kdd_line(src_bytes=5), mk.kdd_line("udp", "IRC", "S0", "neptune")]
    mk.write_lines(folder / "KDDTrain+.txt", train)
    mk.write_lines(folder / "KDDTest+.txt", [mk.kdd_line("icmp", "ecr_i", "REJ", "smurf", src_bytes=3)])
    return folder


def forbid(monkeypatch, module, name):
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} was called: the cache did not serve the parse")

    monkeypatch.setattr(module, name, fail)


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c"

    monkeypatch.delenv(cache.CACHE_ENV)
    assert cache.cache_dir() == cache.Path.home() / ".cache" / "fltrust" / "datasets"


def test_second_load_is_served_from_disk_without_parsing(fresh_cache, kdd_folder, monkeypatch):
    first = load_nsl_kdd(kdd_folder)
    cache.clear_memory_cache()  # a new process would start here
    forbid(monkeypatch, nsl_kdd, "_parse_kdd_file")

    second = load_nsl_kdd(kdd_folder)

    np.testing.assert_array_equal(first.train.x, second.train.x)
    np.testing.assert_array_equal(first.test.extras["attack"], second.test.extras["attack"])
    assert sorted(p.suffix for p in fresh_cache.glob("nsl_kdd_file-*")) == [".json", ".json", ".npz", ".npz"]
    assert not [p for p in fresh_cache.rglob("*") if p.name.endswith(".tmp")]  # atomic writes leave no temp files


def test_second_load_in_process_needs_neither_parser_nor_disk(fresh_cache, kdd_folder, monkeypatch):
    load_nsl_kdd(kdd_folder)
    for path in fresh_cache.glob("nsl_kdd_file-*"):
        path.unlink()
    forbid(monkeypatch, nsl_kdd, "_parse_kdd_file")

    bundle = load_nsl_kdd(kdd_folder)

    assert len(bundle.train) == 2


def test_editing_a_source_file_invalidates_its_entry(fresh_cache, kdd_folder, mk):
    load_nsl_kdd(kdd_folder)
    path = kdd_folder / "KDDTrain+.txt"
    mk.write_lines(path, path.read_text().splitlines() + [mk.kdd_line("tcp", "smtp", "SF", "normal")])

    bundle = load_nsl_kdd(kdd_folder)

    assert len(bundle.train) == 3


def test_a_corrupt_entry_is_ignored_and_rebuilt(fresh_cache, kdd_folder):
    load_nsl_kdd(kdd_folder)
    cache.clear_memory_cache()
    for path in fresh_cache.glob("nsl_kdd_file-*.npz"):
        path.write_bytes(b"garbage")

    with pytest.warns(RuntimeWarning, match="unreadable dataset cache entry"):
        bundle = load_nsl_kdd(kdd_folder)

    assert len(bundle.train) == 2


def test_femnist_json_is_parsed_once(fresh_cache, tmp_path, mk, monkeypatch):
    folder = tmp_path / "femnist"
    mk.write_json(folder / "train" / "a.json", mk.leaf_shard({"w": (np.full((2, 784), 0.5), [1, 2])}))
    mk.write_json(folder / "test" / "a.json", mk.leaf_shard({"w": (np.full((1, 784), 0.5), [3])}))
    load_femnist(folder)
    cache.clear_memory_cache()
    forbid(monkeypatch, femnist, "_parse_shards")

    bundle = load_femnist(folder)

    assert bundle.group_names == ["w"] and len(bundle.train) == 2


def test_cached_arrays_are_read_only_but_bundles_are_not(fresh_cache, kdd_folder):
    arrays, _ = cache.cached_arrays("nsl_kdd_file", [kdd_folder / "KDDTrain+.txt"],
                                    lambda: nsl_kdd._parse_kdd_file(kdd_folder / "KDDTrain+.txt"))
    assert not arrays["continuous"].flags.writeable

    bundle = load_nsl_kdd(kdd_folder)

    assert bundle.train.x.flags.writeable and bundle.train.extras["service"].flags.writeable


def test_file_sha256_is_memoised_per_file_state(fresh_cache, tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    assert cache.file_sha256(path) == hashlib.sha256(b"abc").hexdigest()

    path.write_bytes(b"abcd")
    os.utime(path, ns=(1, 1))  # new size and mtime -> new entry

    assert cache.file_sha256(path) == hashlib.sha256(b"abcd").hexdigest()
    expected = {"path": "f.bin", "bytes": 4, "sha256": hashlib.sha256(b"abcd").hexdigest()}
    assert cache.file_record(path, tmp_path) == expected


def test_cache_key_changes_with_options_and_files(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("1")
    b.write_text("22")

    keys = {
        cache.cache_key("k", [a]),
        cache.cache_key("k", [a], {"opt": 1}),
        cache.cache_key("k", [b]),
        cache.cache_key("other", [a]),
    }

    assert len(keys) == 4 and cache.cache_key("k", [a]) == cache.cache_key("k", [a])


def test_in_place_edit_with_restored_mtime_is_reparsed(fresh_cache, kdd_folder):
    """``cp -p`` / ``rsync -t`` restore the old file time: the content hash still sees the edit."""
    path = kdd_folder / "KDDTrain+.txt"
    first = load_nsl_kdd(kdd_folder)
    old = path.stat()
    edited = path.read_text().replace(",neptune,", ",ipsweep,")  # same size, new content
    assert len(edited) == old.st_size and edited != path.read_text()
    path.write_text(edited)
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (old.st_size, old.st_mtime_ns)

    second = load_nsl_kdd(kdd_folder)

    assert list(first.train.extras["attack"]) == ["normal", "neptune"]
    assert list(second.train.extras["attack"]) == ["normal", "ipsweep"]  # reparsed, not the stale entry
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert second.source["train_files"][0]["sha256"] == digest != first.source["train_files"][0]["sha256"]
    cache.clear_memory_cache()  # a new process: the on-disk sha256 memo must not revive the old digest
    assert load_nsl_kdd(kdd_folder).source["train_files"][0]["sha256"] == digest


def test_cache_key_is_the_content_not_the_file_time(tmp_path):
    a = tmp_path / "a"
    a.write_text("1")
    key = cache.cache_key("k", [a])
    os.utime(a, ns=(5, 5))
    assert cache.cache_key("k", [a]) == key  # touching without editing keeps the entry
    a.write_text("2")
    os.utime(a, ns=(5, 5))
    assert cache.cache_key("k", [a]) != key


def test_a_file_that_changes_during_the_parse_is_not_cached(fresh_cache, tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("a")

    def build():
        path.write_text("bb")
        return {"x": np.zeros(1)}, {}

    with pytest.raises(cache.DatasetError, match="changed while it was being read"):
        cache.cached_arrays("k", [path], build)
    assert not list(fresh_cache.glob("k-*"))


def test_an_edited_entry_is_discarded_and_the_source_parsed_again(fresh_cache, kdd_folder):
    """A cache entry edited to label every row 'normal' must not reach a run."""
    first = load_nsl_kdd(kdd_folder)
    cache.clear_memory_cache()
    (entry,) = [p for p in fresh_cache.glob("nsl_kdd_file-*.npz")
                if json.loads(p.with_suffix(".json").read_text())["meta"] == {"rows": 2}]  # KDDTrain+.txt
    with np.load(entry) as data:
        arrays = {name: data[name] for name in data.files}
    assert arrays["attack"].tolist() == ["normal", "neptune"]
    arrays["attack"][:] = "normal"
    np.savez(entry, **arrays)

    with pytest.warns(RuntimeWarning, match=r"nsl_kdd_file-.*\.npz: its arrays changed after they were written"):
        again = load_nsl_kdd(kdd_folder)

    np.testing.assert_array_equal(again.train.y, first.train.y)
    assert again.train.y.tolist() == [0, 1]  # normal, attack: parsed from the source again
    with np.load(entry) as data:
        assert data["attack"].tolist() == ["normal", "neptune"]  # and the entry rewritten


def test_arrays_sha256_covers_names_dtypes_shapes_and_bytes():
    base = {"x": np.arange(4, dtype=np.int32)}
    variants = [{"y": np.arange(4, dtype=np.int32)}, {"x": np.arange(4, dtype=np.int64)},
                {"x": np.arange(4, dtype=np.int32).reshape(2, 2)}, {"x": np.array([0, 1, 2, 4], np.int32)}]
    assert len({cache.arrays_sha256(a) for a in [base, *variants]}) == 5
    assert cache.arrays_sha256(base) == cache.arrays_sha256({"x": np.arange(4, dtype=np.int32)})
