"""``run.engine: flower``: an fltrust experiment as a Flower ServerApp + ClientApp on Flower's
Simulation Runtime (Ray backend), producing the same run folder as the in-process engine.

How a run maps onto Flower 1.42 (Message API):

- **ClientApp** (one per simulated SuperNode, executed in Ray actors with ``flower.num_cpus`` /
  ``flower.num_gpus`` each): a node is client ``node_config["partition-id"]`` of the prepared
  :class:`~fltrust.federation.Federation`. On a ``train`` message it does exactly what the
  in-process engine does for that client -- it runs the client code both engines share
  (:class:`fltrust.fl.client.SimulatedClient` and the strategy's ``local_update`` on an
  :class:`~fltrust.fl.base.EngineBase` built in the actor): reward = received model on the
  validation set before training, local training with the same seeds (run seed, round, client
  id), performance after training (Ditto: personal model), confusion matrix, counts, train loss,
  time, bytes -- reported through :class:`~fltrust.flower.client.ClientReport`. The federation,
  model and config reach the actors once, through Ray's object store.
- **ServerApp**: asks every node for its partition id (one ``query`` message each, which also
  warms the actors up), then runs Flower's ``Strategy.start`` with the Flower strategy of the
  config (:func:`~fltrust.flower.strategies.build_flower_strategy`) wrapped in
  :class:`~fltrust.flower.adapter.ObservedStrategy`: fltrust's seeded client sampling
  (:func:`fltrust.federation.sample_clients`), a :class:`~fltrust.core.records.RoundRecord` per
  round with the server-side evaluation on the auxiliary set (Flower's ``evaluate_fn``), handed to
  the run's :class:`~fltrust.runs.RunRecorder`, where the observers run.

Results equal the in-process engine's up to float32 rounding (Flower's FedAvg sums in float32;
see ``tests/flower/test_equivalence.py`` for the measured differences) -- its sequential client
path, ``training.vectorize: off``: a ClientApp trains one client, so the in-process engine's
vectorised training (all of a round's clients as one stacked model) has no Flower counterpart.
Server-side DP noise is drawn by Flower (seeded per round), so DP runs differ from the in-process
engine's noise draw.

**Attacks, failures, SecAgg+.** A malicious ClientApp applies the run's update-level attack to
what it sends (:mod:`fltrust.attacks`; data-level poisoning is in the shared federation). Injected
failures (:mod:`fltrust.faults`) are real ClientApp behaviour: a dropped client raises before
training, a failed one inside its training, a timed-out one after it; the server classifies the
error replies (``ObservedStrategy(reply_filter=...)``), aggregates the rest and reports the
counters. ``privacy.secure_aggregation: secagg+`` runs Flower's ``SecAggPlusWorkflow`` (in a
``DefaultWorkflow`` over a legacy FedAvg with fltrust's sampling) with ``secaggplus_mod`` on the
ClientApp, and marks those rounds ``server_metrics["secure_aggregation"] = 1``.

**Resume.** A Flower run is not checkpointed: an interrupted run restarts from round 0 (the
in-process engine resumes after its last finished round). Starting Ray and the actors is a
one-time cost of every run (``summary.json`` -> ``flower`` has the timings).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import socket
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.config import RAY_ADDRESS, ConfigError, ExperimentConfig, FlowerConfig
from fltrust.core.evaluation import get_params
from fltrust.core.records import Params, RunInfo
from fltrust.federation import Federation
from fltrust.fl.base import EngineBase
from fltrust.fl.client import SimulatedClient
from fltrust.fl.privacy import merge_history
from fltrust.flower.version import require_flower
from fltrust.flower.adapter import ClientRow, ObservedStrategy, aux_evaluate_fn, discover_partitions, partition_query_reply
from fltrust.flower.client import ClientReport
from fltrust.flower.records import FLTRUST_KEY, arrays_to_params, cast_like, params_to_arrays
from fltrust.flower.strategies import (
    DITTO_STORE_KEY,
    PERSONAL_KEY,
    UNIT_WEIGHT_KEY,
    ObservedSecAggPlusWorkflow,
    SampledLegacyFedAvg,
    build_flower_strategy,
    secagg_when_asked,
)
from fltrust.runs import RunRecorder

log = logging.getLogger("fltrust")

DP_HISTORY_KEY = "dp-history"
LEGACY_FITINS_KEY = "fitins.parameters"  # ArrayRecord key of a legacy FitIns (SecAgg+ workflow)
_QUIET_MESSAGES = (
    # run_simulation is the Simulation Runtime's only in-process entry point: the engine shares the
    # run's recorder, observers and data with the ServerApp, which `flwr run` (a separate
    # SuperLink process with a FAB) cannot. Flower 1.42 marks it deprecated in favour of `flwr run`;
    # we call it on purpose, so its warning is dropped (examples/flower_app shows `flwr run`).
    "The `run_simulation` function is deprecated",
    # fltrust evaluates on the server's auxiliary set, never on clients: deliberate, not news
    "fraction_evaluate is set to 0.0",
    # client failures injected by reliability.* (fltrust.faults): counted in the run record
    "[fltrust:injected-",
)


LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def _ray_on_loopback():
    """While ``ray.init`` starts a local cluster, make Ray take 127.0.0.1 as this node's address.

    On Linux Ray takes the address of the outward interface (``ray.init(_node_ip_address=
    "127.0.0.1")`` is turned into it), and the GCS, raylet, object manager, agents, workers and
    the driver then listen on every interface: anyone who reaches one can submit code. In its
    single-machine mode (the default on macOS and Windows, ``ray_constants.ENABLE_RAY_CLUSTER``
    false) the node address is 127.0.0.1 and every server binds loopback only. That mode is switched
    on for the start-up only; a cluster named by ``flower.ray_address`` is left as it is.
    """
    from ray._private import ray_constants

    previous = getattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = previous


class _QuietFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not any(m in text for m in _QUIET_MESSAGES)


@contextlib.contextmanager
def _quiet_flower(verbose: bool):
    """Flower's INFO chatter off (unless ``verbose``) and its two expected warnings dropped."""
    logger = logging.getLogger("flwr")
    quiet = _QuietFilter()
    level = logger.level
    logger.addFilter(quiet)
    if not verbose:
        logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            # Ray announces a future change of CUDA_VISIBLE_DEVICES for num_gpus=0 actors; the
            # clients pick their device themselves (cuda only when flower.num_gpus > 0)
            warnings.filterwarnings("ignore", message="Tip: In future versions of Ray", category=FutureWarning)
            yield
    finally:
        logger.removeFilter(quiet)
        logger.setLevel(level)


