"""Tests of fltrust.partition.dirichlet."""

import numpy as np
import pytest

from fltrust.partition import DirichletPartitioner, PartitionError, class_counts


def _labels(n: int = 5000, k: int = 10, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, k, n)


def _mean_label_entropy(y: np.ndarray, parts: list[np.ndarray], k: int) -> float:
    counts = class_counts(y, parts, k).astype(float)
    shares = counts / counts.sum(axis=1, keepdims=True)
    logs = np.log(shares, out=np.zeros_like(shares), where=shares > 0)
    return float(np.mean(-(shares * logs).sum(axis=1)))


class _FixedProportions:
    """Stand-in generator whose Dirichlet draws are given in advance."""

    def __init__(self, draws: list[list[float]]) -> None:
        self.draws = [np.array(d) for d in draws]

    def dirichlet(self, alpha: np.ndarray) -> np.ndarray:
        return self.draws.pop(0)


def test_every_sample_assigned_exactly_once() -> None:
    # Prepare
    y = _labels(3000)
    # Execute
    parts = DirichletPartitioner(num_partitions=12, alpha=0.5, seed=4).partition(y)
    # Assert
    assert len(parts) == 12
    allocated = np.concatenate(parts)
    assert allocated.dtype == np.int64
    np.testing.assert_array_equal(np.sort(allocated), np.arange(3000))


def test_same_seed_same_partition_other_seed_different() -> None:
    # Prepare
    y = _labels(2000)
    # Execute
    first = DirichletPartitioner(8, 0.5, seed=1).partition(y)
    again = DirichletPartitioner(8, 0.5, seed=1).partition(y)
    other = DirichletPartitioner(8, 0.5, seed=2).partition(y)
    # Assert
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_label_skew_grows_as_alpha_falls(seed: int) -> None:
    # Prepare
    y = _labels(5000, k=10, seed=seed)
    # Execute
    entropies = [
        _mean_label_entropy(y, DirichletPartitioner(10, alpha, seed=seed).partition(y), 10)
        for alpha in (100.0, 1.0, 0.1)
    ]
    # Assert: near-uniform (ln 10 = 2.303) at alpha=100, then strictly decreasing
    assert entropies[0] > 2.25
    assert entropies[0] > entropies[1] > entropies[2]


@pytest.mark.parametrize("seed", range(8))
def test_min_partition_size_respected_even_when_redraws_are_needed(seed: int) -> None:
    # Prepare: settings where about a third of the first draws fail (redraw path exercised)
    y = np.repeat(np.arange(10), 100)
    partitioner = DirichletPartitioner(10, alpha=0.3, seed=seed, min_partition_size=40)
    # Execute
    parts = partitioner.partition(y)
    # Assert
    assert min(len(p) for p in parts) >= 40
    assert 1 <= partitioner.attempts_ <= partitioner.max_attempts
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(1000))


def test_some_seed_needs_a_redraw() -> None:
    # Prepare
    y = np.repeat(np.arange(10), 100)
    # Execute
    attempts = []
    for seed in range(8):
        partitioner = DirichletPartitioner(10, alpha=0.3, seed=seed, min_partition_size=40)
        partitioner.partition(y)
        attempts.append(partitioner.attempts_)
    # Assert
    assert max(attempts) > 1


def test_unreachable_min_partition_size_raises_naming_alpha_and_min_size() -> None:
    # Prepare: 100 samples, 10 clients of at least 10 each needs an exactly even split
    y = np.repeat(np.arange(2), 50)
    partitioner = DirichletPartitioner(10, alpha=0.01, seed=0, min_partition_size=10, max_attempts=5)
    # Execute / Assert
    with pytest.raises(PartitionError, match=r"after 5 draws.*min_partition_size=10.*alpha=0.01"):
        partitioner.partition(y)


def test_impossible_min_partition_size_fails_before_drawing() -> None:
    with pytest.raises(PartitionError, match="min_partition_size=11 times partition.num_clients=10"):
        DirichletPartitioner(10, alpha=1.0, seed=0, min_partition_size=11).partition(np.zeros(100, dtype=int))


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_alpha_rejected(alpha: float) -> None:
    with pytest.raises(PartitionError, match="partition.alpha"):
        DirichletPartitioner(4, alpha=alpha, seed=0)


def test_draw_cuts_classes_at_cumulative_proportions_with_self_balancing() -> None:
    # Prepare: 3 clients, 30 samples -> average 10. Class 0 = samples 0..14, class 1 = 15..29.
    # Class 0 with p = (0.8, 0.1, 0.1): cuts int([12, 13.5]) = [12, 13] -> sizes 12, 1, 2.
    # Class 1 with p = (0.5, 0.25, 0.25): client 0 holds 12 > 10, so p -> (0, 0.5, 0.5),
    # cuts int([0, 7.5]) = [0, 7] -> client 1 gets 15..21, client 2 gets 22..29.
    partitioner = DirichletPartitioner(3, alpha=1.0, seed=0, min_partition_size=0)
    classes = [np.arange(15), np.arange(15, 30)]
    rng = _FixedProportions([[0.8, 0.1, 0.1], [0.5, 0.25, 0.25]])
    # Execute
    clients = partitioner._draw(classes, 30, rng)
    # Assert
    assert clients == [list(range(12)), [12, *range(15, 22)], [13, 14, *range(22, 30)]]


def test_draw_without_self_balancing_keeps_the_drawn_proportions() -> None:
    # Prepare: same draws; class 1 cuts int([7.5, 11.25]) = [7, 11]
    partitioner = DirichletPartitioner(3, alpha=1.0, seed=0, min_partition_size=0, self_balancing=False)
    classes = [np.arange(15), np.arange(15, 30)]
    rng = _FixedProportions([[0.8, 0.1, 0.1], [0.5, 0.25, 0.25]])
    # Execute
    clients = partitioner._draw(classes, 30, rng)
    # Assert
    assert clients == [[*range(12), *range(15, 22)], [12, *range(22, 26)], [13, 14, *range(26, 30)]]


def test_draw_is_rejected_when_balancing_leaves_only_zero_proportions() -> None:
    # Prepare: client 0 is above average, clients 1 and 2 drew exactly 0 (underflow at tiny alpha)
    partitioner = DirichletPartitioner(3, alpha=1.0, seed=0, min_partition_size=0)
    classes = [np.arange(15), np.arange(15, 30)]
    rng = _FixedProportions([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    # Execute / Assert
    assert partitioner._draw(classes, 30, rng) is None


def test_clients_indices_are_shuffled_within_partition() -> None:
    # Prepare
    y = np.repeat(np.arange(5), 200)
    # Execute
    parts = DirichletPartitioner(4, alpha=1.0, seed=0).partition(y)
    # Assert: a client holding several classes does not list them in label blocks
    assert any(not np.all(np.diff(y[p]) >= 0) for p in parts)
