"""Tests of fltrust.partition.splits (validation splits, aux set, counts, factory)."""

import numpy as np
import pytest

from fltrust.config import ConfigError, PartitionConfig
from fltrust.partition import (
    ClientSplits,
    DirichletPartitioner,
    IidPartitioner,
    NaturalPartitioner,
    PartitionError,
    build_client_splits,
    class_counts,
    make_partitioner,
    select_aux,
    train_val_split,
)


# -- train_val_split ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("n", "fraction", "expected_val"),
    [
        (1512, 0.01, 16),  # NSL-KDD iid (fairness spec 6.7, docs/references.md#fairness-6-7)
        (1511, 0.01, 16),
        (500, 0.1, 50),  # CIFAR-10 iid, 100 clients (fairness spec 6.5, docs/references.md#fairness-6-5)
        (5000, 0.1, 500),
        (11, 0.1, 2),  # ceil(1.1)
        (100, 0.07, 8),  # float product 7.000000000000001, as in Hugging Face / scikit-learn
        (10, 0.0, 0),
        (1, 0.5, 0),  # keeps its one training sample
        (2, 0.9, 1),  # ceil(1.8) = 2 would leave no training sample
        (0, 0.1, 0),
    ],
)
def test_val_size_is_ceil_of_fraction_keeping_one_training_sample(n, fraction, expected_val) -> None:
    # Prepare
    indices = np.arange(100, 100 + n)
    # Execute
    train, val = train_val_split(indices, fraction, np.random.default_rng(0))
    # Assert
    assert len(val) == expected_val
    assert len(train) == n - expected_val
    np.testing.assert_array_equal(np.sort(np.concatenate([train, val])), indices)
    assert train.dtype == val.dtype == np.int64


def test_val_split_takes_the_first_permuted_samples_like_hugging_face() -> None:
    # Prepare
    indices = np.arange(50, 70)
    permutation = np.random.default_rng(9).permutation(20)
    # Execute
    train, val = train_val_split(indices, 0.25, np.random.default_rng(9))
    # Assert
    np.testing.assert_array_equal(val, indices[permutation[:5]])
    np.testing.assert_array_equal(train, indices[permutation[5:]])


@pytest.mark.parametrize("fraction", [-0.1, 1.0, 1.5])
def test_val_fraction_out_of_range_rejected(fraction) -> None:
    with pytest.raises(PartitionError, match="partition.val_fraction"):
        train_val_split(np.arange(10), fraction, np.random.default_rng(0))


# -- select_aux --------------------------------------------------------------------------------
def test_aux_size_is_ceil_of_fraction_of_test_split() -> None:
    # Prepare: NSL-KDD test split (fairness spec 6.7: 1 % of 34,394 = 344 rows)
    rng = np.random.default_rng(0)
    # Execute
    aux = select_aux(34_394, 0.01, None, rng)
    # Assert
    assert len(aux) == 344
    assert aux.dtype == np.int64
    assert len(np.unique(aux)) == 344
    assert aux.min() >= 0 and aux.max() < 34_394
    assert np.all(np.diff(aux) > 0)


def test_aux_whole_test_split_and_cap() -> None:
    np.testing.assert_array_equal(select_aux(10, 1.0, None, np.random.default_rng(0)), np.arange(10))
    assert len(select_aux(10_000, 1.0, 500, np.random.default_rng(0))) == 500
    assert len(select_aux(10_000, 0.01, 500, np.random.default_rng(0))) == 100
    assert len(select_aux(10, 0.5, 20, np.random.default_rng(0))) == 5


def test_aux_draw_is_deterministic_for_a_seed_and_differs_across_seeds() -> None:
    # Execute
    a = select_aux(1000, 0.1, None, np.random.default_rng(3))
    b = select_aux(1000, 0.1, None, np.random.default_rng(3))
    c = select_aux(1000, 0.1, None, np.random.default_rng(4))
    # Assert
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize(
    ("n_test", "fraction", "max_samples", "match"),
    [
        (0, 0.5, None, "test split is empty"),
        (10, 0.0, None, "aux_fraction"),
        (10, 1.2, None, "aux_fraction"),
        (10, 0.5, 0, "aux_max_samples"),
    ],
)
def test_aux_bad_input_rejected(n_test, fraction, max_samples, match) -> None:
    with pytest.raises(PartitionError, match=match):
        select_aux(n_test, fraction, max_samples, np.random.default_rng(0))