# -- the client side -----------------------------------------------------------------------------
@dataclass
class _ClientPayload:
    """What every ClientApp process needs, put once into Ray's object store."""

    cfg: ExperimentConfig
    federation: Federation  # on the CPU, without the test split and the auxiliary set
    model: nn.Module  # on the CPU
    device: str  # "cuda" when the clients may use a GPU


def _slim_federation(fed: Federation) -> Federation:
    """The federation without what clients never read (test split, aux set, raw arrays), on the CPU."""
    bundle = fed.bundle
    empty = np.zeros(0, dtype=np.int64)
    slim_bundle = dataclasses.replace(bundle, train=bundle.train.subset(empty), test=bundle.test.subset(empty))

    def cpu(t: torch.Tensor) -> torch.Tensor:
        return t.detach().to("cpu")

    return dataclasses.replace(
        fed, bundle=slim_bundle, x_train=cpu(fed.x_train), y_train=cpu(fed.y_train),
        train_index=[cpu(i) for i in fed.train_index], val_index=[cpu(i) for i in fed.val_index],
        x_aux=cpu(fed.x_aux[:0]), y_aux=cpu(fed.y_aux[:0]), x_test=cpu(fed.x_test[:0]), y_test=cpu(fed.y_test[:0]),
    )


def _federation_to(fed: Federation, device: torch.device) -> Federation:
    def to(t: torch.Tensor) -> torch.Tensor:
        return t.to(device)

    return dataclasses.replace(
        fed, x_train=to(fed.x_train), y_train=to(fed.y_train), train_index=[to(i) for i in fed.train_index],
        val_index=[to(i) for i in fed.val_index], x_aux=to(fed.x_aux), y_aux=to(fed.y_aux),
        x_test=to(fed.x_test), y_test=to(fed.y_test),
    )


