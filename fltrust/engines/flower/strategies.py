"""Message-API strategies for the papers' algorithms, and the Flower strategy of each fltrust strategy.

Flower's own strategies are used where they compute what the papers ran; :data:`FLOWER_STRATEGIES`
maps each fltrust strategy class (:mod:`fltrust.algorithms.strategies`) to the builder of its
Flower counterpart, which takes the in-process strategy's typed parameters:

===============  ======================================================================================
``strategy``     Flower strategy used by ``run.engine: flower``
===============  ======================================================================================
``fedavg``       ``flwr.serverapp.strategy.FedAvg`` (weights ``num-batches`` or ``num-examples``)
``fedprox``      ``flwr.serverapp.strategy.FedProx`` (sends ``proximal-mu``; the client adds the term)
``fedmedian``    ``flwr.serverapp.strategy.FedMedian``
``krum``         ``flwr.serverapp.strategy.Krum(num_malicious_nodes=f)``
``multikrum``    ``flwr.serverapp.strategy.MultiKrum(num_malicious_nodes, num_nodes_to_select)``
``trimmedmean``  ``flwr.serverapp.strategy.FedTrimmedAvg(beta)``
``bulyan``       ``flwr.serverapp.strategy.Bulyan(num_malicious_nodes, selection_rule=`` the paper's
                 recursive Krum, :func:`fltrust.algorithms.aggregation.krum_selection_rule` ``)``
``qfedavg``      :class:`QFedAvg` below: ``qffl`` = Flower's Message-API ``QFedAvg`` (each client's
                 loss F_n(theta_k), sent as ``qffl_loss``; it computes exactly
                 :func:`fltrust.algorithms.aggregation.qffl_aggregate`, up to float32 rounding: max
                 difference 4e-9 on the NSL-KDD MLP), ``flower_legacy`` = Flower 1.7's legacy
                 ``QFedAvg``: one central loss L(theta_k; D) on the server's auxiliary set for
                 every client (as the fairness authors ran it)
``ditto``        :class:`Ditto` below (Flower has no Ditto)
server DP        ``DifferentialPrivacyServerSideFixedClipping`` around the strategy (a mechanism with
                 :attr:`~fltrust.algorithms.privacy.PrivacyMechanism.central_noise`); clients weigh
                 equally (``unit-weight``), as :func:`fltrust.algorithms.privacy.server_dp_aggregate` does
===============  ======================================================================================

Sampling is fltrust's (seeded, :func:`fltrust.federation.sample_clients`), applied by
:class:`~fltrust.flower.adapter.ObservedStrategy`; the strategies here therefore train every node
they are offered (``fraction_train=1.0``) and never evaluate on clients (``fraction_evaluate=0``:
the server evaluates on its auxiliary set).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.common import FitIns
from flwr.server.strategy import FedAvg as LegacyFedAvg
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, Key
from flwr.serverapp import Grid
from flwr.serverapp.strategy import (
    Bulyan,
    DifferentialPrivacyServerSideFixedClipping,
    FedAvg,
    FedMedian,
    FedProx,
    FedTrimmedAvg,
    Krum,
    MultiKrum,
)
from flwr.serverapp.strategy import QFedAvg as FlowerQFedAvg

from fltrust.algorithms import strategies as fl
from fltrust.algorithms.aggregation import krum_selection_rule, qffl_aggregate
from fltrust.algorithms.privacy import CentralNoise
from fltrust.config import ConfigError
from fltrust.flower.records import arrays_to_params, params_to_arrays
from fltrust.names import PERSONAL_STORES, QFEDAVG_VARIANTS, PersonalStore, QFedAvgVariant, SecureAggregation

log = logging.getLogger("fltrust")

PERSONAL_KEY = "personal"
"""RecordDict key of a Ditto personal model (in messages, or in ``context.state``)."""
DITTO_STORE_KEY = "ditto-personal"
"""ConfigRecord key telling the client where its personal model lives: ``server`` or ``client``."""
UNIT_WEIGHT_KEY = "unit-weight"
QFFL_LOSS_KEY = "qffl_loss"


def mean_scalar_metrics(records: list[RecordDict], weighted_by_key: str) -> MetricRecord:
    """Weighted mean of the scalar metrics of the replies (lists such as confusion matrices skipped).

    Flower's default also averages list metrics and fails on lists of different lengths; fltrust
    reads every client's own values through the adapter, so this summary is only for Flower's log.

    Parameters
    ----------
    records : list of flwr.app.RecordDict
        The replies' contents; the first MetricRecord of each is read, and the keys averaged are
        the int/float keys of the first reply.
    weighted_by_key : str
        The metric holding each reply's weight (e.g. ``num-examples``); all weights zero: equal
        weights.

    Returns
    -------
    flwr.app.MetricRecord
        The weighted means, without ``weighted_by_key`` itself.
    """
    rows = [next(iter(r.metric_records.values())) for r in records]
    weights = np.asarray([float(m[weighted_by_key]) for m in rows])
    weights = weights / weights.sum() if weights.sum() > 0 else np.full(len(rows), 1 / max(1, len(rows)))
    keys = [k for k, v in rows[0].items() if k != weighted_by_key and isinstance(v, (int, float))]
    return MetricRecord({k: float(sum(w * float(m[k]) for w, m in zip(weights, rows))) for k in keys})


class Ditto(FedAvg):
    """Ditto (Li et al. 2021) on the Message API: FedAvg of the global track + personal models.

    The ClientApp trains the received global model (sent back, aggregated as FedAvg) and its
    personal model ``v_n`` (kept, never aggregated; the client's performance is measured with it).
    Where ``v_n`` lives between rounds (``personal_store``):

    - ``"server"`` (default): the server keeps each client's personal model and sends it with the
      training message (``RecordDict`` key ``personal``); the client returns the updated one. This
      is what the fairness authors did (a server-side dict), so a run reproduces theirs and the
      in-process engine exactly.
    - ``"client"``: the personal model stays on the SuperNode in ``context.state`` -- Flower's
      per-node state, the native place when clients are real devices; nothing personal travels.

    A client selected for the first time starts its personal model from the received global model.
    Other arguments are FedAvg's.
    """

    def __init__(self, *args, personal_store: PersonalStore = "server", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if personal_store not in PERSONAL_STORES:
            raise ValueError(f"personal_store={personal_store!r}; choose one of {list(PERSONAL_STORES)}")
        self.personal_store = personal_store
        self.personal: dict[int, ArrayRecord] = {}  # node id -> personal model (server store)

    def summary(self) -> None:
        log.debug("Ditto: personal models stored on the %s", self.personal_store)
        super().summary()

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        """FedAvg's messages, each with the node's own personal model (server store).

        Parameters
        ----------
        server_round : int
            The round, from 1.
        arrays : flwr.app.ArrayRecord
            The global model sent out.
        config : flwr.app.ConfigRecord
            The training config; ``ditto-personal`` (where the personal model lives) is added.
        grid : flwr.serverapp.Grid
            The connection to the nodes.

        Returns
        -------
        list of flwr.app.Message
            One training message per node FedAvg selected; with the server store, a node that
            has a personal model gets it under ``personal``.
        """
        config[DITTO_STORE_KEY] = self.personal_store
        messages = list(super().configure_train(server_round, arrays, config, grid))
        if self.personal_store == "client":
            return messages
        out = []
        for message in messages:
            node = int(message.metadata.dst_node_id)
            content = RecordDict({self.arrayrecord_key: arrays, self.configrecord_key: config})
            if node in self.personal:
                content[PERSONAL_KEY] = self.personal[node]
            out.append(Message(content=content, message_type=MessageType.TRAIN, dst_node_id=node))
        return out

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Keep the returned personal models, then FedAvg the global track.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        replies : iterable of flwr.app.Message
            The nodes' training replies; a ``personal`` ArrayRecord is
            kept (server store) and removed before FedAvg sees the reply.

        Returns
        -------
        tuple of (flwr.app.ArrayRecord or None, flwr.app.MetricRecord or None)
            The aggregated model and the replies' summarised metrics; ``(None, None)`` when no
            valid reply arrived.
        """
        replies = list(replies)
        for reply in replies:
            if not reply.has_error() and PERSONAL_KEY in reply.content.array_records:
                self.personal[int(reply.metadata.src_node_id)] = cast(ArrayRecord, reply.content.array_records[PERSONAL_KEY])
                del reply.content[PERSONAL_KEY]
        return super().aggregate_train(server_round, replies)


class QFedAvg(FlowerQFedAvg):
    """q-FedAvg with fltrust's two loss variants (``strategy.qfedavg_variant``).

    ``variant="qffl"``: Flower 1.42's Message-API ``QFedAvg`` unchanged -- the loss of client n is
    its own F_n(theta_k), read from ``train_loss_key`` (fltrust's ClientApp sends it as
    ``qffl_loss``: the received model's loss on the client's training data, before training). Its
    update equals :func:`fltrust.algorithms.aggregation.qffl_aggregate` up to float32 rounding. (Flower
    multiplies the arrays in place, which fails for integer buffers; for models that have them,
    this class uses ``qffl_aggregate`` instead.)

    ``variant="flower_legacy"``: Flower 1.7's legacy ``QFedAvg``, which the fairness authors ran:
    one central loss L(theta_k; D) -- ``central_loss(server_round, arrays)``, the received model
    on the server's auxiliary set -- for every client, aggregated with ``qffl_aggregate``.
    """

    def __init__(self, client_learning_rate: float, q: float = 0.1, *, variant: QFedAvgVariant = "qffl",
                 central_loss: Callable[[int, ArrayRecord], float] | None = None, **kwargs) -> None:
        kwargs.setdefault("train_loss_key", QFFL_LOSS_KEY)
        super().__init__(client_learning_rate, q, **kwargs)
        if variant not in QFEDAVG_VARIANTS:
            raise ValueError(f"variant={variant!r}; choose one of {list(QFEDAVG_VARIANTS)}")
        if variant == "flower_legacy" and central_loss is None:
            raise ValueError("variant='flower_legacy' needs central_loss(server_round, arrays) -> float")
        self.variant = variant
        self.central_loss = central_loss

    def summary(self) -> None:
        log.debug("q-FedAvg variant %s", self.variant)
        super().summary()

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Flower's q-FedAvg (``qffl``) or the central-loss legacy update (``flower_legacy``).

        Parameters
        ----------
        server_round : int
            The round, from 1.
        replies : iterable of flwr.app.Message
            The nodes' training replies.

        Returns
        -------
        tuple of (flwr.app.ArrayRecord or None, flwr.app.MetricRecord or None)
            The aggregated model and the replies' summarised metrics; ``(None, None)`` when no
            valid reply arrived.

        Raises
        ------
        RuntimeError
            If called before :meth:`configure_train` (on the ``qffl_aggregate`` path).
        """
        replies = list(replies)
        current = self.current_arrays
        integer = current is not None and any(np.issubdtype(a.numpy().dtype, np.integer) for a in current.values())
        if self.variant == "qffl" and not integer:
            return super().aggregate_train(server_round, replies)
        valid, _ = self._check_and_log_replies(replies, is_train=True)
        if not valid:
            return None, None
        if current is None:
            raise RuntimeError("QFedAvg.aggregate_train called before configure_train")
        global_params = arrays_to_params(current)
        client_params = [arrays_to_params(next(iter(m.content.array_records.values()))) for m in valid]
        if self.variant == "flower_legacy":  # one central loss for every client
            losses = [float(cast(Callable, self.central_loss)(server_round, current))] * len(valid)
        else:
            losses = [float(next(iter(m.content.metric_records.values()))[self.train_loss_key]) for m in valid]
        new = qffl_aggregate(global_params, client_params, losses, q=self.q, learning_rate=self.client_learning_rate)
        metrics = self.train_metrics_aggr_fn([m.content for m in valid], self.weighted_by_key)
        return params_to_arrays(new, list(current.keys())), metrics


class SeededServerSideFixedClipping(DifferentialPrivacyServerSideFixedClipping):
    """Flower's server-side fixed-clipping DP wrapper with a reproducible noise draw.

    Flower draws the Gaussian noise from NumPy's global generator; this subclass seeds it with
    ``(seed, round)`` for the aggregation and restores its state afterwards, so a run is
    deterministic. (The in-process engine draws from its own generator: DP runs are reproducible
    per engine, not equal across engines.)
    """

    def __init__(self, *args, seed: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seed = int(seed)

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Clip, aggregate and add noise (Flower's code) under a seeded global NumPy generator.

        Parameters
        ----------
        server_round : int
            The round, from 1; with the wrapper's ``seed`` it seeds the noise.
        replies : iterable of flwr.app.Message
            The nodes' training replies.

        Returns
        -------
        tuple of (flwr.app.ArrayRecord or None, flwr.app.MetricRecord or None)
            The aggregated model and the replies' summarised metrics; ``(None, None)`` when no
            valid reply arrived.
        """
        state = np.random.get_state()
        np.random.seed(np.random.SeedSequence([self.seed, server_round, 13]).generate_state(4))
        try:
            return super().aggregate_train(server_round, replies)
        finally:
            np.random.set_state(state)


@dataclass(frozen=True)
class FlowerRound:
    """What every Flower builder receives beside the in-process strategy.

    Attributes
    ----------
    common : dict
        The keyword arguments every Flower strategy of a run takes (fltrust samples, so they
        train every node offered, evaluate on none; ``weighted_by_key``).
    central_loss : callable or None
        ``central_loss(round, arrays)`` for q-FedAvg's ``flower_legacy`` variant.
    personal_store : {"server", "client"}
        Where Ditto keeps personal models (:class:`Ditto`).
    """

    common: dict[str, Any]
    central_loss: Callable[[int, ArrayRecord], float] | None
    personal_store: PersonalStore


@dataclass(frozen=True)
class FlowerCounterpart:
    """The Flower side of one fltrust strategy class.

    Attributes
    ----------
    build : callable
        ``build(strategy, setting: FlowerRound) -> flwr.serverapp.strategy.Strategy``.
    secure_aggregation : bool
        Whether SecAgg+ can run it: its aggregate is the weighted sum of the updates, which is all
        SecAgg+ reveals (``privacy.secure_aggregation: secagg+``).
    """

    build: Callable[[Any, FlowerRound], Any]
    secure_aggregation: bool = False


FLOWER_STRATEGIES: dict[type[fl.Strategy], FlowerCounterpart] = {
    fl.FedAvg: FlowerCounterpart(lambda s, r: FedAvg(**r.common), secure_aggregation=True),
    fl.FedProx: FlowerCounterpart(lambda s, r: FedProx(**r.common, proximal_mu=s.proximal_mu), secure_aggregation=True),
    fl.FedMedian: FlowerCounterpart(lambda s, r: FedMedian(**r.common)),
    fl.Krum: FlowerCounterpart(lambda s, r: Krum(**r.common, num_malicious_nodes=s.num_malicious_nodes)),
    fl.MultiKrum: FlowerCounterpart(lambda s, r: MultiKrum(**r.common, num_malicious_nodes=s.num_malicious_nodes,
                                                           num_nodes_to_select=s.num_nodes_to_select)),
    fl.TrimmedMean: FlowerCounterpart(lambda s, r: FedTrimmedAvg(**r.common, beta=s.beta)),
    # Flower's Bulyan with the paper's recursive Krum selection (Flower's default selection is
    # one-shot Multi-Krum; see fltrust.algorithms.aggregation), so both engines compute the same
    fl.Bulyan: FlowerCounterpart(lambda s, r: Bulyan(**r.common, num_malicious_nodes=s.num_malicious_nodes,
                                                     selection_rule=krum_selection_rule)),
    fl.QFedAvg: FlowerCounterpart(lambda s, r: QFedAvg(s.qffl_learning_rate, s.q, variant=s.qfedavg_variant,
                                                       central_loss=r.central_loss, **r.common)),
    fl.Ditto: FlowerCounterpart(lambda s, r: Ditto(**r.common, personal_store=r.personal_store)),
}
"""fltrust strategy class -> its Flower counterpart (the exact class: a subclass that changes the
rule needs its own entry). A strategy without one runs in the in-process engine only."""


def flower_counterpart(strategy: type[fl.Strategy]) -> FlowerCounterpart:
    """The Flower counterpart of a strategy class, or one line saying there is none.

    Parameters
    ----------
    strategy : type
        An fltrust strategy class.

    Returns
    -------
    FlowerCounterpart

    Raises
    ------
    ConfigError
        If :data:`FLOWER_STRATEGIES` has no entry for it.
    """
    try:
        return FLOWER_STRATEGIES[strategy]
    except KeyError:
        raise ConfigError(f"strategy.name={strategy.name!r} has no Flower counterpart "
                          "(fltrust.engines.flower.strategies.FLOWER_STRATEGIES); set run.engine=inprocess") from None


def check_secure_aggregation(strategy: type[fl.Strategy], secure_aggregation: SecureAggregation | None) -> None:
    """Raise :class:`~fltrust.config.ConfigError` when SecAgg+ is asked for a strategy it cannot run.

    Parameters
    ----------
    strategy : type
        An fltrust strategy class.
    secure_aggregation : str or None
        ``privacy.secure_aggregation``.
    """
    if secure_aggregation != "secagg+" or flower_counterpart(strategy).secure_aggregation:
        return
    able = " or ".join(cls.name for cls, c in FLOWER_STRATEGIES.items() if c.secure_aggregation)
    raise ConfigError(f"privacy.secure_aggregation='secagg+' reveals only the weighted sum of the updates; "
                      f"strategy.name={strategy.name!r} needs the individual updates: use {able}")


def build_flower_strategy(strategy: fl.Strategy, *, clients_per_round: int, seed: int,
                          central_noise: CentralNoise | None = None,
                          central_loss: Callable[[int, ArrayRecord], float] | None = None,
                          ditto_personal_store: PersonalStore = "server"):
    """The Flower strategy that runs ``strategy`` (see the module docstring).

    Parameters
    ----------
    strategy : fltrust.algorithms.strategies.Strategy
        The run's (in-process) strategy: its class selects the builder, its attributes are the
        Flower strategy's parameters.
    clients_per_round : int
        m, the clients sampled per round.
    seed : int
        The run seed (seeds the server-side DP noise).
    central_noise : CentralNoise, optional
        Server-side clipping and noise of the run's privacy mechanism
        (:attr:`~fltrust.algorithms.privacy.PrivacyMechanism.central_noise`).
    central_loss : callable, optional
        ``central_loss(round, arrays)`` for q-FedAvg's ``flower_legacy`` variant.
    ditto_personal_store : str
        Where Ditto keeps personal models (:class:`Ditto`; default ``"server"``; under server-side
        DP always ``"client"``).

    Returns
    -------
    flwr.serverapp.strategy.Strategy
        Trains every node it is offered and never evaluates on clients; wrapped in
        :class:`SeededServerSideFixedClipping` under server-side DP.

    Raises
    ------
    ConfigError
        If the strategy has no Flower counterpart.
    """
    m = int(clients_per_round)
    weight = "num-batches" if strategy.weighting == "batches" else "num-examples"
    weight = UNIT_WEIGHT_KEY if central_noise is not None else weight
    common = dict(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=m, min_evaluate_nodes=0,
                  min_available_nodes=m, weighted_by_key=weight, train_metrics_aggr_fn=mean_scalar_metrics)
    # Flower's DP wrapper clips every ArrayRecord of a reply, so under server-side DP the
    # personal models stay on the clients (context.state); the results are the same
    store = "client" if central_noise is not None else ditto_personal_store
    built = flower_counterpart(type(strategy)).build(strategy, FlowerRound(common, central_loss, store))
    if central_noise is not None:
        built = SeededServerSideFixedClipping(built, central_noise.noise_multiplier, central_noise.clipping_norm, m,
                                              seed=seed)
    return built


# -- SecAgg+ (privacy.secure_aggregation: secagg+) --------------------------------------------------
# Flower 1.42 ships SecAgg+ for the workflow API only: ``flwr.server.workflow.SecAggPlusWorkflow``
# inside a ``DefaultWorkflow`` driving a legacy ``flwr.server.strategy`` strategy through a
# ``LegacyContext``, and ``flwr.client.mod.secaggplus_mod`` on the ClientApp (whose train
# handler then speaks the legacy FitIns/FitRes records). The Message-API strategies have no
# SecAgg+ counterpart, so a secagg+ run uses the classes below.
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS as SECAGG_CONFIG_KEY  # noqa: E402 - with its section


def secagg_when_asked(msg: Message, context, call_next):
    """ClientApp mod: Flower's ``secaggplus_mod`` for SecAgg+ protocol messages, a pass-through
    for every other message (so one ClientApp serves plain and secagg+ runs).

    Parameters
    ----------
    msg : flwr.app.Message
        The incoming message; a SecAgg+ one carries the protocol's ConfigRecord.
    context : flwr.app.Context
        The ClientApp's context.
    call_next : callable
        The next handler, ``call_next(msg, context) -> Message``.

    Returns
    -------
    flwr.app.Message
        The reply.
    """
    if SECAGG_CONFIG_KEY in msg.content.config_records:
        from flwr.client.mod import secaggplus_mod

        return secaggplus_mod(msg, context, call_next)
    return call_next(msg, context)


class SampledLegacyFedAvg(LegacyFedAvg):
    """Flower's legacy ``FedAvg`` (what ``SecAggPlusWorkflow`` drives) with fltrust's seeded sampling.

    Parameters
    ----------
    sampler : callable
        ``sampler(server_round) -> client ids`` (:func:`fltrust.federation.sample_clients`).
    node_partitions : mapping
        Node id -> client id (:func:`fltrust.flower.adapter.discover_partitions`).
    fit_metrics_hook : callable, optional
        ``hook(server_round, [metrics of each result])`` before aggregation.
    Other keywords are the legacy ``FedAvg``'s (``evaluate_fn``, ``initial_parameters``, ...).
    """

    def __init__(self, *, sampler: Callable[[int], Iterable[int]], node_partitions: dict[int, int],
                 fit_metrics_hook: Callable[[int, list[dict]], None] | None = None, **kwargs) -> None:
        kwargs.setdefault("fraction_evaluate", 0.0)
        kwargs.setdefault("min_evaluate_clients", 0)
        super().__init__(**kwargs)
        self.sampler = sampler
        self.node_partitions = dict(node_partitions)
        self.fit_metrics_hook = fit_metrics_hook

    def configure_fit(self, server_round, parameters, client_manager):
        """The sampled clients' nodes, each with ``{"server-round": k}``.

        Parameters
        ----------
        server_round : int
            The round k, from 1 (seeds the sampler).
        parameters : flwr.common.Parameters
            The global model sent to each sampled node.
        client_manager : flwr.server.client_manager.ClientManager
            The connected nodes.

        Returns
        -------
        list of tuple of (ClientProxy, FitIns)
            One per sampled client, in the sampler's order.

        Raises
        ------
        RuntimeError
            If a sampled client has no connected SuperNode.
        """
        by_client = {c: n for n, c in self.node_partitions.items()}
        proxies = {int(p.node_id): p for p in client_manager.all().values()}
        fit_ins = FitIns(parameters, {"server-round": int(server_round)})
        ids = [int(c) for c in self.sampler(server_round)]
        missing = [c for c in ids if c not in by_client or by_client[c] not in proxies]
        if missing:
            raise RuntimeError(f"round {server_round}: sampled client(s) {missing} have no connected SuperNode")
        return [(proxies[by_client[c]], fit_ins) for c in ids]

    def aggregate_fit(self, server_round, results, failures):
        """Hand the fit metrics to ``fit_metrics_hook``, then the legacy FedAvg.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        results : list of tuple of (ClientProxy, FitRes)
            The clients' results.
        failures : list
            Failed clients, passed on.

        Returns
        -------
        tuple of (flwr.common.Parameters or None, dict)
            The legacy FedAvg's result.
        """
        if self.fit_metrics_hook is not None:
            self.fit_metrics_hook(server_round, [dict(res.metrics or {}) for _, res in results])
        return super().aggregate_fit(server_round, results, failures)


class ObservedSecAggPlusWorkflow(SecAggPlusWorkflow):
    """Flower's ``SecAggPlusWorkflow`` that reports, per round, the error replies of the masked-
    vector stage (``on_errors(round, reasons)``: drop-outs, failures, time-outs) and whether the
    unmasking produced an aggregate (``on_done(round, ok)``).

    (Flower 1.42 appends each error of that stage twice to its failure list; errors are counted
    once per reply here.)
    """

    def __init__(self, *args, on_errors: Callable[[int, list[str]], None], on_done: Callable[[int, bool], None],
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.on_errors = on_errors
        self.on_done = on_done

    @staticmethod
    def _round(context) -> int:
        return int(context.state.config_records[MAIN_CONFIGS_RECORD][Key.CURRENT_ROUND])

    def __call__(self, grid: Grid, context) -> None:
        self.on_done(self._round(context), False)
        super().__call__(grid, context)

    def collect_masked_vectors_stage(self, grid: Grid, context, state) -> bool:
        """Flower's stage, then ``on_errors(round, reasons)`` with one reason per error reply.

        Parameters
        ----------
        grid : flwr.serverapp.Grid
            The connection to the nodes.
        context : flwr.server.LegacyContext
            The workflow's context (its config holds the current round).
        state : WorkflowState
            The SecAgg+ protocol state Flower passes between the stages.

        Returns
        -------
        bool
            Whether the stage succeeded (Flower's result, unchanged).
        """
        ok = super().collect_masked_vectors_stage(grid, context, state)
        errors = {id(e.args[0]): e.args[0] for e in state.failures if e.args}
        self.on_errors(self._round(context), [str(getattr(err, "reason", err)) for err in errors.values()])
        return ok

    def unmask_stage(self, grid: Grid, context, state) -> bool:
        """Flower's stage, then ``on_done(round, ok)`` with whether it produced an aggregate.

        Parameters
        ----------
        grid : flwr.serverapp.Grid
            The connection to the nodes.
        context : flwr.server.LegacyContext
            The workflow's context (its config holds the current round).
        state : WorkflowState
            The SecAgg+ protocol state Flower passes between the stages.

        Returns
        -------
        bool
            Whether the stage succeeded (Flower's result, unchanged).
        """
        ok = super().unmask_stage(grid, context, state)
        self.on_done(self._round(context), bool(ok))
        return ok
