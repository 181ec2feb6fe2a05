"""``run.engine: flower``: an fltrust experiment as a Flower ServerApp + ClientApp on Flower's
Simulation Runtime (Ray backend), producing the same run folder as the in-process engine.

How a run maps onto Flower 1.42 (Message API):

- **ClientApp** (:mod:`fltrust.engines.flower.client_app`; one per simulated SuperNode, executed in Ray
  actors with ``flower.num_cpus`` / ``flower.num_gpus`` each): a node is client
  ``node_config["partition-id"]`` of the prepared :class:`~fltrust.federation.Federation`. On a
  ``train`` message it does exactly what the in-process engine does for that client -- it runs the
  client code both engines share (:class:`fltrust.engines.client.SimulatedClient` and the strategy's
  ``local_update`` on an :class:`~fltrust.engines.base.EngineBase` built in the actor): reward = received
  model on the validation set before training, local training with the same seeds (run seed, round,
  client id), performance after training (Ditto: personal model), confusion matrix, counts, train
  loss, time, bytes -- reported through :class:`~fltrust.flower.client.ClientReport`. The
  federation, model and config reach the actors once, through Ray's object store.
- **ServerApp**: asks every node for its partition id (one ``query`` message each, which also
  warms the actors up), then runs Flower's ``Strategy.start`` with the Flower strategy of the
  config (:func:`~fltrust.engines.flower.strategies.build_flower_strategy`) wrapped in
  :class:`~fltrust.flower.adapter.ObservedStrategy`: fltrust's seeded client sampling
  (:func:`fltrust.federation.sample_clients`), a :class:`~fltrust.core.records.RoundRecord` per
  round with the server-side evaluation on the auxiliary set (Flower's ``evaluate_fn``), handed to
  the run's :class:`~fltrust.runs.RunRecorder`, where the observers run.

Results equal the in-process engine's up to float32 rounding (Flower's FedAvg sums in float32;
see ``tests/engines/flower/test_equivalence.py`` for the measured differences) -- its sequential client
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
one-time cost of every run (``summary.json`` -> ``flower`` has the timings). Ray's start on
loopback, the checks before it, quiet logs and the shutdown are :mod:`fltrust.engines.flower.simulation`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from fltrust.algorithms.privacy import PrivacyMechanism
from fltrust.algorithms.strategies import Strategy
from fltrust.config import ConfigError, FlowerConfig
from fltrust.core.evaluation import get_params
from fltrust.core.records import Params, RunInfo
from fltrust.engines.base import EngineBase, progress_bar
from fltrust.flower.adapter import ObservedStrategy, aux_evaluate_fn
from fltrust.engines.flower.client_app import (
    DP_HISTORY_KEY,
    ClientPayload,
    build_client_app,
    slim_federation,
)
from fltrust.flower.partitions import discover_partitions
from fltrust.flower.records import FLTRUST_KEY, arrays_to_params, params_to_arrays
from fltrust.engines.flower.simulation import (
    LOOPBACK,
    NodeTally,
    check_ray_target,
    join_ray,
    quiet_flower,
    ray_on_loopback,
    record_ray_nodes,
    shutdown_ray,
    sigint_stops,
    stop_with,
)
from fltrust.flower.sinks import ClientRow
from fltrust.engines.flower.strategies import (
    ObservedSecAggPlusWorkflow,
    SampledLegacyFedAvg,
    build_flower_strategy,
    check_secure_aggregation,
    flower_counterpart,
)
from fltrust.flower.version import require_flower
from fltrust.names import SecureAggregation
from fltrust.runs import RunRecorder

log = logging.getLogger("fltrust")

__all__ = ["FlowerEngine", "SecAggPlus"]


@dataclass(frozen=True)
class SecAggPlus:
    """Flower's SecAgg+ settings (``privacy.secagg_*``; :class:`fltrust.config.PrivacyConfig`).

    Attributes
    ----------
    num_shares, reconstruction_threshold : float
        SecAgg+'s ``num_shares`` and ``reconstruction_threshold``.
    clipping_range : float
        Parameters are clipped to [-range, range] before quantisation.
    quantization_range : int
        Quantisation levels over [-clipping_range, clipping_range].
    """

    num_shares: float
    reconstruction_threshold: float
    clipping_range: float
    quantization_range: int


# -- the engine ----------------------------------------------------------------------------------
class FlowerEngine(EngineBase):
    """Runs one prepared experiment on Flower's Simulation Runtime (Ray backend).

    The in-process engine's sibling: the same parts and :meth:`run` contract, and the same
    set-up (auxiliary evaluation, epsilon accounting, system figures) from their common base
    :class:`fltrust.engines.base.EngineBase`, whose parameters it takes, plus:

    Parameters
    ----------
    *args, **kwargs
        :class:`~fltrust.engines.base.EngineBase`'s.
    flower : FlowerConfig
        The ``flower`` section: ``num_cpus`` / ``num_gpus`` per ClientApp (fractional GPUs share
        one device), ``num_supernodes`` (must equal the number of clients), ``ray_address`` (an
        existing Ray cluster, whose workers must be able to import fltrust, joined at that address
        or failing in one line within a minute, see
        :func:`fltrust.engines.flower.simulation.join_ray`; ``None`` starts a local Ray whose
        servers listen on 127.0.0.1 only, see
        :func:`fltrust.engines.flower.simulation.ray_on_loopback`), ``ditto_personal_store``.
    secure_aggregation : SecAggPlus, optional
        Run Flower's SecAgg+ protocol with these settings (default: no secure aggregation).
    torch_threads : int, optional
        CPU threads of each ClientApp (default: ``flower.num_cpus``).

    Resuming an interrupted Flower run restarts it from round 0. Flower shuts Ray down at the
    end of the simulation, a Ray session started by the caller included.
    """

    name = "flower"

    def __init__(self, *args: Any, flower: FlowerConfig | None = None, secure_aggregation: SecAggPlus | None = None,
                 torch_threads: int | None = None, **kwargs: Any) -> None:
        require_flower()
        super().__init__(*args, **kwargs)
        self.flower = flower if flower is not None else FlowerConfig()
        self.secure_aggregation = secure_aggregation
        self.torch_threads = torch_threads
        self.check_components(strategy=type(self.strategy), privacy=type(self.privacy),
                              secure_aggregation="secagg+" if secure_aggregation is not None else None)
        supernodes = self.flower.num_supernodes
        if supernodes is not None and supernodes != self.fed.num_clients:
            raise ValueError(f"flower.num_supernodes={supernodes} must equal the number of clients "
                             f"({self.fed.num_clients}): every client is one SuperNode")
        # before Ray starts: a client that cannot be placed, or a cluster Ray cannot reach, hangs Ray
        self._ray_target = check_ray_target(self.flower)
        self._tally = None  # the NodeTally actor of a Ray simulation: where each ClientApp ran
        self._stop = threading.Event()  # set on Ctrl-C (or any error): the ServerApp thread gives up
        vectorize = self.training.vectorize
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

    @classmethod
    def check_components(cls, *, strategy: type[Strategy], privacy: type[PrivacyMechanism],
                         secure_aggregation: SecureAggregation | None) -> None:
        """Raise :class:`~fltrust.config.ConfigError` unless the strategy has a Flower counterpart
        (:data:`~fltrust.engines.flower.strategies.FLOWER_STRATEGIES`), SecAgg+ can aggregate it
        when asked, and the privacy mechanism runs on Flower (its ``engines``).

        Parameters
        ----------
        strategy : type
            The strategy class.
        privacy : type
            The privacy mechanism class.
        secure_aggregation : str or None
            ``privacy.secure_aggregation``.
        """
        flower_counterpart(strategy)
        check_secure_aggregation(strategy, secure_aggregation)
        if cls.name not in privacy.engines:
            raise ConfigError(f"privacy.mode={privacy.name!r} does not run on run.engine=flower; set run.engine=inprocess")

    # -- Ray ------------------------------------------------------------------------------
    def _start_ray(self) -> None:
        import ray

        if ray.is_initialized():
            return
        # Ray workers inherit the environment, not this process's sys.path (Flower does the same)
        pythonpath = os.pathsep.join([p for p in sys.path if p] + [os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)
        env = {"PYTHONPATH": pythonpath, "FLWR_TELEMETRY_ENABLED": os.environ.get("FLWR_TELEMETRY_ENABLED", "0")}
        options: dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING, runtime_env={"env_vars": env})
        if self._ray_target is not None:  # the user's cluster, at the address given (or a one-line error)
            join_ray(self._ray_target, **options)
            return
        with ray_on_loopback():
            ray.init(_node_ip_address=LOOPBACK, **options)
        node = ray.util.get_node_ip_address()
        if node != LOOPBACK:  # a Ray release that no longer honours ray_on_loopback: fail closed
            ray.shutdown()
            raise RuntimeError(f"Ray started its local cluster on {node}, not on {LOOPBACK}, so anyone who reaches "
                               "this machine could run code in it; fltrust does not run there. Start Ray yourself "
                               "(`ray start --head --node-ip-address ...`) and pass flower.ray_address")

    def _payload(self) -> ClientPayload:
        model = copy.deepcopy(self.model).to("cpu")
        use_gpu = self.device.type == "cuda" and self.flower.num_gpus > 0
        if self.device.type == "cuda" and not use_gpu:
            log.warning("run.device is cuda but flower.num_gpus=0: the clients train on the CPU")
        threads = self.torch_threads if self.torch_threads is not None else max(1, int(self.flower.num_cpus))
        # each ClientApp trains one client: the in-process engine's sequential client path
        training = dataclasses.replace(self.training, vectorize="off")
        return ClientPayload(slim_federation(self.fed), model, "cuda" if use_gpu else "cpu", strategy=self.strategy,
                             privacy=self.privacy, training=training, clients_per_round=self.per_round,
                             run=self.settings, attack=self.attack_plan, reliability=self.reliability,
                             torch_threads=threads)

    # -- the server side ------------------------------------------------------------------
    def _evaluate(self, params: Params) -> tuple[float, float]:
        self._aux = self.evaluate_aux(params)
        return self._aux

    def _central_loss(self, server_round: int, arrays) -> float:
        """L(theta_k; D) for legacy q-FedAvg: the previous evaluation of theta_k on D."""
        aux = self._aux if self._aux is not None else self._evaluate(arrays_to_params(arrays))
        return float(aux[0])

    def _merge_dp(self, server_round: int, rows: list[ClientRow]) -> None:
        for row in rows:
            flat = row.metrics.get(DP_HISTORY_KEY)
            if flat:
                entries = [list(map(float, flat[i:i + 3])) for i in range(0, len(flat), 3)]
                self.privacy.add_accounting(row.client_id, entries)

    def _server_metrics(self, server_round: int) -> dict[str, float]:
        return {**self._epsilon_metric(server_round), **self._rounds.get(server_round, {})}

    # -- attacks, injected failures, SecAgg+: what the server observed --------------------
    def _observe(self, server_round: int, *, sampled: int, reasons: list[str], arrived_ids: list[int]) -> None:
        """Count a round's error replies by injected category (an unexpected error is raised) and
        the malicious clients among the updates that arrived -> server metrics of the round."""
        from fltrust.faults import DROPPED, FAILED, TIMED_OUT, count_errors

        counts = count_errors(reasons)
        if counts["unexpected"]:
            odd = [r for r in reasons if "[fltrust:injected-" not in r]
            raise RuntimeError(f"round {server_round}: {len(odd)} client(s) failed: {'; '.join(odd)}")
        counters: dict[str, float] = {}
        if self.reliability.active:  # num_sampled, num_dropped, num_failed, num_timed_out
            counters = {"num_sampled": float(sampled)}
            counters.update({f"num_{k}": float(counts[k]) for k in (DROPPED, FAILED, TIMED_OUT)})
        self._rounds.setdefault(server_round, {}).update(self.round_extras(arrived_ids, counters))

    def _filter_replies(self, server_round: int, replies: list) -> list:
        """ObservedStrategy ``reply_filter``: the error replies of injected failures are counted and
        removed; the strategy aggregates the updates that arrived."""
        from fltrust.faults import classify_error
        from fltrust.flower.records import CLIENT_ID_KEY

        kept = [m for m in replies if not (m.has_error() and classify_error(m.error.reason) is not None)]
        arrived = [int(m.content[FLTRUST_KEY][CLIENT_ID_KEY]) for m in kept if not m.has_error()]
        self._observe(server_round, sampled=len(replies), reasons=[m.error.reason for m in replies if m.has_error()],
                      arrived_ids=arrived)
        return kept

    def _secagg_server(self, p: SecAggPlus, grid, context, recorder: RunRecorder, mapping: dict[int, int], evaluate):
        """``privacy.secure_aggregation: secagg+``: Flower's ``DefaultWorkflow`` with
        ``SecAggPlusWorkflow`` driving a legacy FedAvg (fltrust's sampling) through a
        ``LegacyContext``. The server only sees the weighted sum of the masked, quantised updates;
        every client's row in the record therefore holds that aggregate as its model."""
        from flwr.common import ndarrays_to_parameters
        from flwr.server import LegacyContext, ServerConfig
        from flwr.server.workflow import DefaultWorkflow

        from fltrust.flower.legacy import ObservedLegacyStrategy

        weights = [len(i) for i in self.fed.train_index]
        if self.strategy.weighting == "batches":
            from fltrust.engines.training import num_batches

            weights = [num_batches(w, self.training.batch_size) for w in weights]
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
            p.num_shares, p.reconstruction_threshold, max_weight=float(max(weights)),
            clipping_range=p.clipping_range, quantization_range=int(p.quantization_range),
            on_errors=on_errors, on_done=on_done)
        legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=self.training.rounds), strategy=observed)
        DefaultWorkflow(fit_workflow=workflow)(grid, legacy)
        return observed

    def _simulate(self, server_app, payload: ClientPayload) -> None:
        """Run ``server_app`` against one ClientApp per client on Flower's Simulation Runtime."""
        import ray
        from flwr.simulation import run_simulation

        t = time.perf_counter()
        try:
            self._start_ray()
        except ConnectionError as exc:  # flower.ray_address names no running cluster
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"flower.ray_address={self.flower.ray_address!r}: cannot connect to a Ray cluster "
                              f"({reason}); start one (`ray start --head`) or unset flower.ray_address") from None
        self.timings["ray_init_s"] = time.perf_counter() - t
        t = time.perf_counter()
        payload_ref = ray.put(payload)
        self.timings["payload_put_s"] = time.perf_counter() - t
        backend = {"client_resources": {"num_cpus": float(self.flower.num_cpus), "num_gpus": float(self.flower.num_gpus)}}
        self._tally = ray.remote(num_cpus=0)(NodeTally).remote()  # read by the ServerApp once its rounds end
        client_app = record_ray_nodes(build_client_app(payload_ref), self._tally)
        self._launched = time.perf_counter()
        run_simulation(server_app, client_app, num_supernodes=self.fed.num_clients, backend_config=backend)
        self.timings["simulation_s"] = time.perf_counter() - self._launched

    def _server_app(self, recorder: RunRecorder, progress):
        from flwr.serverapp import ServerApp

        app = ServerApp()
        names = list(self.model.state_dict().keys())
        evaluate_fn = aux_evaluate_fn(self._evaluate)

        @app.main()
        def main(grid, context) -> None:
            stop_with(grid, self._stop)
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

                if self.secure_aggregation is not None:
                    observed = self._secagg_server(self.secure_aggregation, grid, context, recorder, mapping, evaluate)
                else:
                    strategy = build_flower_strategy(self.strategy, clients_per_round=self.per_round, seed=self.seed,
                                                     central_noise=self.privacy.central_noise,
                                                     central_loss=self._central_loss,
                                                     ditto_personal_store=self.flower.ditto_personal_store)
                    observed = ObservedStrategy(strategy, recorder, sampler=self.sample_clients, node_partitions=mapping,
                                                keep_extra_metrics=False, server_metrics_fn=self._server_metrics,
                                                reply_hook=self._merge_dp, strict=True, reply_filter=self._filter_replies)
                    observed.start(grid, params_to_arrays(get_params(self.model), names),
                                   num_rounds=self.training.rounds, evaluate_fn=evaluate)
                self._final = observed.builder.final_params
                self.timings["round_s"] = [observed.builder.round_seconds[r] for r in sorted(observed.builder.round_seconds)]
            except BaseException as exc:  # noqa: BLE001 - re-raised in run(), after Flower has shut down
                self._error = exc
            finally:
                self._read_ray_nodes()

        return app

    def _read_ray_nodes(self) -> None:
        """``summary.json`` -> ``flower.ray_nodes``: the Ray node of every ClientApp call (read while
        Ray is up: Flower shuts it down when the ServerApp returns)."""
        if self._tally is None or self._stop.is_set():  # interrupted: Ray's workers may be gone already
            return
        import ray

        try:
            self.timings["ray_nodes"] = ray.get(self._tally.read.remote(), timeout=60)
        except Exception as exc:  # noqa: BLE001 - the run fails with it, unless it failed already
            if self._error is None:
                self._error = RuntimeError(f"could not read where the ClientApps ran from Ray: {exc}")

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
            version, timings, and ``ray_nodes``: for each Ray node that ran ClientApps, its address,
            the number of ClientApp calls and the clients it ran).

        Raises
        ------
        RuntimeError
            If the simulation ends without finishing its rounds.
        """
        folder = recorder.folder
        if resume and (folder.checkpoint.is_file() or folder.count_rounds() > 0):
            log.warning("%s: the Flower engine does not resume; restarting from round 0", info.run_id)
        folder.checkpoint.unlink(missing_ok=True)
        self.start_run(recorder, info, dataset_extra)
        start_time = time.perf_counter()
        self._error, self._final, self._aux, self._rounds, self._tally = None, None, None, {}, None
        self.timings = {"flower_version": require_flower()}
        progress = progress_bar(self.settings, self.training.rounds, label=" (flower)")
        self._stop.clear()
        try:
            with quiet_flower(verbose=log.isEnabledFor(logging.DEBUG)), sigint_stops(self._stop) as ctrl_c:
                self._simulate(self._server_app(recorder, progress), self._payload())
        except BaseException:  # a second Ctrl-C included: Flower stops its runtime, but its ServerApp thread
            self._stop.set()   # waits on replies that never come, and would hold the interpreter at exit
            raise
        finally:
            progress.close()
            shutdown_ray()
        if ctrl_c.interrupted:  # the runtime stopped in order (sigint_stops); now the interrupt
            raise KeyboardInterrupt
        if self._error is not None:
            raise self._error
        if self._final is None:
            raise RuntimeError("the Flower simulation ended without finishing its rounds (see the log above)")
        wall = time.perf_counter() - start_time
        last = recorder.records[-1].server_metrics
        return self.finish_run(recorder, self._final, wall, (last["aux_loss"], last["aux_accuracy"]),
                               extra_summary={"flower": dict(self.timings), **(extra_summary or {})})



def _legacy_dp(metrics: dict) -> dict:
    """A legacy reply's metrics with the DP history (a JSON string there) as a list."""
    import json

    value = metrics.get(DP_HISTORY_KEY)
    return {**metrics, DP_HISTORY_KEY: json.loads(value)} if isinstance(value, str) else metrics

