"""Where observed Flower rounds go: the sink protocol, a sink for observers alone, and the round builder.

Both strategy wrappers (:class:`fltrust.flower.adapter.ObservedStrategy`,
:class:`fltrust.flower.legacy.ObservedLegacyStrategy`) read each client's reply as a
:class:`ClientRow`; their :class:`RoundBuilder` keeps one pending round at a time and, when the
server has evaluated the aggregated model, turns it into a :class:`~fltrust.core.records.RoundRecord`
for a :class:`RoundSink`: a :class:`~fltrust.runs.RunRecorder` (the standard run folder) or an
:class:`ObserverSink` (observers only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from fltrust.core.observers import ObserverSet, RoundObserver
from fltrust.core.records import Params, RoundRecord, RunInfo, RunSummary
from fltrust.flower.records import client_values
from fltrust.names import CLIENT_METRIC_KEYS

log = logging.getLogger("fltrust")

AUX_LOSS, AUX_ACCURACY = "aux_loss", "aux_accuracy"

__all__ = ["AUX_ACCURACY", "AUX_LOSS", "ClientRow", "ObserverSink", "RoundBuilder", "RoundSink"]


class RoundSink(Protocol):
    """Where finished rounds go (a :class:`~fltrust.runs.RunRecorder` is one)."""

    def record_round(self, record: RoundRecord) -> Any:
        """Take one finished round (its observers run here); round 0 is the initial model.

        Parameters
        ----------
        record : RoundRecord
            The round, with its client models and the global models before and after attached;
            its observers' outputs are added to ``record.observations``.

        Returns
        -------
        Any
            Whatever the sink keeps of the round (RunRecorder and ObserverSink: the stored,
            parameter-free copy).
        """


class ObserverSink:
    """A sink that feeds observers directly, without a run folder.

    Parameters
    ----------
    observers : sequence of RoundObserver
        E.g. ``fltrust.experiment.paper_observers(cfg, model, federation)``.
    info : RunInfo
        What the observers learn at the start (number of clients, class counts, ...).
    """

    def __init__(self, observers: Sequence[RoundObserver] | ObserverSet, info: RunInfo) -> None:
        self.observers = observers if isinstance(observers, ObserverSet) else ObserverSet(observers)
        self.info = info
        self.records: list[RoundRecord] = []
        self.observers.run_start(info)

    def record_round(self, record: RoundRecord) -> RoundRecord:
        """Let the observers see ``record`` (their outputs go in ``record.observations``); returns
        the kept, parameter-free copy (also appended to :attr:`records`).

        Parameters
        ----------
        record : RoundRecord
            The finished round (round 0: the initial model), parameters attached.

        Returns
        -------
        RoundRecord
            The copy kept in :attr:`records`, without model parameters.
        """
        from fltrust.runs import strip

        self.observers.round_end(record)
        stored = strip(record)
        self.records.append(stored)
        return stored

    def finish(self, final_params: Params, wall_time_s: float, system: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call the observers' ``on_run_end``; returns what they report (e.g. the trust score).

        Parameters
        ----------
        final_params : Params
            The final global model (``state_dict`` order).
        wall_time_s : float
            The run's duration in seconds.
        system : dict, optional
            System figures for the summary (model size, traffic, ...; default none).

        Returns
        -------
        dict of str to Any
            What each observer's ``on_run_end`` returned, by observer name.
        """
        return self.observers.run_end(RunSummary(self.info, self.records, final_params, wall_time_s, system or {}))


@dataclass
class ClientRow:
    """One client's reply, as the adapter reads it."""

    client_id: int
    node_id: int
    params: Params
    metrics: dict[str, Any]
    confusion: np.ndarray | None = None


@dataclass
class _Pending:
    round: int
    before: Params | None
    rows: list[ClientRow] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)


