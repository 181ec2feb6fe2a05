"""The ClientApp of an fltrust experiment on Flower (``run.engine: flower``).

A node is client ``node_config["partition-id"]`` of the prepared federation. Every ClientApp
process gets the experiment once (a :class:`ClientPayload` in Ray's object store: the engine's
typed parts -- strategy, privacy mechanism, training and run settings, attack plan, injected
failures -- the federation without the test split and the auxiliary set, and the model), builds
the engines' shared set-up from it (:class:`~fltrust.engines.base.EngineBase`) and, on each
``train`` message, runs the client code both engines share
(:class:`~fltrust.engines.client.SimulatedClient`, the strategy's ``local_update``), plus the run's
attack and injected failures; it answers ``query`` messages with its partition id.
:func:`build_client_app` makes the app; :class:`fltrust.engines.flower.engine.FlowerEngine` runs it."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.algorithms.privacy import PrivacyMechanism
from fltrust.algorithms.strategies import Strategy
from fltrust.attacks import AttackPlan
from fltrust.config import ReliabilityConfig, TrainingConfig
from fltrust.core.evaluation import get_params
from fltrust.core.records import Params
from fltrust.engines.base import EngineBase, RunSettings
from fltrust.federation import Federation
from fltrust.engines.client import FailingClient, SimulatedClient
from fltrust.flower.client import ClientReport
from fltrust.flower.partitions import partition_query_reply
from fltrust.algorithms.aggregation import cast_like
from fltrust.flower.records import FLTRUST_KEY, arrays_to_params, params_to_arrays
from fltrust.engines.flower.strategies import DITTO_STORE_KEY, PERSONAL_KEY, UNIT_WEIGHT_KEY, secagg_when_asked

__all__ = ["AGGREGATED_KEYS", "DP_HISTORY_KEY", "LEGACY_FITINS_KEY", "ClientPayload", "build_client_app",
           "slim_federation"]

DP_HISTORY_KEY = "dp-history"
LEGACY_FITINS_KEY = "fitins.parameters"  # ArrayRecord key of a legacy FitIns (SecAgg+ workflow)
AGGREGATED_KEYS = ("num-examples", "num-batches", "train_loss", UNIT_WEIGHT_KEY)
"""The keys of a ClientApp's MetricRecord, beside its strategy's own (``LocalResult.extra``): what
Flower's strategies weight and average by. The rest of the report goes in the ConfigRecord ``"fltrust"``."""


@dataclass
class ClientPayload:
    """What every ClientApp process needs, put once into Ray's object store: the
    :class:`~fltrust.engines.base.EngineBase` parts of the run (:class:`FlowerEngine` builds it).

    Attributes
    ----------
    federation : Federation
        On the CPU, without the test split and the auxiliary set.
    model : nn.Module
        On the CPU.
    device : str
        ``"cuda"`` when the clients may use a GPU.
    strategy, privacy, training, clients_per_round, run, attack, reliability
        The engine's parts (``training.vectorize`` off: a ClientApp trains one client).
    torch_threads : int
        CPU threads of each ClientApp process.
    """

    federation: Federation
    model: nn.Module
    device: str
    strategy: Strategy
    privacy: PrivacyMechanism
    training: TrainingConfig
    clients_per_round: int
    run: RunSettings
    attack: AttackPlan
    reliability: ReliabilityConfig
    torch_threads: int = 1


def slim_federation(fed: Federation) -> Federation:
    """The federation without what clients never read (test split, aux set, raw arrays), on the CPU."""
    bundle = fed.bundle
    empty = np.zeros(0, dtype=np.int64)
    slim_bundle = dataclasses.replace(bundle, train=bundle.train.subset(empty), test=bundle.test.subset(empty))
    slim = dataclasses.replace(fed, bundle=slim_bundle, x_aux=fed.x_aux[:0], y_aux=fed.y_aux[:0],
                               x_test=fed.x_test[:0], y_test=fed.y_test[:0])
    return _federation_to(slim, lambda t: t.detach().to("cpu"))


