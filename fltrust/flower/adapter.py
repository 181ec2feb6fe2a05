"""Server-side adapter: turns the rounds of any Flower strategy into RoundRecords for observers.

:class:`ObservedStrategy` wraps a Message-API strategy (``flwr.serverapp.strategy.Strategy``:
FedAvg, FedProx, FedMedian, QFedAvg, the DP wrappers, your own), :class:`ObservedLegacyStrategy`
wraps a legacy ``flwr.server.strategy.Strategy`` (``aggregate_fit`` with ``FitRes`` lists). Both
delegate every decision to the wrapped strategy and only watch:

- ``configure_train`` / ``configure_fit``: the global model sent out (theta_k);
- ``aggregate_train`` / ``aggregate_fit``: each client's model and metrics, read *before* the
  wrapped strategy aggregates (some Flower strategies consume the reply arrays), then the
  aggregated model theta_{k+1};
- server-side evaluation (Flower's ``evaluate_fn`` / legacy ``Strategy.evaluate``), called after
  every round and for round 0: its metrics become ``server_metrics`` (``aux_loss`` /
  ``aux_accuracy``; the previous round's values become ``aux_loss_before`` /
  ``aux_accuracy_before``, the FedSV reference loss), and the finished
  :class:`~fltrust.core.records.RoundRecord` goes to the sink.

A sink is anything with ``record_round(record)``: a :class:`~fltrust.runs.RunRecorder` (the
standard run folder; its observers run there) or an :class:`ObserverSink` (observers only).

Beside this module: the sinks and the round builder both wrappers share in
:mod:`fltrust.flower.sinks`, :class:`ObservedLegacyStrategy` in :mod:`fltrust.flower.legacy`, the
node -> partition-id discovery in :mod:`fltrust.flower.partitions` (their names are re-exported here).

Clients report with :class:`fltrust.flower.client.ClientReport`; the client id is the reply's
``partition-id`` metric. Replies are put in client-id order before the wrapped strategy sees them,
so that float sums do not depend on arrival order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from fltrust.core.records import Params, RoundRecord
from fltrust.flower.legacy import ObservedLegacyStrategy
from fltrust.flower.partitions import discover_partitions, partition_query_reply
from fltrust.flower.records import CLIENT_ID_KEY, CONFUSION_KEY, FLTRUST_KEY, arrays_to_params, confusion_from_metric
from fltrust.flower.sinks import AUX_ACCURACY, AUX_LOSS, ClientRow, ObserverSink, RoundBuilder, RoundSink
from fltrust.flower.validation import ClientIds, Problem, Rejection, ReportRejected, ReportSchema, RoundFacts, check_reply

log = logging.getLogger("fltrust")

__all__ = ["AUX_ACCURACY", "AUX_LOSS", "ClientRow", "ObservedLegacyStrategy", "ObservedStrategy", "ObserverSink",
           "RoundSink", "aux_evaluate_fn", "discover_partitions", "partition_query_reply"]


class _SubsetGrid(Grid):
    """A Grid that shows the wrapped strategy only the nodes fltrust sampled for this round."""

    def __init__(self, grid: Grid, node_ids: Sequence[int]) -> None:
        self._grid = grid
        self._nodes = [int(n) for n in node_ids]

    def set_run(self, run) -> None:
        self._grid.set_run(run)

    @property
    def run(self):
        return self._grid.run

    def create_message(self, *args: Any, **kwargs: Any) -> Message:
        return self._grid.create_message(*args, **kwargs)

    def get_node_ids(self) -> Iterable[int]:
        return list(self._nodes)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        return self._grid.push_messages(messages)

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return self._grid.pull_messages(message_ids)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        return self._grid.send_and_receive(messages, timeout=timeout)


class ObservedStrategy(Strategy):
    """Wraps any Message-API Flower strategy; every round becomes a RoundRecord in ``sink``.

    A client's report is its reply's MetricRecord (:meth:`fltrust.flower.client.ClientReport.finish`)
    or, when the reply carries one, its ConfigRecord ``"fltrust"`` (fltrust's own ClientApp), which
    is removed before the wrapped strategy aggregates the MetricRecord.

    Parameters
    ----------
    strategy : flwr.serverapp.strategy.Strategy
        The strategy that decides everything (sampling, aggregation).
    sink : RoundSink
        A :class:`~fltrust.runs.RunRecorder` or an :class:`ObserverSink`.
    sampler : callable, optional
        ``sampler(server_round) -> client ids``: fltrust-controlled client sampling (e.g.
        :func:`fltrust.federation.sample_clients`). The wrapped strategy then sees only those nodes
        (it must train every node it is offered, e.g. ``FedAvg(fraction_train=1.0)``). Needs the
        node -> client-id map: ``node_partitions`` or, by default, a query round at the start
        (:func:`discover_partitions`; the ClientApp must answer ``query`` messages).
    node_partitions : mapping, optional
        Node id -> client id (partition id).
    keep_extra_metrics : bool
        Keep scalar client metrics beyond the standard RoundRecord keys.
    server_metrics_fn : callable, optional
        ``fn(server_round) -> dict`` of more server metrics for rounds >= 1 (e.g. ``epsilon``).
    reply_hook : callable, optional
        ``hook(server_round, rows)`` with the round's :class:`ClientRow` list, before aggregation.
    reply_filter : callable, optional
        ``filter(server_round, replies) -> replies``: applied to the raw reply messages before
        anything else (e.g. to count and remove the error replies of injected failures,
        :mod:`fltrust.faults`); the wrapped strategy and the observers see only what it keeps.
    strict : bool
        Raise when a client reply is an error (default: log it and observe the others).
    schema : ReportSchema, optional
        Check every reply against it (:mod:`fltrust.flower.validation`): a reply that fails is
        rejected for its round -- named in the log and in ``RoundRecord.rejected``, withheld from
        the wrapped strategy and from the observers -- instead of stopping the run. Default none:
        replies are trusted (fltrust's own Flower engine, whose ClientApp is fltrust's).

    Run it with :meth:`start` (Flower's ``Strategy.start``): the ``evaluate_fn`` you pass (e.g.
    :func:`aux_evaluate_fn` on the server's auxiliary set) is wrapped so that each round is
    recorded once Flower has evaluated the aggregated model. In a hand-written loop call
    :meth:`end_round` after each aggregation instead.
    """

    report_in_metrics: ClassVar[bool] = True
    """Whether a reply without the ``"fltrust"`` ConfigRecord reports in its MetricRecord (``instrument``'s: no)."""

    def __init__(self, strategy: Strategy, sink: RoundSink, *, sampler: Callable[[int], Sequence[int]] | None = None,
                 node_partitions: Mapping[int, int] | None = None, keep_extra_metrics: bool = True,
                 server_metrics_fn: Callable[[int], Mapping[str, float]] | None = None,
                 reply_hook: Callable[[int, list[ClientRow]], None] | None = None, strict: bool = False,
                 reply_filter: Callable[[int, list[Message]], list[Message]] | None = None,
                 schema: ReportSchema | None = None) -> None:
        self.strategy = strategy
        self.schema = schema
        self.client_ids = ClientIds()
        self._names: tuple[str, ...] = ()
        self.sampler = sampler
        self.node_partitions = dict(node_partitions) if node_partitions else None
        self.reply_hook = reply_hook
        self.reply_filter = reply_filter
        self.strict = strict
        self.builder = RoundBuilder(sink, keep_extra_metrics=keep_extra_metrics, server_metrics_fn=server_metrics_fn)
        if sampler is not None and getattr(strategy, "fraction_train", 1.0) != 1.0:
            raise ValueError("with a sampler the wrapped strategy must train every node it is offered "
                             f"(fraction_train=1.0), got fraction_train={strategy.fraction_train}")

    @property
    def records(self):
        """The sink's records when it keeps them (RunRecorder, ObserverSink)."""
        return getattr(self.builder.sink, "records", None)

    def __getattr__(self, name: str) -> Any:  # e.g. arrayrecord_key, weighted_by_key of the wrapped one
        if name == "strategy":
            raise AttributeError(name)
        return getattr(self.strategy, name)

    # -- Flower's Strategy interface --------------------------------------------------------
    def summary(self) -> None:
        self.strategy.summary()

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        """Delegate (to the sampled nodes only, with a sampler) and remember theta_k.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        arrays : flwr.app.ArrayRecord
            The global model sent out (theta_k).
        config : flwr.app.ConfigRecord
            The training config, passed on.
        grid : flwr.serverapp.Grid
            The connection to the nodes; with a sampler, the wrapped strategy sees only the sampled
            ones (the first round may ask every node for its partition id first).

        Returns
        -------
        list of flwr.app.Message
            The wrapped strategy's training messages.

        Raises
        ------
        RuntimeError
            If a sampled client id has no SuperNode.
        """
        target = grid
        if self.sampler is not None:
            if self.node_partitions is None:
                self.node_partitions = discover_partitions(grid)
            by_client = {c: n for n, c in self.node_partitions.items()}
            ids = [int(c) for c in self.sampler(server_round)]
            missing = [c for c in ids if c not in by_client]
            if missing:
                raise RuntimeError(f"round {server_round}: sampled client(s) {missing} have no SuperNode "
                                   f"(known partitions: {sorted(by_client)[:10]}...)")
            target = _SubsetGrid(grid, [by_client[c] for c in ids])
        messages = list(self.strategy.configure_train(server_round, arrays, config, target))
        self._names = tuple(arrays.keys())
        self.builder.begin(server_round, arrays_to_params(arrays))
        return messages

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Read every client's model and metrics, then let the wrapped strategy aggregate.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        replies : iterable of flwr.app.Message
            The nodes' training replies. Error replies are logged and not observed (``strict``:
            raise); with a ``schema``, replies that fail it are rejected (logged, recorded in
            ``RoundRecord.rejected``, withheld from the wrapped strategy). The wrapped strategy
            gets the others in client-id order, then the errors.

        Returns
        -------
        tuple of (flwr.app.ArrayRecord or None, flwr.app.MetricRecord or None)
            The wrapped strategy's result, its arrays cast back to the global model's dtypes.

        Raises
        ------
        RuntimeError
            With ``strict``, if a reply is an error.
        ValueError
            Without a ``schema``: if a reply lacks an ArrayRecord, a MetricRecord or its ``partition-id``.
        """
        replies = list(replies)
        if self.reply_filter is not None:
            replies = list(self.reply_filter(server_round, replies))
        ok = [m for m in replies if not m.has_error()]
        failed = [m for m in replies if m.has_error()]
        if failed:
            reasons = "; ".join(f"node {m.metadata.src_node_id}: {m.error.reason}" for m in failed)
            if self.strict:
                raise RuntimeError(f"round {server_round}: {len(failed)} client(s) failed: {reasons}")
            log.warning("round %d: %d client(s) failed and are not observed: %s", server_round, len(failed), reasons)
        rejected: list[Rejection] = []
        if self.schema is None:
            rows = [self._row(m) for m in ok]
        else:
            rows, ok, rejected = self._checked_rows(server_round, self.schema, ok)
        order = np.argsort([r.client_id for r in rows], kind="stable")
        rows = [rows[i] for i in order]
        ok = [ok[i] for i in order]
        if self.reply_hook is not None:
            self.reply_hook(server_round, rows)
        arrays, metrics = self.strategy.aggregate_train(server_round, ok + failed)
        pending = self.builder.pending
        if arrays is not None and self.builder.reference is not None:
            # keep the global model's dtypes (Flower returns float64 for int buffers and in QFedAvg)
            params = arrays_to_params(arrays, like=self.builder.reference)
            arrays = ArrayRecord(dict(zip(arrays.keys(), (Array(np.ascontiguousarray(p)) for p in params))))
        if pending is not None and pending.round == server_round:
            pending.rows = rows
            pending.rejected = [r.to_json() for r in rejected]
        return arrays, metrics

    def _report(self, message: Message) -> tuple[dict[str, Any] | None, Any]:
        """The reply's report and its ArrayRecord; the ``"fltrust"`` ConfigRecord is removed from the
        reply (the wrapped strategy aggregates the MetricRecord only)."""
        content = message.content
        key = getattr(self.strategy, "arrayrecord_key", "arrays")
        record = content.array_records.get(key) or next(iter(content.array_records.values()), None)
        if FLTRUST_KEY in content.config_records:  # the report beside the metrics (fltrust's ClientApp)
            values = dict(content[FLTRUST_KEY])
            del content[FLTRUST_KEY]
            return values, record
        metric_records = list(content.metric_records.values())
        return (dict(metric_records[0]) if metric_records and self.report_in_metrics else None), record

    def _fallback_id(self, node: int) -> int | None:
        """The client id of a node whose report names none (``node_partitions``)."""
        return None if not self.node_partitions or node not in self.node_partitions else int(self.node_partitions[node])

    def _accepted(self, server_round: int, rows: list[ClientRow], checked: list) -> None:
        """Called with the round's accepted rows and their :class:`~fltrust.flower.validation.CheckedReport`."""

    def _checked_rows(self, server_round: int, schema: ReportSchema,
                      replies: list[Message]) -> tuple[list[ClientRow], list[Message], list[Rejection]]:
        """Check every reply against ``schema`` (:attr:`schema`): the accepted rows and replies, and the rejections."""
        pending = self.builder.pending
        facts = RoundFacts(self._names, list(self.builder.reference or []),
                           time.perf_counter() - pending.started if pending is not None else 0.0)
        passed, rejected = [], []
        for message in replies:
            node = int(message.metadata.src_node_id)
            values, record = self._report(message)
            try:
                report = check_reply(values, record, schema, facts)
            except ReportRejected as exc:
                rejected.append(Rejection(node, exc.client_id, tuple(exc.problems)))
                continue
            cid = report.client_id if report.client_id is not None else self._fallback_id(node)
            if cid is None:
                rejected.append(Rejection(node, None, (Problem(CLIENT_ID_KEY, (
                    f"the report names no client id and node {node} was not connected at the start; report "
                    "the node config's partition-id (client_report(..., context=context))")),)))
                continue
            passed.append((message, node, cid, report))
        verdicts = self.client_ids.admit(server_round, [(node, cid) for _, node, cid, _ in passed])
        rows, kept, checked = [], [], []
        for (message, node, cid, report), reason in zip(passed, verdicts):
            if reason is not None:
                rejected.append(Rejection(node, cid, (Problem(CLIENT_ID_KEY, reason),)))
                continue
            rows.append(ClientRow(cid, node, report.params, report.values, report.confusion))
            kept.append(message)
            checked.append(report)
        for rejection in rejected:
            log.warning("fltrust: round %d: rejected the report of %s -- not aggregated, left out of the round's "
                        "metrics", server_round, rejection.describe())
        self._accepted(server_round, rows, checked)
        return rows, kept, rejected

    def _row(self, message: Message) -> ClientRow:
        """One reply as a :class:`ClientRow`, trusted as it is (no ``schema``)."""
        has_metrics = len(message.content.metric_records) > 0
        metrics, record = self._report(message)
        if record is None or not has_metrics or metrics is None:
            raise ValueError(f"node {message.metadata.src_node_id} replied without an ArrayRecord and a MetricRecord")
        node = int(message.metadata.src_node_id)
        cid = int(metrics[CLIENT_ID_KEY]) if CLIENT_ID_KEY in metrics else self._fallback_id(node)
        if cid is None:
            raise ValueError(f"the reply of node {node} has no {CLIENT_ID_KEY!r} metric; report it with "
                             "fltrust.flower.ClientReport (or pass node_partitions)")
        params = arrays_to_params(record, like=self.builder.reference)
        confusion = confusion_from_metric(metrics[CONFUSION_KEY]) if CONFUSION_KEY in metrics else None
        return ClientRow(cid, node, params, metrics, confusion)

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> Iterable[Message]:
        return self.strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return self.strategy.aggregate_evaluate(server_round, replies)

    # -- running ----------------------------------------------------------------------------
    def end_round(self, server_round: int, arrays: ArrayRecord, metrics: Mapping[str, Any] | None = None) -> RoundRecord:
        """Record round ``server_round`` (0 = initial model) with the server-side ``metrics``.

        Parameters
        ----------
        server_round : int
            The round just finished (0 = initial model).
        arrays : flwr.app.ArrayRecord
            The round's aggregated global model (round 0: the initial one).
        metrics : mapping, optional
            Server-side evaluation metrics; ``aux_loss`` / ``aux_accuracy`` are the auxiliary-set
            values the fairness observer reads (default none).

        Returns
        -------
        RoundRecord
            What the sink returned for the round.
        """
        return self.builder.emit(server_round, arrays_to_params(arrays), metrics)

    def start(self, grid: Grid, initial_arrays: ArrayRecord, num_rounds: int = 3, timeout: float = 3600,
              train_config: ConfigRecord | None = None, evaluate_config: ConfigRecord | None = None,
              evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None] | None = None):
        """Flower's ``Strategy.start`` (same arguments and result), recording every round.

        Parameters
        ----------
        grid : flwr.serverapp.Grid
            Flower's connection to the SuperNodes.
        initial_arrays : flwr.app.ArrayRecord
            The initial global model (round 0), in ``state_dict`` order.
        num_rounds : int
            Training rounds (default 3).
        timeout : float
            Seconds to wait for the nodes' replies in each round (default 3600).
        train_config, evaluate_config : flwr.app.ConfigRecord, optional
            Sent to the nodes with every training / evaluation message (default: empty).
        evaluate_fn : callable, optional
            ``evaluate_fn(server_round, arrays) -> MetricRecord | None``, Flower's centralized
            evaluation, called for round 0 and after every round (default none); its metrics are
            the round's server metrics (return ``aux_loss`` / ``aux_accuracy``, e.g. with
            :func:`aux_evaluate_fn`).

        Returns
        -------
        flwr.serverapp.strategy.Result
            Flower's result.
        """

        def observed_evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
            result = evaluate_fn(server_round, arrays) if evaluate_fn is not None else None
            self.end_round(server_round, arrays, dict(result) if result is not None else None)
            return result

        return super().start(grid, initial_arrays, num_rounds=num_rounds, timeout=timeout, train_config=train_config,
                             evaluate_config=evaluate_config, evaluate_fn=observed_evaluate)


def aux_evaluate_fn(evaluate: Callable[[Params], tuple[float, float]]) -> Callable[[int, ArrayRecord], MetricRecord]:
    """A Flower ``evaluate_fn`` from ``evaluate(params) -> (loss, accuracy)`` on the auxiliary set.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(params: list[np.ndarray]) -> (loss: float, accuracy: float)``: the model with
        ``params`` (``state_dict`` order) on the server's auxiliary set D, the set FedSV values
        the clients' updates on (not the app's test set).

    Returns
    -------
    callable
        ``evaluate_fn(server_round, arrays) -> MetricRecord({"aux_loss": ..., "aux_accuracy": ...})``,
        the server metrics the fairness observer reads. (:func:`fltrust.flower.instrument`
        evaluates the aux set itself and needs none of this.)
    """

    def evaluate_fn(server_round: int, arrays: ArrayRecord) -> MetricRecord:
        loss, accuracy = evaluate(arrays_to_params(arrays))
        return MetricRecord({AUX_LOSS: float(loss), AUX_ACCURACY: float(accuracy)})

    return evaluate_fn