class RoundBuilder:
    """State shared by both wrappers: one pending round at a time, emitted at evaluation.

    Parameters
    ----------
    sink : RoundSink
        Where each finished round goes.
    keep_extra_metrics : bool
        Keep scalar client metrics beyond the standard RoundRecord keys.
    server_metrics_fn : callable or None
        ``fn(server_round) -> dict`` of more server metrics for rounds >= 1.
    """

    def __init__(self, sink: RoundSink, *, keep_extra_metrics: bool,
                 server_metrics_fn: Callable[[int], Mapping[str, float]] | None) -> None:
        self.sink = sink
        self.keep_extra = keep_extra_metrics
        self.server_metrics_fn = server_metrics_fn
        self.pending: _Pending | None = None
        self.previous: dict[str, float] = {}
        self.reference: Params | None = None  # dtypes/shapes of the global model
        self.round_seconds: dict[int, float] = {}
        self.last_record: RoundRecord | None = None
        self.warned_fallback = False

    @property
    def final_params(self) -> Params | None:
        """The global model after the last recorded round (``None`` before the first)."""
        return None if self.last_record is None else self.last_record.global_params_after

    def begin(self, server_round: int, global_params: Params) -> None:
        """Open round ``server_round``, whose clients received ``global_params`` (theta_k).

        Parameters
        ----------
        server_round : int
            The round, from 1.
        global_params : Params
            The global model sent out; the first one also fixes the dtypes and shapes replies
            are cast to (:attr:`reference`).
        """
        self.reference = self.reference or [np.asarray(p) for p in global_params]
        self.pending = _Pending(server_round, global_params)

    def emit(self, server_round: int, params: Params, metrics: Mapping[str, Any] | None) -> RoundRecord:
        """Finish round ``server_round`` with its aggregated model and server metrics; hand it to the sink.

        Parameters
        ----------
        server_round : int
            The round just evaluated (0 = initial model: a record without clients).
        params : Params
            The global model after the round.
        metrics : mapping or None
            The server-side evaluation's metrics (``aux_loss`` / ``aux_accuracy``; a bare
            ``loss`` / ``accuracy`` is taken for them, with a warning).

        Returns
        -------
        RoundRecord
            The record handed to the sink (with the client rows of the pending round, if any).
        """
        server = {k: float(v) for k, v in (metrics or {}).items() if not isinstance(v, (list, str, bytes))}
        for name, fallback in ((AUX_LOSS, "loss"), (AUX_ACCURACY, "accuracy")):
            if name not in server and fallback in server:
                server[name] = server[fallback]
                if not self.warned_fallback:
                    self.warned_fallback = True
                    log.warning("fltrust: the evaluate_fn returned %r but no %r: taking it as the loss on the server's "
                                "auxiliary set D (FedSV's reference); return %r from an evaluate_fn on D "
                                "(fltrust.flower.aux_evaluate_fn), or use fltrust.flower.instrument, which evaluates "
                                "D itself", fallback, name, name)
        pending = self.pending if self.pending is not None and self.pending.round == server_round else None
        if server_round == 0 or pending is None:
            record = RoundRecord(round=server_round, client_ids=np.zeros(0, dtype=np.int64), server_metrics=server,
                                 global_params_after=params)
            if server_round > 0:
                log.warning("round %d ended without a training round the adapter saw", server_round)
        else:
            server.update({f"{name}_before": value for name, value in self.previous.items()})  # aux loss / accuracy
            if self.server_metrics_fn is not None:
                server.update({k: float(v) for k, v in self.server_metrics_fn(server_round).items()})
            record = self._record(pending, params, server)
            self.round_seconds[server_round] = time.perf_counter() - pending.started
        self.previous = {k: server[k] for k in (AUX_LOSS, AUX_ACCURACY) if k in server}
        self.pending = None
        self.last_record = record
        self.sink.record_round(record)
        return record

    def _record(self, pending: _Pending, params: Params, server: dict[str, float]) -> RoundRecord:
        rows = pending.rows
        values = [client_values(r.metrics, keep_extra=self.keep_extra) for r in rows]
        keys: list[str] = [k for k in CLIENT_METRIC_KEYS if values and all(k in v for v in values)]
        keys += sorted({k for v in values for k in v} - set(keys)) if self.keep_extra else []
        metrics = {k: np.asarray([v.get(k, np.nan) for v in values], dtype=float) for k in keys}
        confusion = np.stack([r.confusion for r in rows]) if rows and all(r.confusion is not None for r in rows) else None
        return RoundRecord(
            round=pending.round, client_ids=np.asarray([r.client_id for r in rows], dtype=np.int64),
            client_metrics=metrics, client_confusion=confusion, server_metrics=server,
            client_params=[r.params for r in rows], global_params_before=pending.before, global_params_after=params,
            rejected=list(pending.rejected),
        )