def _federation_to(fed: Federation, to: Callable[[torch.Tensor], torch.Tensor]) -> Federation:
    """``fed`` with every tensor ``to(tensor)`` (moved)."""
    return dataclasses.replace(
        fed, x_train=to(fed.x_train), y_train=to(fed.y_train), train_index=[to(i) for i in fed.train_index],
        val_index=[to(i) for i in fed.val_index], x_aux=to(fed.x_aux), y_aux=to(fed.y_aux),
        x_test=to(fed.x_test), y_test=to(fed.y_test),
    )


class _ClientRuntime:
    """One ClientApp process's copy of the experiment: the engines' shared set-up, used for one client at a time."""

    def __init__(self, payload: ClientPayload) -> None:
        torch.set_flush_denormal(True)  # as fltrust.experiment.prepare_experiment does
        torch.set_num_threads(payload.torch_threads)
        device = torch.device("cuda" if payload.device == "cuda" and torch.cuda.is_available() else "cpu")
        model = payload.model.to(device)
        # the process's own copies: the strategy (Ditto's personal models) and the mechanism (its
        # accounting) change per training, and an in-process grid hands over the server's objects
        strategy, privacy = copy.deepcopy(payload.strategy), copy.deepcopy(payload.privacy)
        self.engine = EngineBase(_federation_to(payload.federation, lambda t: t.to(device)), model, strategy=strategy,
                                 privacy=privacy, training=payload.training,
                                 clients_per_round=payload.clients_per_round, run=payload.run, device=device,
                                 attack=payload.attack, reliability=payload.reliability)
        self.names = list(model.state_dict().keys())
        self.reference = get_params(model)

    def train(self, message, context):
        """One client's round: the in-process client code, plus the run's attack and injected failures.

        Plain runs receive ``arrays`` + ``config`` (Message API); secagg+ runs receive the legacy
        ``FitIns`` records of Flower's SecAgg+ workflow and answer with a ``FitRes`` record, which
        ``secaggplus_mod`` masks before it leaves the node.
        """
        from flwr.app import ConfigRecord, Message, MetricRecord, RecordDict

        from fltrust.faults import DROPPED, FAILED, TIMED_OUT, InjectedDropout, InjectedTimeout, client_fault
        from fltrust.algorithms.strategies import Ditto

        engine = self.engine
        pid = int(context.node_config["partition-id"])
        legacy = LEGACY_FITINS_KEY in message.content.array_records  # SecAgg+ (legacy FitIns)
        if legacy:
            import flwr.compat.common.recorddict_compat as compat
            from flwr.common import parameters_to_ndarrays

            fitins = compat.recorddict_to_fitins(message.content, keep_input=True)
            config = fitins.config
            received = [cast_like(a, ref) for a, ref in zip(parameters_to_ndarrays(fitins.parameters), self.reference)]
        else:
            config = message.content["config"]
            received = arrays_to_params(message.content["arrays"], like=self.reference)
        round_ = int(config["server-round"])
        fault = client_fault(engine.seed, round_, pid, engine.reliability)
        if fault == DROPPED:  # the client leaves before it trains: no update
            raise InjectedDropout(pid, round_)
        # as the in-process engine's: same data, seeds and DP; a failed client's training raises (inside the
        # strategy's local_update)
        client = (FailingClient if fault == FAILED else SimulatedClient)(engine, pid, round_)
        report = ClientReport(lambda p: engine.trainer.evaluate(p, client.x_val, client.y_val), partition_id=pid)
        report.reward(received)
        strategy = engine.strategy
        store = str(config.get(DITTO_STORE_KEY, "server"))
        if isinstance(strategy, Ditto):
            holder = message.content if store == "server" else context.state
            personal = holder.array_records.get(PERSONAL_KEY)
            strategy.personal = {} if personal is None else {pid: arrays_to_params(personal, like=self.reference)}
        engine.privacy.load_state_dict({})  # this training's accounting only (the server merges it)
        update = strategy.local_update(client, received)
        plan = engine.attack_plan
        sent = plan.sent_params(pid, received, update.params)  # update-level attack: theta + s (w - theta)
        extra = {**update.extra, UNIT_WEIGHT_KEY: 1.0}
        if plan.active:
            extra["malicious"] = float(plan.is_malicious(pid))
        history = [float(v) for entry in engine.privacy.accounting(pid) for v in entry]  # [noise, rate, steps] each
        finish: dict[str, Any] = dict(num_examples=client.num_samples, num_batches=client.num_batches,
                                      train_loss=update.train_loss, performance=update.eval_params or update.params,
                                      extra=extra)
        if legacy:
            content = self._legacy_reply(report, sent, finish, history)
        else:
            metrics = report.finish(sent, **finish)
            if history:
                metrics[DP_HISTORY_KEY] = history
            keep = set(AGGREGATED_KEYS) | set(update.extra)  # what Flower aggregates, and the strategy's keys
            # the per-client report travels beside the metrics Flower's strategy aggregates, as the
            # ConfigRecord "fltrust" that ObservedStrategy reads and removes before aggregation
            content = RecordDict({"arrays": params_to_arrays(sent, self.names),
                                  "metrics": MetricRecord({k: v for k, v in metrics.items() if k in keep}),
                                  FLTRUST_KEY: ConfigRecord(dict(metrics))})
        if isinstance(strategy, Ditto):
            holder = content if store == "server" else context.state
            holder[PERSONAL_KEY] = params_to_arrays(strategy.personal[pid], self.names)
            strategy.personal = {}
        if fault == TIMED_OUT:  # it trained, but its update arrives after the deadline
            raise InjectedTimeout(pid, round_)
        return Message(content=content, reply_to=message)

    def _legacy_reply(self, report: ClientReport, sent: Params, finish: dict[str, Any], history: list[float]) -> Any:
        """The ``FitRes`` record SecAgg+'s ``secaggplus_mod`` expects (weight = ``num_examples``);
        ``finish``: the keywords of :meth:`ClientReport.finish`."""
        import json

        import flwr.compat.common.recorddict_compat as compat
        from flwr.common import Code, FitRes, Status, ndarrays_to_parameters

        weight = finish["num_batches"] if self.engine.strategy.weighting == "batches" else finish["num_examples"]
        metrics = report.finish_legacy(sent, **finish)
        if history:
            metrics[DP_HISTORY_KEY] = json.dumps(history)
        fitres = FitRes(Status(Code.OK, ""), ndarrays_to_parameters(sent), int(weight), metrics)
        return compat.fitres_to_recorddict(fitres, keep_input=True)