# -- class_counts ------------------------------------------------------------------------------
def test_class_counts_hand_example() -> None:
    # Prepare: labels by index 0..7
    y = np.array([0, 2, 2, 1, 0, 2, 1, 1])
    empty = np.array([], dtype=np.int64)
    partitions = [np.array([0, 1, 2]), np.array([3, 6, 7]), np.array([4, 5]), empty]
    # Execute
    counts = class_counts(y, partitions, num_classes=4)
    # Assert
    expected = np.array([[1, 0, 2, 0], [0, 3, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(counts, expected)
    assert counts.dtype == np.int64


def test_class_counts_rejects_labels_outside_num_classes() -> None:
    with pytest.raises(PartitionError, match="num_classes=2"):
        class_counts(np.array([0, 1, 2]), [np.arange(3)], num_classes=2)


# -- make_partitioner --------------------------------------------------------------------------
def test_make_partitioner_builds_the_configured_scheme() -> None:
    # Execute
    iid = make_partitioner(PartitionConfig(num_clients=4, scheme="iid"), seed=5)
    dirichlet = make_partitioner(
        PartitionConfig(
            num_clients=6, scheme="dirichlet", alpha=3.0, min_partition_size=7, self_balancing=False, seed=42
        ),
        seed=5,
    )
    natural = make_partitioner(PartitionConfig(num_clients=3, scheme="natural"), seed=5)
    # Assert
    assert isinstance(iid, IidPartitioner) and (iid.num_partitions, iid.seed) == (4, 5)
    assert isinstance(dirichlet, DirichletPartitioner)
    assert (dirichlet.num_partitions, dirichlet.alpha, dirichlet.min_partition_size) == (6, 3.0, 7)
    assert dirichlet.self_balancing is False
    assert dirichlet.seed == 42  # partition.seed overrides the run seed
    assert isinstance(natural, NaturalPartitioner) and natural.num_partitions == 3


# -- build_client_splits -----------------------------------------------------------------------
def test_build_client_splits_iid_layout() -> None:
    # Prepare: 20 clients of 1512 samples, 1 % validation (the NSL-KDD iid setting, fairness spec 6.7)
    y = np.random.default_rng(0).integers(0, 2, 30_240)
    cfg = PartitionConfig(num_clients=20, scheme="iid", val_fraction=0.01, aux_fraction=0.01)
    # Execute
    splits = build_client_splits(y, None, cfg, seed=1, n_test=34_394)
    # Assert
    assert isinstance(splits, ClientSplits)
    assert splits.num_clients == 20 and splits.seed == 1 and splits.scheme == "iid"
    assert all(len(v) == 16 for v in splits.val)
    np.testing.assert_array_equal(splits.num_samples(), np.full(20, 1496))
    everything = np.concatenate(splits.train + splits.val)
    np.testing.assert_array_equal(np.sort(everything), np.arange(len(y)))
    np.testing.assert_array_equal(splits.class_counts, class_counts(y, splits.train, 2))
    np.testing.assert_array_equal(splits.val_class_counts, class_counts(y, splits.val, 2))
    assert splits.class_counts.shape == (20, 2)
    assert len(splits.aux) == 344 and splits.client_groups is None
    summary = splits.summary()
    assert summary["val_samples"] == [16] * 20 and summary["aux_samples"] == 344


def test_build_client_splits_is_deterministic_and_seed_dependent() -> None:
    # Prepare
    y = np.random.default_rng(0).integers(0, 5, 2000)
    cfg = PartitionConfig(num_clients=8, scheme="dirichlet", alpha=0.5, val_fraction=0.2)
    # Execute
    a = build_client_splits(y, None, cfg, seed=3, n_test=500)
    b = build_client_splits(y, None, cfg, seed=3, n_test=500)
    c = build_client_splits(y, None, cfg, seed=4, n_test=500)
    # Assert
    assert all(np.array_equal(s, t) for s, t in zip(a.train + a.val, b.train + b.val))
    np.testing.assert_array_equal(a.aux, b.aux)
    assert not all(np.array_equal(s, t) for s, t in zip(a.train, c.train))


def test_aux_from_the_client_pool_overlaps_the_clients_and_skips_unselected_rows() -> None:
    # Prepare: natural split of 4 groups x 10 rows, 2 clients chosen: 20 rows in the client pool
    groups = np.repeat([1, 2, 3, 4], 10)
    y = np.tile([0, 1], 20)
    cfg = PartitionConfig(num_clients=2, scheme="natural", val_fraction=0.1, aux_fraction=0.5,
                          aux_source="client_pool")
    # Execute
    splits = build_client_splits(y, groups, cfg, seed=0, n_test=7)
    # Assert: |D| = ceil(0.5 x 20) = 10 distinct rows, all of them rows of the two clients
    pool = set(np.concatenate(splits.train + splits.val).tolist())
    assert len(pool) == 20 and len(splits.aux) == 10 == len(set(splits.aux.tolist()))
    assert set(splits.aux.tolist()) <= pool
    assert splits.summary()["aux_source"] == "client_pool"
    # the default draws from the test split instead: indices below n_test
    default = build_client_splits(y, groups, PartitionConfig(num_clients=2, scheme="natural"), seed=0, n_test=7)
    assert default.aux.tolist() == list(range(7)) and default.summary()["aux_source"] == "test"


def test_aux_source_is_validated() -> None:
    from fltrust.config import ConfigError

    with pytest.raises(ConfigError, match="partition.aux_source"):
        PartitionConfig(aux_source="train")


def test_build_client_splits_natural_records_groups_and_num_classes() -> None:
    # Prepare: 4 devices, 3 chosen; 3 classes declared although only labels 0 and 1 occur
    groups = np.repeat([101, 102, 103, 104], 10)
    y = np.tile([0, 1], 20)
    cfg = PartitionConfig(num_clients=3, scheme="natural", val_fraction=0.1)
    # Execute
    splits = build_client_splits(y, groups, cfg, seed=0, num_classes=3)
    # Assert
    assert len(splits.client_groups) == 3
    assert set(splits.client_groups.tolist()) <= {101, 102, 103, 104}
    for group, train, val in zip(splits.client_groups, splits.train, splits.val):
        assert np.all(groups[train] == group) and np.all(groups[val] == group)
        assert (len(train), len(val)) == (9, 1)
    assert splits.class_counts.shape == (3, 3) and splits.class_counts[:, 2].sum() == 0
    assert splits.aux is None



def test_three_way_split_has_federatedscope_sizes():
    from fltrust.partition.splits import three_way_split

    # n = 17: train floor(0.6 * 17) = 10; rest 7: val floor(0.5 * 7) = 3 (left out); test 4
    train, test = three_way_split(np.arange(100, 117), [0.6, 0.2, 0.2], np.random.default_rng(3))
    assert (len(train), len(test)) == (10, 4)
    assert not set(train.tolist()) & set(test.tolist())
    assert set(train.tolist()) | set(test.tolist()) <= set(range(100, 117))
    # n = 2: train 1, rest 1 -> val 0, test 1
    assert [len(a) for a in three_way_split(np.arange(2), [0.6, 0.2, 0.2], np.random.default_rng(0))] == [1, 1]


def test_client_splits_replace_val_fraction_in_build_client_splits():
    y = np.repeat(np.arange(4), 25)
    cfg = PartitionConfig(num_clients=4, scheme="iid", val_fraction=0.5, client_splits=[0.6, 0.2, 0.2])

    splits = build_client_splits(y, None, cfg, seed=0)

    assert [len(t) for t in splits.train] == [15] * 4  # floor(0.6 * 25)
    assert [len(v) for v in splits.val] == [5] * 4  # rest 10: 5 validation rows left out, 5 held out


@pytest.mark.parametrize("bad", [[0.6, 0.4], [0.6, 0.3, 0.2], [1.0, 0.0, 0.0], [0.6, -0.1, 0.5]])
def test_client_splits_must_be_three_shares_summing_to_one(bad):
    with pytest.raises(ConfigError, match=r"partition.client_splits=.* must be three shares \[train, val, test\]"):
        PartitionConfig(client_splits=bad)


def test_three_way_split_keeps_a_one_row_client_for_training():
    from fltrust.partition.splits import three_way_split

    train, test = three_way_split(np.arange(5, 6), [0.6, 0.2, 0.2], np.random.default_rng(0))
    assert train.tolist() == [5] and test.tolist() == []
