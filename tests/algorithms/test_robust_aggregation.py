"""Byzantine-robust aggregation: hand-computed toy cases, and ours vs Flower 1.42's strategies.

Toy updates are float64 vectors of small integers, so sums are exact and Flower (which aggregates
in the arrays' dtype) and fltrust (float64) must agree bit for bit.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from fltrust.config import ConfigError, ExperimentConfig
from fltrust.algorithms import aggregation as agg

# Krum toy: 5 updates in R^2, f = 1 -> every score sums the n - f - 2 = 2 nearest squared distances.
#   v0=(0,0) v1=(1,0) v2=(0,1) v3=(2,2) v4=(8,8)
#   d01=1 d02=1 d03=8 d04=128 | d12=2 d13=5 d14=113 | d23=5 d24=113 | d34=72
#   s0 = 1+1 = 2, s1 = 1+2 = 3, s2 = 1+2 = 3, s3 = 5+5 = 10, s4 = 72+113 = 185
KRUM_TOY = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (2.0, 2.0), (8.0, 8.0)]
KRUM_SCORES = [2.0, 3.0, 3.0, 10.0, 185.0]


def as_params(points):
    """One parameter set per point: a 2-array 'model' (first coordinate, then the rest)."""
    return [[np.array([p[0]]), np.array(p[1:])] for p in points]


def test_krum_scores_by_hand():
    vectors = np.array(KRUM_TOY)
    assert agg.krum_scores(agg.pairwise_sq_distances(vectors), 1).tolist() == KRUM_SCORES


def test_krum_and_multikrum_by_hand():
    params = as_params(KRUM_TOY)
    chosen = agg.krum(params, num_malicious=1)
    assert [a.tolist() for a in chosen] == [[0.0], [0.0]]                     # v0, score 2
    assert agg.multikrum_select(params, 1, 3) == [0, 1, 2]                    # scores 2, 3, 3 (tie: lower index)
    mean = agg.multikrum(params, 1, 3)
    assert [a.tolist() for a in mean] == [[1 / 3], [1 / 3]]                   # mean of v0, v1, v2
    weighted = agg.multikrum(params, 1, 3, weights=[1, 2, 1, 1, 1])
    assert [a.tolist() for a in weighted] == [[0.5], [0.25]]                  # (0 + 2*1 + 0)/4, (0 + 0 + 1)/4


def test_trimmed_mean_and_median_by_hand():
    # one coordinate with values 1, 2, 3, 4, 100 (in scrambled client order)
    params = [[np.array([v, -v])] for v in (4.0, 100.0, 1.0, 3.0, 2.0)]
    assert agg.trimmed_mean(params, 0.2)[0].tolist() == [3.0, -3.0]          # int(0.2*5)=1 cut per side: (2+3+4)/3
    assert agg.trimmed_mean(params, 0.1)[0].tolist() == [22.0, -22.0]        # int(0.5)=0: plain mean 110/5
    assert agg.trimmed_mean(params, 0.4)[0].tolist() == [3.0, -3.0]          # int(2)=2 per side: the median
    assert agg.coordinate_median(params)[0].tolist() == [3.0, -3.0]
    with pytest.raises(ValueError):
        agg.trimmed_mean(params, 0.5)


# Bulyan toy: 7 scalar updates 0, 2, 4, 5, 6, 10, 11 and f = 1 -> theta = 5 selected, beta = 3 averaged.
# One Krum scoring (k = 4 neighbours): 0:81 2:33 4:25 5:36 6:37 10:78 11:111
#   one-shot Multi-Krum (Flower's default selection) keeps the 5 lowest: {4, 2, 5, 6, 10}; median 5;
#   the 3 values closest to 5 are 5, 4, 6 -> 5.
# Recursive Krum (the paper): pick 4 (25); rescore {0,2,5,6,10,11} with k = 3: 0:65 2:29 5:35 6:33 10:42
#   11:62 -> pick 2; rescore {0,5,6,10,11}, k = 2: 0:61 5:26 6:17 10:17 11:26 -> 6 (tie with 10: lower
#   index); {0,5,10,11}, k = 1: 0:25 5:25 10:1 11:1 -> 10; {0,5,11}, k = 1: 0:25 5:25 11:36 -> 0.
#   Selected {4, 2, 6, 10, 0}; median 4; the 3 closest to 4 are 4, 2, 6 -> 4.
BULYAN_TOY = [0.0, 2.0, 4.0, 5.0, 6.0, 10.0, 11.0]


def test_bulyan_by_hand_recursive_and_one_shot():
    params = [[np.array([v])] for v in BULYAN_TOY]
    vectors = np.array([[v] for v in BULYAN_TOY])
    assert agg.krum_select_recursive(vectors, 1, 5) == [2, 1, 4, 5, 0]
    assert agg.multikrum_select(params, 1, 5) == [2, 1, 3, 4, 5]
    assert agg.bulyan(params, 1)[0].tolist() == [4.0]
    assert agg.bulyan(params, 1, selection="multikrum")[0].tolist() == [5.0]
    with pytest.raises(ValueError, match="4f \\+ 3"):
        agg.bulyan(params[:6], 1)


def test_robust_rules_keep_integer_buffers_integer():
    params = [[np.array([float(v)], dtype=np.float32), np.array(v, dtype=np.int64)] for v in (1, 2, 3, 4, 9)]
    for out in (agg.krum(params, 1), agg.multikrum(params, 1, 3), agg.trimmed_mean(params, 0.2),
                agg.bulyan(params[:5] + params[:2], 1)):
        assert out[0].dtype == np.float32 and out[1].dtype == np.int64


# -- Flower 1.42's strategies on the same toy updates --------------------------------------------
needs_flower = pytest.mark.skipif(importlib.util.find_spec("flwr") is None, reason="Flower is not installed")


def flower_replies(param_sets, weights=None):
    from flwr.app import Message, MetricRecord, RecordDict
    from flwr.common.constant import SUPERLINK_NODE_ID
    from flwr.supercore.task_identity import TaskIdentity

    from fltrust.flower.records import params_to_arrays

    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, SUPERLINK_NODE_ID
    weights = weights or [1] * len(param_sets)
    out = []
    for node, (params, w) in enumerate(zip(param_sets, weights)):
        instruction = Message(RecordDict(), dst_node_id=100 + node, message_type="train")
        metrics = MetricRecord({"partition-id": node, "num-examples": int(w)})
        out.append(Message(RecordDict({"arrays": params_to_arrays(params), "metrics": metrics}), reply_to=instruction))
    return out


def flower_aggregate(strategy, param_sets, weights=None):
    from fltrust.flower.records import arrays_to_params

    arrays, _ = strategy.aggregate_train(1, flower_replies(param_sets, weights))
    return None if arrays is None else arrays_to_params(arrays)


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@needs_flower
def test_flower_krum_and_multikrum_equal_ours():
    from flwr.serverapp.strategy import Krum, MultiKrum

    params = as_params(KRUM_TOY)
    assert same(flower_aggregate(Krum(num_malicious_nodes=1), params), agg.krum(params, 1))
    weights = [1, 2, 1, 1, 1]
    flower = flower_aggregate(MultiKrum(num_malicious_nodes=1, num_nodes_to_select=3), params, weights)
    assert same(flower, agg.multikrum(params, 1, 3, weights=weights))  # Flower weighs by num-examples too


@needs_flower
@pytest.mark.parametrize("beta", [0.0, 0.2, 0.4])
def test_flower_fedtrimmedavg_and_fedmedian_equal_ours(beta):
    from flwr.serverapp.strategy import FedMedian, FedTrimmedAvg

    rng = np.random.default_rng(0)
    params = [[rng.integers(-50, 50, size=(3, 2)).astype(np.float64), rng.integers(-9, 9, size=4).astype(np.float64)]
              for _ in range(7)]
    # FedTrimmedAvg(beta) cuts int(beta * n) values at EACH end (scipy's trim_mean): the same as ours
    assert same(flower_aggregate(FedTrimmedAvg(beta=beta), params), agg.trimmed_mean(params, beta))
    assert same(flower_aggregate(FedMedian(), params), agg.coordinate_median(params))


@needs_flower
def test_flower_bulyan_equals_ours_with_the_papers_selection_and_differs_by_default():
    from flwr.serverapp.strategy import Bulyan

    params = [[np.array([v])] for v in BULYAN_TOY]
    paper = Bulyan(num_malicious_nodes=1, selection_rule=agg.krum_selection_rule)  # what run.engine=flower uses
    assert same(flower_aggregate(paper, params), agg.bulyan(params, 1))            # 4.0
    default = Bulyan(num_malicious_nodes=1)                                        # one-shot Multi-Krum selection
    assert same(flower_aggregate(default, params), agg.bulyan(params, 1, selection="multikrum"))  # 5.0
    assert flower_aggregate(default, params)[0].tolist() == [5.0]
    assert flower_aggregate(Bulyan(num_malicious_nodes=1), params[:6]) is None  # n < 4f + 3: round skipped


@needs_flower
def test_flower_bulyan_on_random_models_equals_ours():
    from flwr.serverapp.strategy import Bulyan

    rng = np.random.default_rng(3)
    params = [[rng.normal(size=(4, 3)), rng.normal(size=5)] for _ in range(11)]
    strategy = Bulyan(num_malicious_nodes=2, selection_rule=agg.krum_selection_rule)
    ours = agg.bulyan(params, 2)
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(flower_aggregate(strategy, params), ours)) < 1e-12


# -- strategies and configuration ------------------------------------------------------------------
def tiny(**strategy):
    return ExperimentConfig.from_dict({"data": {"name": "synthetic_nsl_kdd"}, "partition": {"num_clients": 10},
                                       "strategy": {"clients_per_round": 7, **strategy}})


def build(**strategy):
    """The in-process strategy of ``tiny(**strategy)``, as fltrust.experiment builds it."""
    from fltrust.algorithms.strategies import build_strategy

    cfg = tiny(**strategy)
    return build_strategy(cfg.strategy, local_epochs=cfg.training.local_epochs, clients_per_round=cfg.clients_per_round())


def test_strategy_classes_aggregate_with_the_pure_functions():
    from fltrust.algorithms.strategies import STRATEGY_CLASSES, ClientResult

    assert {"krum", "multikrum", "trimmedmean", "bulyan"} <= set(STRATEGY_CLASSES)
    params = [[np.array([v])] for v in BULYAN_TOY]
    results = [ClientResult(i, p, 10 * (i + 1), 1) for i, p in enumerate(params)]
    theta = [np.array([0.0])]
    assert build(name="bulyan", num_malicious_nodes=1).aggregate(theta, results, 0.0)[0].tolist() == [4.0]
    assert build(name="trimmedmean", beta=0.2).aggregate(theta, results, 0.0)[0].tolist() == [5.4]
    krum = build(name="krum", num_malicious_nodes=2).aggregate(theta, results, 0.0)
    assert krum[0].tolist() == agg.krum(params, 2)[0].tolist()
    # multikrum: default k = m - f = 7 - 2 = 5, weighted by samples (strategy.weighting)
    mk = build(name="multikrum", num_malicious_nodes=2).aggregate(theta, results, 0.0)
    assert mk[0].tolist() == agg.multikrum(params, 2, 5, weights=[10 * (i + 1) for i in range(7)])[0].tolist()
    # Bulyan with fewer than 4f + 3 updates (drop-outs) keeps the global model, as Flower's does
    assert build(name="bulyan", num_malicious_nodes=1).aggregate(theta, results[:6], 0.0)[0].tolist() == [0.0]


def test_the_rules_check_their_preconditions_before_the_data_is_loaded():
    from fltrust.experiment import check_experiment

    with pytest.raises(ConfigError, match="2f \\+ 3"):
        check_experiment(tiny(name="krum", num_malicious_nodes=3))          # 7 < 9
    with pytest.raises(ConfigError, match="4f \\+ 3"):
        check_experiment(tiny(name="bulyan", num_malicious_nodes=2))        # 7 < 11
    with pytest.raises(ConfigError, match="beta"):
        tiny(name="trimmedmean", beta=0.5)
    with pytest.raises(ConfigError, match="num_nodes_to_select"):
        check_experiment(tiny(name="multikrum", num_nodes_to_select=8))
    with pytest.raises(ConfigError, match="privacy.mode='server'"):
        check_experiment(ExperimentConfig.from_dict({"strategy": {"name": "krum"}, "privacy": {"mode": "server"},
                                                     "partition": {"num_clients": 10}}))
    check_experiment(tiny(name="bulyan", num_malicious_nodes=1))
    # the largest f each rule tolerates among m = 7 updates (a defence comparison's default cap)
    from fltrust.registry import STRATEGIES

    assert [STRATEGIES[n].max_malicious_nodes(7) for n in ("krum", "multikrum", "bulyan", "trimmedmean")] == \
        [2, 2, 1, None]


@needs_flower
def test_flower_engine_maps_the_robust_strategies():
    from flwr.serverapp.strategy import Bulyan, FedTrimmedAvg, Krum, MultiKrum

    from fltrust.engines.flower.strategies import build_flower_strategy

    def flower(**strategy):
        return build_flower_strategy(build(**strategy), clients_per_round=7, seed=0)

    krum = flower(name="krum", num_malicious_nodes=2)
    assert type(krum) is Krum and krum.num_malicious_nodes == 2
    mk = flower(name="multikrum", num_malicious_nodes=2)
    assert type(mk) is MultiKrum and mk.num_nodes_to_select == 5
    tm = flower(name="trimmedmean", beta=0.3)
    assert type(tm) is FedTrimmedAvg and tm.beta == 0.3
    bulyan = flower(name="bulyan", num_malicious_nodes=1)
    assert type(bulyan) is Bulyan and bulyan.selection_rule is agg.krum_selection_rule