# key -> (source, runtime). The source is kept with its runtime: a payload's key is its id(), and
# holding the payload alive is what stops a later payload from reusing that id and being handed
# this run's runtime (a stale strategy or config).
_RUNTIMES: dict[str, tuple[Any, _ClientRuntime]] = {}


def _runtime(source) -> _ClientRuntime:
    """The process's runtime for this run, built on first use from a Ray ObjectRef (the Ray
    actors of a simulation) or from a :class:`ClientPayload` itself (in-process grids)."""
    local = isinstance(source, ClientPayload)
    key = f"payload-{id(source)}" if local else source.hex()
    if key not in _RUNTIMES:
        _RUNTIMES.clear()  # one run at a time per process
        payload = source
        if not local:
            import ray

            payload = ray.get(source)
        _RUNTIMES[key] = (source, _ClientRuntime(payload))
    return _RUNTIMES[key][1]


def build_client_app(payload_ref):
    """The ClientApp of an fltrust experiment; ``payload_ref`` is a Ray ObjectRef of its
    :class:`ClientPayload` (or the payload itself, for a grid in this process)."""
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train(mods=[secagg_when_asked])  # Flower's secaggplus_mod on SecAgg+ messages (privacy.secure_aggregation)
    def train(message, context):
        return _runtime(payload_ref).train(message, context)

    @app.query()
    def query(message, context):
        _runtime(payload_ref)  # warm the actor up while the server discovers the nodes
        return partition_query_reply(message, context)

    return app

