"""In-process strategies (fltrust.algorithms.strategies): local steps and aggregation against hand-computed values.

The pure aggregation rules are checked in ``test_aggregation.py`` and ``test_robust_aggregation.py``;
here the strategy classes: which rule, which weights, which loss, which anchor each one uses.
Clients are fakes that record what the strategy asked of them (the local training arithmetic is
checked in ``test_training.py``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from fltrust import registry
from fltrust.config import ConfigError, ExperimentConfig
from fltrust.algorithms.strategies import (
    ClientResult,
    Ditto,
    FedAvg,
    FedMedian,
    FedProx,
    QFedAvg,
    build_strategy,
)


def cfg(**strategy) -> ExperimentConfig:
    return ExperimentConfig.tiny(strategy=strategy)


def build(config: ExperimentConfig):
    """The strategy of ``config``, as fltrust.experiment builds it."""
    return build_strategy(config.strategy, local_epochs=config.training.local_epochs,
                          clients_per_round=config.clients_per_round())


class FakeClient:
    """A ClientHandle that adds ``step`` to every array and records each call's keywords."""

    def __init__(self, client_id: int, step: float = 1.0, loss: float = 0.5, own_loss: float = 2.0):
        self.client_id, self.num_samples, self.num_batches, self.round = client_id, 10, 1, 1
        self.step, self.loss, self.own_loss = step, loss, own_loss
        self.calls: list[tuple[str, dict]] = []

    def train(self, params, **kwargs):
        self.calls.append(("train", {k: v for k, v in kwargs.items()}))
        step = self.step * (10 if kwargs.get("seed_offset") == 1 else 1)  # the personal track moves by 10
        return [p + step for p in params], self.loss

    def train_loss_of(self, params):
        self.calls.append(("train_loss_of", {"params": params}))
        return self.own_loss


def results(values, samples, batches=None, extra=None):
    """ClientResults of scalar-or-vector models ``values`` (one array per client)."""
    batches = batches or [1] * len(values)
    extra = extra or [{} for _ in values]
    return [ClientResult(i, [np.asarray(v, dtype=np.float64)], n, b, e)
            for i, (v, n, b, e) in enumerate(zip(values, samples, batches, extra))]


# -- registry ---------------------------------------------------------------------------------
def test_every_configured_name_builds_its_class():
    assert set(registry.STRATEGIES) == {"fedavg", "fedprox", "qfedavg", "ditto", "fedmedian", "krum", "multikrum",
                                     "trimmedmean", "bulyan"}
    for name, cls in registry.STRATEGIES.items():
        strategy = build(ExperimentConfig.tiny(strategy={"name": name, "clients_per_round": 5}))
        assert type(strategy) is cls and strategy.name == name
    assert [name for name, cls in registry.STRATEGIES.items() if cls.personalized] == ["ditto"]


def test_the_factory_binds_the_constructors_keywords_to_the_config():
    # the fields of the same name, the run facts, and strategy.options for a keyword without a field
    ditto = build(cfg(name="ditto", ditto_lambda=0.3, ditto_epochs=2, weighting="batches"))
    assert (ditto.ditto_lambda, ditto.ditto_epochs, ditto.weighting, ditto.local_epochs) == (0.3, 2, "batches", 1)
    mk = build(cfg(name="multikrum", num_malicious_nodes=1, clients_per_round=5))
    assert mk.num_nodes_to_select == 4  # m - f with the resolved m
    assert build(cfg(name="trimmedmean", options={"beta": 0.1})).beta == 0.1  # options come before the field
    with pytest.raises(ConfigError, match=r"strategy.options \['momentum'\] are not parameters of strategy.name='krum'"):
        build(cfg(name="krum", options={"momentum": 0.9}))
    with pytest.raises(ConfigError, match="strategy.weighting='examples' is not allowed"):
        FedAvg(weighting="examples")


# -- FedAvg -------------------------------------------------------------------------------------
def test_fedavg_weights_by_samples_or_batches():
    # Prepare: three clients with 2-entry models, 10/30/60 samples and 1/1/2 batches
    rs = results([[0.0, 4.0], [2.0, 0.0], [8.0, 8.0]], samples=[10, 30, 60], batches=[1, 1, 2])
    theta = [np.zeros(2)]

    # Execute
    by_samples = FedAvg(weighting="samples").aggregate(theta, rs, server_loss=9.9)
    by_batches = FedAvg(weighting="batches").aggregate(theta, rs, server_loss=9.9)

    # Assert
    # samples: weights 0.1, 0.3, 0.6 -> (0.1*0 + 0.3*2 + 0.6*8, 0.1*4 + 0.3*0 + 0.6*8) = (5.4, 5.2)
    np.testing.assert_allclose(by_samples[0], [5.4, 5.2])
    # batches: weights 1/4, 1/4, 2/4 -> (0 + 0.5 + 4, 1 + 0 + 4) = (4.5, 5.0)
    np.testing.assert_allclose(by_batches[0], [4.5, 5.0])


