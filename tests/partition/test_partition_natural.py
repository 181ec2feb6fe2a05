"""Tests of fltrust.partition.natural."""

import logging

import numpy as np
import pytest

from fltrust.partition import NaturalPartitioner, PartitionError


def _groups() -> np.ndarray:
    # 5 writers with ids 10, 20, 30, 40, 50 holding 1, 2, 3, 4, 5 samples, interleaved
    return np.array([30, 10, 20, 50, 40, 30, 50, 20, 40, 50, 30, 40, 50, 40, 50])


def test_one_client_per_group_in_id_order_when_counts_match() -> None:
    # Prepare
    groups = _groups()
    y = np.zeros(len(groups), dtype=np.int64)
    partitioner = NaturalPartitioner(num_partitions=5, seed=0)
    # Execute
    parts = partitioner.partition(y, groups)
    # Assert
    expected = [[1], [2, 7], [0, 5, 10], [4, 8, 11, 13], [3, 6, 9, 12, 14]]
    assert [p.tolist() for p in parts] == expected
    assert all(p.dtype == np.int64 for p in parts)
    np.testing.assert_array_equal(partitioner.selected_groups_, [10, 20, 30, 40, 50])


def test_fewer_clients_picks_seeded_random_groups_and_reports_them(caplog) -> None:
    # Prepare
    groups = _groups()
    y = np.zeros(len(groups), dtype=np.int64)
    partitioner = NaturalPartitioner(num_partitions=3, seed=7)
    # Execute
    with caplog.at_level(logging.INFO, logger="fltrust.partition.natural"):
        parts = partitioner.partition(y, groups)
    # Assert: the chosen groups are the seeded draw, sorted, and each client holds exactly its group
    expected = np.sort(np.random.default_rng(7).choice([10, 20, 30, 40, 50], size=3, replace=False))
    np.testing.assert_array_equal(partitioner.selected_groups_, expected)
    for group, indices in zip(partitioner.selected_groups_, parts):
        np.testing.assert_array_equal(indices, np.flatnonzero(groups == group))
    assert str(expected.tolist()) in caplog.text


def test_group_choice_depends_on_seed() -> None:
    # Prepare: 40 groups of 2 samples, choose 5
    groups = np.repeat(np.arange(40), 2)
    y = np.zeros(80, dtype=np.int64)
    # Execute
    chosen = []
    for seed in (0, 0, 1):
        partitioner = NaturalPartitioner(5, seed=seed)
        partitioner.partition(y, groups)
        chosen.append(partitioner.selected_groups_.tolist())
    # Assert
    assert chosen[0] == chosen[1]
    assert chosen[0] != chosen[2]


def test_more_clients_than_groups_names_the_setting_and_the_limit() -> None:
    with pytest.raises(PartitionError, match=r"partition.num_clients=6 exceeds the 5 natural clients"):
        NaturalPartitioner(6, seed=0).partition(np.zeros(15, dtype=np.int64), _groups())


def test_missing_groups_says_the_dataset_has_no_natural_clients() -> None:
    with pytest.raises(PartitionError, match="no natural clients"):
        NaturalPartitioner(2, seed=0).partition(np.zeros(15, dtype=np.int64), None)


def test_groups_length_must_match_labels() -> None:
    with pytest.raises(PartitionError, match="groups has 15 entries but y has 3"):
        NaturalPartitioner(2, seed=0).partition(np.zeros(3, dtype=np.int64), _groups())