class _ClientRuntime:
    """One ClientApp process's copy of the experiment: the engines' shared set-up, used for one client at a time."""

    def __init__(self, payload: _ClientPayload) -> None:
        cfg = payload.cfg
        torch.set_flush_denormal(True)  # as fltrust.experiment.prepare_experiment does
        if cfg.run.torch_threads is not None:
            torch.set_num_threads(cfg.run.torch_threads)
        else:
            torch.set_num_threads(max(1, int(cfg.flower.num_cpus)))
        device = torch.device("cuda" if payload.device == "cuda" and torch.cuda.is_available() else "cpu")
        model = payload.model.to(device)
        if getattr(cfg.training, "vectorize", "off") != "off":
            # a ClientApp trains one client: the in-process engine's sequential client path
            cfg = cfg.with_overrides({"training.vectorize": "off"})
        self.engine = EngineBase(cfg, _federation_to(payload.federation, device), model, device)
        self.names = list(model.state_dict().keys())
        self.reference = get_params(model)

    def train(self, message, context):
        """One client's round: the in-process client code, plus the run's attack and injected failures.

        Plain runs receive ``arrays`` + ``config`` (Message API); secagg+ runs receive the legacy
        ``FitIns`` records of Flower's SecAgg+ workflow and answer with a ``FitRes`` record, which
        ``secaggplus_mod`` masks before it leaves the node.
        """
        from flwr.app import ConfigRecord, Message, RecordDict

        from fltrust.attacks import poison_update
        from fltrust.faults import DROPPED, FAILED, TIMED_OUT, InjectedDropout, InjectedTimeout, client_fault, failing_train
        from fltrust.fl.strategies import Ditto

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
        fault = client_fault(engine.seed, round_, pid, engine.cfg.reliability)
        if fault == DROPPED:  # the client leaves before it trains: no update
            raise InjectedDropout(pid, round_)
        client = SimulatedClient(engine, pid, round_)  # as the in-process engine's: same data, seeds and DP
        if fault == FAILED:  # its training raises (inside the strategy's local_update)
            client.train = failing_train(pid, round_)
        report = ClientReport(lambda p: engine.trainer.evaluate(p, client.x_val, client.y_val), partition_id=pid)
        report.reward(received)
        strategy = engine.strategy
        store = str(config.get(DITTO_STORE_KEY, "server"))
        if isinstance(strategy, Ditto):
            holder = message.content if store == "server" else context.state
            personal = holder.array_records.get(PERSONAL_KEY)
            strategy.personal = {} if personal is None else {pid: arrays_to_params(personal, like=self.reference)}
        engine.dp_history = {}
        update = strategy.local_update(client, received)
        plan = engine.attack_plan
        sent = update.params
        if plan.sends_poisoned_update(pid):  # update-level attack: theta + s (w - theta)
            sent = poison_update(received, update.params, plan.factor)
        extra = {**update.extra, UNIT_WEIGHT_KEY: 1.0}
        if plan.active:
            extra["malicious"] = float(plan.is_malicious(pid))
        history = engine.dp_history.get(str(pid))
        if legacy:
            content = self._legacy_reply(report, client, update, sent, extra, history)
        else:
            metrics = report.finish(sent, num_examples=client.num_samples, num_batches=client.num_batches,
                                    train_loss=update.train_loss, performance=update.eval_params or update.params,
                                    extra=extra)
            if history:
                metrics[DP_HISTORY_KEY] = [float(v) for entry in history for v in entry]
            # the per-client report travels beside the metrics Flower's strategy aggregates, as the
            # ConfigRecord "fltrust" that ObservedStrategy reads and removes before aggregation
            content = RecordDict({"arrays": params_to_arrays(sent, self.names),
                                  "metrics": _aggregated_metrics(metrics, update.extra),
                                  FLTRUST_KEY: ConfigRecord(dict(metrics))})
        if isinstance(strategy, Ditto):
            personal = params_to_arrays(strategy.personal[pid], self.names)
            if store == "server":
                content[PERSONAL_KEY] = personal
            else:
                context.state[PERSONAL_KEY] = personal
            strategy.personal = {}
        if fault == TIMED_OUT:  # it trained, but its update arrives after the deadline
            raise InjectedTimeout(pid, round_)
        return Message(content=content, reply_to=message)

    def _legacy_reply(self, report: ClientReport, client, update, sent: Params, extra: dict, history) -> Any:
        """The ``FitRes`` record SecAgg+'s ``secaggplus_mod`` expects (weight = ``num_examples``)."""
        import json

        import flwr.compat.common.recorddict_compat as compat
        from flwr.common import Code, FitRes, Status, ndarrays_to_parameters

        weight = client.num_batches if self.engine.cfg.strategy.weighting == "batches" else client.num_samples
        metrics = report.finish_legacy(sent, num_examples=client.num_samples, num_batches=client.num_batches,
                                       train_loss=update.train_loss, performance=update.eval_params or update.params,
                                       extra=extra)
        if history:
            metrics[DP_HISTORY_KEY] = json.dumps([float(v) for entry in history for v in entry])
        fitres = FitRes(Status(Code.OK, ""), ndarrays_to_parameters(sent), int(weight), metrics)
        return compat.fitres_to_recorddict(fitres, keep_input=True)