def test_fedavg_keeps_an_integer_buffer_integer():
    # num_batches_tracked 1, 2, 5 with sample weights 0.1, 0.3, 0.6: 0.1 + 0.6 + 3.0 = 3.7 -> 4
    rs = [ClientResult(i, [np.array([float(i)]), np.array(c, dtype=np.int64)], n, 1)
          for i, (c, n) in enumerate(zip([1, 2, 5], [10, 30, 60]))]
    out = FedAvg().aggregate([np.zeros(1), np.array(0, dtype=np.int64)], rs, 0.0)
    assert out[1].dtype == np.int64 and int(out[1]) == 4
    np.testing.assert_allclose(out[0], [0.3 * 1 + 0.6 * 2])  # = 1.5


def test_fedavg_local_update_trains_the_configured_epochs_from_the_received_model():
    client = FakeClient(3)
    result = FedAvg(local_epochs=4).local_update(client, [np.array([1.0])])
    assert client.calls == [("train", {"epochs": 4})]
    assert result.params[0].tolist() == [2.0] and result.train_loss == 0.5 and result.eval_params is None


# -- FedProx ------------------------------------------------------------------------------------
def test_fedprox_passes_the_received_model_as_the_proximal_center():
    # Prepare
    client, theta = FakeClient(0), [np.array([1.0, 2.0])]

    # Execute
    FedProx(proximal_mu=0.3).local_update(client, theta)

    # Assert: one training call with the proximal term around theta (mu = 0.3)
    (kind, kwargs), = client.calls
    assert kind == "train" and kwargs["proximal_mu"] == 0.3 and kwargs["proximal_center"] is theta
    # FedProx aggregates as FedAvg: weights 1/4, 3/4 -> 0.25*0 + 0.75*4 = 3
    out = FedProx().aggregate(theta, results([[0.0, 0.0], [4.0, 4.0]], [1, 3]), 0.0)
    np.testing.assert_allclose(out[0], [3.0, 3.0])


# -- q-FedAvg -------------------------------------------------------------------------------------
def test_qfedavg_flower_legacy_uses_the_central_loss_for_every_client():
    """theta = 1, w_1 = 0, w_2 = 3, q = 2, lr = 0.5, central loss L = 0.5 (docs/references.md#fairness-5-2).

    g_1 = (1 - 0)/0.5 = 2, g_2 = (1 - 3)/0.5 = -4; L^q = 0.25, L^(q-1) = 0.5
    Delta_1 = 0.25 * 2 = 0.5, Delta_2 = 0.25 * -4 = -1.0       -> sum Delta = -0.5
    h_1 = 2 * 0.5 * 4 + 0.25/0.5 = 4.5, h_2 = 2 * 0.5 * 16 + 0.5 = 16.5 -> sum h = 21
    theta' = 1 - (-0.5 / 21) = 1.0238095 (the clients' own losses, 1 and 2, are ignored)
    """
    strategy = QFedAvg(q=2.0, qffl_learning_rate=0.5, qfedavg_variant="flower_legacy")
    rs = results([[0.0], [3.0]], [1, 100], extra=[{"qffl_loss": 1.0}, {"qffl_loss": 2.0}])
    out = strategy.aggregate([np.array([1.0])], rs, server_loss=0.5)
    np.testing.assert_allclose(out[0], [1.0 + 0.5 / 21], rtol=1e-8)
    np.testing.assert_allclose(out[0], [1.0238095], atol=1e-7)


def test_qfedavg_qffl_uses_each_clients_own_loss():
    """Same models, q = 2, lr = 0.5; the clients' own losses L_1 = 1, L_2 = 2 (Li et al. 2020, Alg. 2).

    L_1^2 = 1: Delta_1 = 2,  h_1 = 2 * 1 * 4 + 1/0.5 = 10
    L_2^2 = 4: Delta_2 = -16, h_2 = 2 * 2 * 16 + 4/0.5 = 72
    theta' = 1 - (2 - 16) / (10 + 72) = 1 + 14/82 = 1.1707317 (the central loss 100 is ignored)
    """
    strategy = QFedAvg(q=2.0, qffl_learning_rate=0.5, qfedavg_variant="qffl")
    rs = results([[0.0], [3.0]], [1, 100], extra=[{"qffl_loss": 1.0}, {"qffl_loss": 2.0}])
    out = strategy.aggregate([np.array([1.0])], rs, server_loss=100.0)
    np.testing.assert_allclose(out[0], [1.0 + 14 / 82], rtol=1e-8)
    np.testing.assert_allclose(out[0], [1.1707317], atol=1e-7)


