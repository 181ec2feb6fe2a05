"""Shared fixed arrays for the metric tests (one worked 5-client round, tiny games).

The worked round (used by ``test_fairness_notions.py``; every expected value is derived there
by hand):

========  ===========  =========  ===============  ====================
client    accuracy x   reward r   cumulative s     confusion [[TN FP]
                                                               [FN TP]]
========  ===========  =========  ===============  ====================
0         0.8          0.4        0.4              [[4, 1], [1, 4]]
1         0.6          0.4        0.2              [[5, 3], [1, 1]]
2         0.9          0.6        0.3              [[6, 0], [1, 3]]
3         0.5          0.3        -0.1             [[1, 4], [1, 4]]
4         1.0          0.5        0.5              [[3, 0], [0, 7]]
========  ===========  =========  ===============  ====================

Each confusion matrix has N = 10 validation samples and trace = 10 x accuracy.
"""

import numpy as np

PERFORMANCE = np.array([0.8, 0.6, 0.9, 0.5, 1.0])
REWARDS = np.array([0.4, 0.4, 0.6, 0.3, 0.5])
CONTRIBUTION = np.array([0.4, 0.2, 0.3, -0.1, 0.5])
CONFUSION = np.array(
    [
        [[4, 1], [1, 4]],
        [[5, 3], [1, 1]],
        [[6, 0], [1, 3]],
        [[1, 4], [1, 4]],
        [[3, 0], [0, 7]],
    ]
)

# 3-player game U(T) = sum_{i in T} a_i + b * [|T| >= 2] (test_shapley.py)
GAME_PLAYERS = ["p1", "p2", "p3"]
GAME_A = {"p1": 1.0, "p2": 2.0, "p3": 4.0}
GAME_B = 3.0


def synergy_game(coalition: frozenset) -> float:
    """U(T) = sum of a_i over T, plus b when T has at least two members; U(empty) = 0."""
    return sum(GAME_A[i] for i in coalition) + (GAME_B if len(coalition) >= 2 else 0.0)


def random_confusions(seed: int, num_clients: int, num_classes: int, max_count: int = 30) -> np.ndarray:
    """Seeded random ``(clients, K, K)`` count matrices, every client with at least one sample."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, max_count, size=(num_clients, num_classes, num_classes))
    counts[:, 0, 0] += 1
    return counts