# key -> (source, runtime). The source is kept with its runtime: a payload's key is its id(), and
# holding the payload alive is what stops a later payload from reusing that id and being handed
# this run's runtime (a stale strategy or config).
_RUNTIMES: dict[str, tuple[Any, _ClientRuntime]] = {}


def _runtime(source) -> _ClientRuntime:
    """The process's runtime for this run, built on first use from a Ray ObjectRef (the Ray
    actors of a simulation) or from a :class:`_ClientPayload` itself (in-process grids)."""
    if isinstance(source, _ClientPayload):
        key = f"payload-{id(source)}"
    else:
        key = source.hex()
    if key not in _RUNTIMES:
        _RUNTIMES.clear()  # one run at a time per process
        if isinstance(source, _ClientPayload):
            payload = source
        else:
            import ray

            payload = ray.get(source)
        _RUNTIMES[key] = (source, _ClientRuntime(payload))
    return _RUNTIMES[key][1]


def build_client_app(payload_ref):
    """The ClientApp of an fltrust experiment; ``payload_ref`` is a Ray ObjectRef of its
    :class:`_ClientPayload` (or the payload itself, for a grid in this process)."""
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


# -- the engine ----------------------------------------------------------------------------------
class FlowerEngine(EngineBase):
    """Runs one prepared experiment on Flower's Simulation Runtime (Ray backend).

    The in-process engine's sibling: same constructor and :meth:`run` contract, and the same
    set-up (DP calibration, auxiliary evaluation, epsilon accounting, system figures) from their
    common base :class:`fltrust.fl.base.EngineBase`.
    Settings come from the config's ``flower`` section (:class:`fltrust.config.FlowerConfig`):
    ``num_cpus`` / ``num_gpus`` per ClientApp (fractional GPUs share one device),
    ``num_supernodes`` (must equal ``partition.num_clients``) and ``ray_address`` (an existing Ray
    cluster, whose workers must be able to import fltrust; ``None`` starts a local Ray whose servers
    listen on 127.0.0.1 only, see :func:`_ray_on_loopback`).

    Resuming an interrupted Flower run restarts it from round 0. Flower shuts Ray down at the
    end of the simulation, a Ray session started by the caller included.
    """

    name = "flower"

    def __init__(self, cfg: ExperimentConfig, federation: Federation, model: nn.Module, device: torch.device) -> None:
        require_flower()
        super().__init__(cfg, federation, model, device)
        supernodes = cfg.flower.num_supernodes
        if supernodes is not None and supernodes != federation.num_clients:
            raise ValueError(f"flower.num_supernodes={supernodes} must equal the number of clients "
                             f"({federation.num_clients}): every client is one SuperNode")
        check_ray_target(cfg.flower)  # before Ray starts: a client that cannot be placed hangs Ray
        self._stop = threading.Event()  # set on Ctrl-C (or any error): the ServerApp thread gives up
        vectorize = getattr(cfg.training, "vectorize", "off")
        if vectorize != "off":
            # each ClientApp trains one client: the in-process engine's sequential client path
            (log.warning if vectorize == "on" else log.info)(
                "Flower engine: every ClientApp trains its client alone, as the in-process engine does with "
                "training.vectorize=off (results follow that path, not the vectorised one)")
        self.timings: dict[str, Any] = {}
        self._error: BaseException | None = None
        self._final: Params | None = None
        self._aux: tuple[float, float] | None = None
        self._launched: float | None = None
        self._rounds: dict[int, dict[str, float]] = {}  # server metrics of attacks / failures / SecAgg+

    # -- Ray ------------------------------------------------------------------------------
    def _start_ray(self) -> None:
        import ray

        if ray.is_initialized():
            return
        # Ray workers inherit the environment, not this process's sys.path (Flower does the same)
        pythonpath = os.pathsep.join([p for p in sys.path if p] + [os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)
        env = {"PYTHONPATH": pythonpath, "FLWR_TELEMETRY_ENABLED": os.environ.get("FLWR_TELEMETRY_ENABLED", "0")}
        options = dict(include_dashboard=False, logging_level=logging.WARNING, runtime_env={"env_vars": env})
        if self.cfg.flower.ray_address is not None:  # the user's cluster: its nodes listen where they were started
            ray.init(address=self.cfg.flower.ray_address, **options)
            return
        with _ray_on_loopback():
            ray.init(_node_ip_address=LOOPBACK, **options)
        node = ray.util.get_node_ip_address()
        if node != LOOPBACK:  # a Ray release that no longer honours _ray_on_loopback: fail closed
            ray.shutdown()
            raise RuntimeError(f"Ray started its local cluster on {node}, not on {LOOPBACK}, so anyone who reaches "
                               "this machine could run code in it; fltrust does not run there. Start Ray yourself "
                               "(`ray start --head --node-ip-address ...`) and pass flower.ray_address")

    def _payload(self) -> _ClientPayload:
        model = copy.deepcopy(self.model).to("cpu")
        use_gpu = self.device.type == "cuda" and self.cfg.flower.num_gpus > 0
        if self.device.type == "cuda" and not use_gpu:
            log.warning("run.device is cuda but flower.num_gpus=0: the clients train on the CPU")
        return _ClientPayload(self.cfg, _slim_federation(self.fed), model, "cuda" if use_gpu else "cpu")

    # -- the server side ------------------------------------------------------------------
    def _evaluate(self, params: Params) -> tuple[float, float]:
        self._aux = self.evaluate_aux(params)
        return self._aux

    def _central_loss(self, server_round: int, arrays) -> float:
        """L(theta_k; D) for legacy q-FedAvg: the previous evaluation of theta_k on D."""
        if self._aux is None:
            self._evaluate(arrays_to_params(arrays))
        return float(self._aux[0])

    def _merge_dp(self, server_round: int, rows: list[ClientRow]) -> None:
        for row in rows:
            flat = row.metrics.get(DP_HISTORY_KEY)
            if flat:
                entries = [list(map(float, flat[i:i + 3])) for i in range(0, len(flat), 3)]
                key = str(row.client_id)
                self.dp_history[key] = merge_history(self.dp_history.get(key, []), entries)

    def _server_metrics(self, server_round: int) -> dict[str, float]:
        eps = self.epsilon_spent(server_round)
        out = {} if eps is None else {"epsilon": eps}
        out.update(self._rounds.get(server_round, {}))
        return out

    # -- attacks, injected failures, SecAgg+: what the server observed --------------------
    def _observe(self, server_round: int, *, sampled: int, reasons: list[str], arrived_ids: list[int]) -> None:
        """Count a round's error replies by injected category (an unexpected error is raised) and
        the malicious clients among the updates that arrived -> server metrics of the round."""
        from fltrust.faults import count_errors

        counts = count_errors(reasons)
        if counts["unexpected"]:
            odd = [r for r in reasons if "[fltrust:injected-" not in r]
            raise RuntimeError(f"round {server_round}: {len(odd)} client(s) failed: {'; '.join(odd)}")
        out = self._rounds.setdefault(server_round, {})
        if self.attack_plan.active:
            out["num_malicious"] = float(sum(self.attack_plan.is_malicious(c) for c in arrived_ids))
        if self.cfg.reliability.active:
            out.update({"num_sampled": float(sampled), "num_dropped": float(counts["dropped"]),
                        "num_failed": float(counts["failed"]), "num_timed_out": float(counts["timed_out"]),
                        "num_aggregated": float(len(arrived_ids)), "model_kept": float(not arrived_ids)})

    def _filter_replies(self, server_round: int, replies: list) -> list:
        """ObservedStrategy ``reply_filter``: the error replies of injected failures are counted and
        removed; the strategy aggregates the updates that arrived."""
        from fltrust.faults import classify_error
        from fltrust.flower.records import CLIENT_ID_KEY

        kept, reasons = [], []
        for message in replies:
            if message.has_error() and classify_error(message.error.reason) is not None:
                reasons.append(message.error.reason)
            else:
                kept.append(message)
        arrived = [int(m.content[FLTRUST_KEY][CLIENT_ID_KEY]) for m in kept if not m.has_error()]
        self._observe(server_round, sampled=len(replies), reasons=reasons + [m.error.reason for m in kept if m.has_error()],
                      arrived_ids=arrived)
        return kept

    def _secagg_server(self, grid, context, recorder: RunRecorder, mapping: dict[int, int], evaluate) -> None:
        """``privacy.secure_aggregation: secagg+``: Flower's ``DefaultWorkflow`` with
        ``SecAggPlusWorkflow`` driving a legacy FedAvg (fltrust's sampling) through a
        ``LegacyContext``. The server only sees the weighted sum of the masked, quantised updates;
        every client's row in the record therefore holds that aggregate as its model."""
        from flwr.common import ndarrays_to_parameters
        from flwr.server import LegacyContext, ServerConfig
        from flwr.server.workflow import DefaultWorkflow

        from fltrust.flower.adapter import ObservedLegacyStrategy

        cfg, p = self.cfg, self.cfg.privacy
        weights = [len(i) for i in self.fed.train_index]
        if cfg.strategy.weighting == "batches":
            from fltrust.fl.training import num_batches

            weights = [num_batches(w, cfg.training.batch_size) for w in weights]
        fit_results: dict[int, list[dict]] = {}
        protocol: dict[int, dict[str, Any]] = {}

        def on_fit(server_round: int, metrics: list[dict]) -> None:  # the unmasked aggregate's clients
            fit_results[server_round] = metrics
            self._merge_dp(server_round, [ClientRow(int(m["partition-id"]), 0, [], _legacy_dp(m)) for m in metrics])

        def on_errors(server_round: int, reasons: list[str]) -> None:  # error replies of the masked-vector stage
            protocol.setdefault(server_round, {})["reasons"] = reasons

        def on_done(server_round: int, ok: bool) -> None:
            protocol.setdefault(server_round, {})["ok"] = ok

        def server_metrics(server_round: int) -> dict[str, float]:
            # A round whose protocol halted (too few clients left for the reconstruction threshold)
            # aggregates nothing: secure_aggregation = 0, the global model is kept.
            state = protocol.pop(server_round, {})
            ok = bool(state.get("ok", False))
            ids = [int(m["partition-id"]) for m in fit_results.pop(server_round, [])] if ok else []
            self._observe(server_round, sampled=len(self.sample_clients(server_round)),
                          reasons=list(state.get("reasons", [])), arrived_ids=ids)
            return {**self._server_metrics(server_round), "secure_aggregation": float(ok)}

        def evaluate_fn(server_round, ndarrays, config):
            result = evaluate(server_round, params_to_arrays(ndarrays, names))
            return float(result["aux_loss"]), {"aux_accuracy": float(result["aux_accuracy"])}

        names = list(self.model.state_dict().keys())
        strategy = SampledLegacyFedAvg(sampler=self.sample_clients, node_partitions=mapping, fit_metrics_hook=on_fit,
                                       evaluate_fn=evaluate_fn, accept_failures=True,
                                       fit_metrics_aggregation_fn=lambda rows: {},  # fltrust reads every client's row
                                       initial_parameters=ndarrays_to_parameters(get_params(self.model)))
        observed = ObservedLegacyStrategy(strategy, recorder, keep_extra_metrics=False, server_metrics_fn=server_metrics)
        workflow = ObservedSecAggPlusWorkflow(
            p.secagg_num_shares, p.secagg_reconstruction_threshold, max_weight=float(max(weights)),
            clipping_range=p.secagg_clipping_range, quantization_range=int(p.secagg_quantization_range),
            on_errors=on_errors, on_done=on_done)
        legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=cfg.training.rounds), strategy=observed)
        DefaultWorkflow(fit_workflow=workflow)(grid, legacy)
        self._final = observed.builder.last_record.global_params_after
        self.timings["round_s"] = [observed.builder.round_seconds[r] for r in sorted(observed.builder.round_seconds)]

    def _simulate(self, server_app, payload: _ClientPayload) -> None:
        """Run ``server_app`` against one ClientApp per client on Flower's Simulation Runtime."""
        import ray
        from flwr.simulation import run_simulation

        cfg = self.cfg
        t = time.perf_counter()
        try:
            self._start_ray()
        except ConnectionError as exc:  # flower.ray_address names no running cluster
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"flower.ray_address={cfg.flower.ray_address!r}: cannot connect to a Ray cluster "
                              f"({reason}); start one (`ray start --head`) or unset flower.ray_address") from None
        self.timings["ray_init_s"] = time.perf_counter() - t
        t = time.perf_counter()
        payload_ref = ray.put(payload)
        self.timings["payload_put_s"] = time.perf_counter() - t
        backend = {"client_resources": {"num_cpus": float(cfg.flower.num_cpus), "num_gpus": float(cfg.flower.num_gpus)}}
        self._launched = time.perf_counter()
        run_simulation(server_app, build_client_app(payload_ref), num_supernodes=self.fed.num_clients,
                       backend_config=backend)
        self.timings["simulation_s"] = time.perf_counter() - self._launched

    def _server_app(self, recorder: RunRecorder, progress):
        from flwr.serverapp import ServerApp

        app = ServerApp()
        cfg = self.cfg
        names = list(self.model.state_dict().keys())
        evaluate_fn = aux_evaluate_fn(self._evaluate)

        @app.main()
        def main(grid, context) -> None:
            _stop_with(grid, self._stop)
            try:
                if self._launched is not None:
                    self.timings["simulation_start_s"] = time.perf_counter() - self._launched
                start = time.perf_counter()
                mapping = discover_partitions(grid, expected=self.fed.num_clients)
                self.timings["discovery_s"] = time.perf_counter() - start

                def evaluate(server_round, arrays):
                    result = evaluate_fn(server_round, arrays)
                    if server_round > 0:
                        progress.update(1)
                        progress.set_postfix(aux_acc=f"{result['aux_accuracy']:.3f}")
                        log.info("round %d: aux loss %.4f acc %.4f", server_round, result["aux_loss"],
                                 result["aux_accuracy"])
                    return result

                if cfg.privacy.secure_aggregation == "secagg+":
                    self._secagg_server(grid, context, recorder, mapping, evaluate)
                    return
                strategy = build_flower_strategy(cfg, central_loss=self._central_loss, server_noise=self.server_noise,
                                                 ditto_personal_store=cfg.flower.ditto_personal_store)
                observed = ObservedStrategy(strategy, recorder, sampler=self.sample_clients, node_partitions=mapping,
                                            keep_extra_metrics=False, server_metrics_fn=self._server_metrics,
                                            reply_hook=self._merge_dp, strict=True, reply_filter=self._filter_replies)
                observed.start(grid, params_to_arrays(get_params(self.model), names), num_rounds=cfg.training.rounds,
                               evaluate_fn=evaluate)
                self._final = observed.builder.last_record.global_params_after
                self.timings["round_s"] = [observed.builder.round_seconds[r] for r in sorted(observed.builder.round_seconds)]
            except BaseException as exc:  # noqa: BLE001 - re-raised in run(), after Flower has shut down
                self._error = exc

        return app

    # -- the whole run --------------------------------------------------------------------
    def run(self, recorder: RunRecorder, info: RunInfo, *, resume: bool = True,
            extra_summary: dict[str, Any] | None = None, dataset_extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run every round on Flower's simulation runtime; same contract as ``EngineBase.run``.

        An interrupted Flower run is not resumed: it restarts from round 0 (``resume`` only
        decides whether that is logged).

        Parameters
        ----------
        recorder : RunRecorder
            The run folder's recorder: runs the observers, writes the rounds and the summary.
        info : RunInfo
            What the observers learn at the start (run id, clients, class counts, ...).
        resume : bool
            Log a warning when the folder holds an earlier, interrupted run (default True).
        extra_summary : dict, optional
            Further fields for ``summary.json`` (override the engine's own of the same name).
        dataset_extra : dict, optional
            Further entries for ``dataset.json``.

        Returns
        -------
        dict of str to Any
            The summary fields the engine wrote: as the in-process engine's, plus ``flower`` (the Flower
            version and timings).

        Raises
        ------
        RuntimeError
            If the simulation ends without finishing its rounds.
        """
        cfg = self.cfg
        folder = recorder.folder
        if resume and (folder.checkpoint.is_file() or folder.count_rounds() > 0):
            log.warning("%s: the Flower engine does not resume; restarting from round 0", info.run_id)
        folder.checkpoint.unlink(missing_ok=True)
        self.start_run(recorder, info, dataset_extra)
        start_time = time.perf_counter()
        self._error, self._final, self._aux, self._rounds = None, None, None, {}
        self.timings = {"flower_version": require_flower()}
        progress = _progress(cfg)
        self._stop.clear()
        try:
            with _quiet_flower(verbose=log.isEnabledFor(logging.DEBUG)):
                self._simulate(self._server_app(recorder, progress), self._payload())
        except BaseException:  # Ctrl-C included: Flower stops its runtime, but its ServerApp thread waits on
            self._stop.set()   # replies that never come, and would hold the interpreter at exit
            raise
        finally:
            progress.close()
            _shutdown_ray()
        if self._error is not None:
            raise self._error
        if self._final is None:
            raise RuntimeError("the Flower simulation ended without finishing its rounds (see the log above)")
        wall = time.perf_counter() - start_time
        last = recorder.records[-1].server_metrics
        return self.finish_run(recorder, self._final, wall, (last["aux_loss"], last["aux_accuracy"]),
                               engine_fields={"flower": dict(self.timings)}, extra_summary=extra_summary)


AGGREGATED_KEYS = ("num-examples", "num-batches", "train_loss", UNIT_WEIGHT_KEY)
"""The keys of a ClientApp's MetricRecord, beside its strategy's own (``LocalResult.extra``): what
Flower's strategies weight and average by. The rest of the report goes in the ConfigRecord ``"fltrust"``."""


def _aggregated_metrics(report, strategy_keys) -> Any:
    """The MetricRecord a ClientApp sends for Flower's aggregation: :data:`AGGREGATED_KEYS` and
    the strategy's keys (e.g. q-FFL's ``qffl_loss``), taken from the full ``report``."""
    from flwr.app import MetricRecord

    keep = set(AGGREGATED_KEYS) | set(strategy_keys)
    return MetricRecord({k: v for k, v in report.items() if k in keep})


def _legacy_dp(metrics: dict) -> dict:
    """A legacy reply's metrics with the DP history (a JSON string there) as a list."""
    import json

    value = metrics.get(DP_HISTORY_KEY)
    return {**metrics, DP_HISTORY_KEY: json.loads(value)} if isinstance(value, str) else metrics


def _progress(cfg: ExperimentConfig):
    from tqdm.auto import tqdm

    return tqdm(total=cfg.training.rounds, desc=f"{cfg.run.name} (flower)", unit="round",
                disable=not cfg.run.progress, leave=False)


# -- resources, interrupts and shutdown ----------------------------------------------------------
def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def check_ray_target(flower: FlowerConfig) -> None:
    """Fail in one line, before Ray starts, where the run could never get going.

    For a local Ray (``flower.ray_address`` unset), one ClientApp's ``flower.num_cpus`` and
    ``flower.num_gpus`` must fit this machine (else Ray keeps waiting for a node that fits and
    Flower prints a traceback per attempt). For a ``host:port`` cluster address, something must
    answer there (a 5 s TCP connect; else ``ray.init`` retries for minutes).

    Raises
    ------
    ConfigError
        Naming the field, what it asks and what is available.
    """
    if flower.ray_address is None:
        cpus = available_cpus()
        if flower.num_cpus > cpus:
            raise ConfigError(f"flower.num_cpus={flower.num_cpus:g} asks more CPUs per ClientApp than the {cpus} "
                              f"available to this process, so no client could start; use flower.num_cpus <= {cpus}")
        if flower.num_gpus > 0:
            gpus = torch.cuda.device_count()
            if flower.num_gpus > gpus:
                raise ConfigError(f"flower.num_gpus={flower.num_gpus:g} asks more GPUs per ClientApp than the {gpus} "
                                  f"this machine has, so no client could start; use flower.num_gpus <= {gpus}")
        return
    match = RAY_ADDRESS.fullmatch(flower.ray_address)
    if match is None:  # "auto": Ray looks for a cluster on this machine (a ConnectionError if none)
        return
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"flower.ray_address={flower.ray_address!r}: nothing answers at {host}:{port} "
                          f"({exc.strerror or type(exc).__name__}); start the cluster (`ray start --head`) "
                          f"or unset flower.ray_address for a local Ray") from None


class SimulationStopped(Exception):
    """Raised in the ServerApp thread when the engine stops waiting for client replies."""


def _stop_with(grid, stop: threading.Event) -> None:
    """Make the ServerApp's waits for client replies give up once ``stop`` is set.

    Flower's in-memory grid polls ``pull_messages`` for replies with no end when no timeout is
    given; after a Ctrl-C its runtime is gone, no reply comes, and its (non-daemon) ServerApp
    thread would keep the interpreter from exiting. Each poll now checks ``stop`` first.
    """
    pull = grid.pull_messages

    def pull_messages(*args, **kwargs):
        if stop.is_set():
            raise SimulationStopped("the Flower engine stopped (interrupted or failed)")
        return pull(*args, **kwargs)

    grid.pull_messages = pull_messages


def _shutdown_ray() -> None:
    """Stop this process's Ray session, if any (Flower stops it after a finished simulation, not
    after an interrupt or an error)."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