def test_qfedavg_qffl_measures_the_received_model_before_training():
    theta = [np.array([1.0])]

    qffl_client, legacy_client = FakeClient(0, own_loss=0.7), FakeClient(0)
    qffl = QFedAvg(qfedavg_variant="qffl").local_update(qffl_client, theta)
    legacy = QFedAvg().local_update(legacy_client, theta)

    # qffl: F_n(theta) of the *received* model first, then training; legacy: training only
    assert [c[0] for c in qffl_client.calls] == ["train_loss_of", "train"]
    assert qffl_client.calls[0][1]["params"] is theta
    assert qffl.extra == {"qffl_loss": 0.7} and legacy.extra == {}
    assert [c[0] for c in legacy_client.calls] == ["train"]


# -- Ditto --------------------------------------------------------------------------------------
def test_ditto_personal_track_starts_from_the_received_model_and_anchors_to_the_local_model():
    # Prepare: the fake global track adds 1, the personal track adds 10
    s = {"ditto_epochs": 3, "ditto_lambda": 0.8, "ditto_lr": 0.05, "ditto_anchor": "local"}
    strategy, client, theta = Ditto(**s), FakeClient(5), [np.array([1.0])]

    # Execute
    result = strategy.local_update(client, theta)

    # Assert: the global track w = theta + 1 = 2 is sent; the personal model v = theta + 10 = 11
    # (first selection: from a copy of theta) is what the client's performance is measured with
    (_, global_kwargs), (_, personal_kwargs) = client.calls
    assert global_kwargs == {"epochs": 1}
    assert result.params[0].tolist() == [2.0] and result.eval_params[0].tolist() == [11.0]
    # the personal objective: plain SGD, ditto_lr, lambda, 3 epochs, anchored at w (the authors' code),
    # its own random stream, never privatised (the personal model never leaves the client)
    assert personal_kwargs["proximal_center"] is result.params
    assert {k: personal_kwargs[k] for k in ("epochs", "proximal_mu", "learning_rate", "plain_sgd", "seed_offset",
                                            "private")} == {"epochs": 3, "proximal_mu": 0.8, "learning_rate": 0.05,
                                                            "plain_sgd": True, "seed_offset": 1, "private": False}
    assert theta[0].tolist() == [1.0]  # the received model is not modified
    assert strategy.personal[5][0].tolist() == [11.0]


def test_ditto_keeps_the_personal_model_across_selections():
    strategy = Ditto(ditto_epochs=1, ditto_anchor="global")
    client = FakeClient(2)
    strategy.local_update(client, [np.array([1.0])])  # v = 1 + 10 = 11

    # second selection, a new global model 4: the personal track continues from v = 11 -> 21,
    # anchored at the received global model (the Ditto paper)
    theta = [np.array([4.0])]
    result = strategy.local_update(client, theta)
    assert result.eval_params[0].tolist() == [21.0] and result.params[0].tolist() == [5.0]
    assert client.calls[-1][1]["proximal_center"] is theta


def test_ditto_without_personal_epochs_evaluates_the_received_model():
    strategy, client = Ditto(ditto_epochs=0), FakeClient(0)
    result = strategy.local_update(client, [np.array([1.0])])
    assert len(client.calls) == 1 and result.eval_params[0].tolist() == [1.0] and result.params[0].tolist() == [2.0]


def test_ditto_state_round_trip_and_fedavg_aggregation():
    # Prepare
    first = Ditto(ditto_epochs=1)
    for cid in (0, 3):
        first.local_update(FakeClient(cid, step=cid + 1), [np.array([0.0])])  # v_0 = 10, v_3 = 40

    # Execute
    state = first.state_dict()
    second = Ditto()
    second.load_state_dict(state)

    # Assert: string keys in the checkpoint, integer client ids after loading
    assert sorted(state["personal"]) == ["0", "3"]
    assert {k: v[0].tolist() for k, v in second.personal.items()} == {0: [10.0], 3: [40.0]}
    # the global track aggregates as FedAvg: weights 1/4, 3/4 of 2 and 6 -> 0.5 + 4.5 = 5
    np.testing.assert_allclose(second.aggregate([np.zeros(1)], results([[2.0], [6.0]], [1, 3]), 0.0)[0], [5.0])


# -- FedMedian and the robust rules ----------------------------------------------------------------
def test_fedmedian_ignores_the_sample_weights():
    # 4 clients: median of 0, 1, 3, 10 = (1 + 3)/2 = 2, although client 3 holds 97 % of the samples
    rs = results([[0.0], [1.0], [3.0], [10.0]], samples=[1, 1, 1, 97])
    np.testing.assert_allclose(FedMedian().aggregate([np.zeros(1)], rs, 0.0)[0], [2.0])


def test_krum_multikrum_and_trimmed_mean_strategies_by_hand():
    """Five scalar updates 0, 1, 2, 4, 100 with 10, 20, 30, 40, 50 samples; f = 1.

    Krum: each update's score is the sum of squared distances to its n - f - 2 = 2 nearest others:
      0: 1 + 4 = 5; 1: 1 + 1 = 2; 2: 1 + 4 = 5; 4: 4 + 9 = 13; 100: 96^2 + 98^2 = 18820
      -> the lowest is update 1 (value 1).
    Multi-Krum, k = m - f = 5 - 1 = 4 lowest: updates 1, 0, 2, 4 (values 1, 0, 2, 4), weighted by
      samples 20, 10, 30, 40: (20 + 0 + 60 + 160) / 100 = 2.4.
    Trimmed mean, beta = 0.2: int(0.2 * 5) = 1 cut at each end -> mean(1, 2, 4) = 7/3.
    """
    rs = results([[0.0], [1.0], [2.0], [4.0], [100.0]], samples=[10, 20, 30, 40, 50])
    theta = [np.zeros(1)]
    common = {"num_malicious_nodes": 1, "clients_per_round": 5}

    krum = build(cfg(name="krum", **common)).aggregate(theta, rs, 0.0)
    multikrum = build(cfg(name="multikrum", **common)).aggregate(theta, rs, 0.0)
    trimmed = build(cfg(name="trimmedmean", beta=0.2, clients_per_round=5)).aggregate(theta, rs, 0.0)

    assert krum[0].tolist() == [1.0]
    np.testing.assert_allclose(multikrum[0], [2.4])
    np.testing.assert_allclose(trimmed[0], [7 / 3])


# -- grouped (vectorised) training --------------------------------------------------------------------
class FakeGroup:
    """A ClientGroup stand-in: records its calls; each client's model moves by its position + 1."""

    def __init__(self):
        self.calls = []

    def train(self, params, **kwargs):
        self.calls.append(kwargs)
        return [[p + i + 1 for p in params] for i in range(2)], [0.1, 0.2]


def test_grouped_updates_use_the_group_with_the_strategys_keywords():
    group, theta = FakeGroup(), [np.array([0.0])]

    strategy = FedProx(proximal_mu=0.4)
    out = strategy.local_updates([FakeClient(0), FakeClient(1)], theta, group=group)

    assert [r.params[0].tolist() for r in out] == [[1.0], [2.0]] and [r.train_loss for r in out] == [0.1, 0.2]
    assert group.calls == [{"epochs": 1, "proximal_center": theta, "proximal_mu": 0.4}]


def test_a_subclass_with_its_own_local_update_trains_one_client_after_another():
    # Prepare: a user's strategy overrides local_update only; the inherited grouped path would skip it
    class Custom(FedAvg):
        def local_update(self, client, global_params):
            client.train(global_params, epochs=7)
            return super().local_update(client, global_params)

    class Refusing(FakeGroup):
        def train(self, params, **kwargs):
            raise AssertionError("the grouped path must not run for this strategy")

    clients = [FakeClient(0), FakeClient(1)]

    # Execute
    out = Custom().local_updates(clients, [np.array([0.0])], group=Refusing())

    # Assert: each client trained through the override (epochs 7, then the configured 1)
    assert [[c[1]["epochs"] for c in client.calls] for client in clients] == [[7, 1], [7, 1]]
    assert len(out) == 2


def _strategy_class(name: str) -> type:
    """A new class object each call, with one module-qualified name (as a notebook cell that reruns makes)."""
    return type("Rerun", (), {"name": name, "__module__": __name__, "__qualname__": "Rerun"})


def test_a_registry_takes_a_rerun_definition_and_refuses_another_one():
    first, again = _strategy_class("rerun_test"), _strategy_class("rerun_test")
    other = type("Other", (), {"name": "rerun_test"})
    try:
        registry.STRATEGIES.register(first)
        assert registry.STRATEGIES.register(again) is again and registry.STRATEGIES["rerun_test"] is again
        refused = f"strategy.name 'rerun_test' is already registered by {re.escape(__name__)}.Rerun; choose another"
        with pytest.raises(ValueError, match=refused):
            registry.STRATEGIES.register(other)
        assert registry.STRATEGIES.register(other, replace=True) is other
    finally:
        registry.STRATEGIES.unregister("rerun_test")
    assert "rerun_test" not in registry.STRATEGIES
