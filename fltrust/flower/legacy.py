"""Observing a legacy Flower strategy (``flwr.server.strategy.Strategy``, ``aggregate_fit`` with ``FitRes`` lists).

:class:`ObservedLegacyStrategy` is :class:`fltrust.flower.adapter.ObservedStrategy`'s counterpart
for the legacy API (the Flower engine's SecAgg+ runs use it): it reads the client models and fit
metrics before the wrapped strategy aggregates, and records the round when the legacy server
evaluates the global model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server.strategy import Strategy as LegacyStrategy

from fltrust.algorithms.aggregation import cast_like
from fltrust.flower.records import CLIENT_ID_KEY, CONFUSION_KEY, confusion_from_metric
from fltrust.flower.sinks import AUX_LOSS, ClientRow, RoundBuilder, RoundSink

log = logging.getLogger("fltrust")

__all__ = ["ObservedLegacyStrategy"]


class ObservedLegacyStrategy(LegacyStrategy):
    """Wraps a legacy ``flwr.server.strategy.Strategy`` (``aggregate_fit`` with ``FitRes`` lists).

    Same idea as :class:`~fltrust.flower.adapter.ObservedStrategy`: the client models and metrics
    are read from the ``FitRes`` list before the wrapped ``aggregate_fit``; the round is recorded
    when the legacy server calls ``evaluate(server_round, parameters)`` (round 0 and after every round), whose
    ``(loss, metrics)`` become ``aux_loss`` and the other server metrics. Clients report with
    :meth:`~fltrust.flower.client.ClientReport.finish_legacy` (``partition-id`` in the fit metrics).
    """

    def __init__(self, strategy: LegacyStrategy, sink: RoundSink, *, keep_extra_metrics: bool = True,
                 server_metrics_fn: Callable[[int], Mapping[str, float]] | None = None) -> None:
        self.strategy = strategy
        self.builder = RoundBuilder(sink, keep_extra_metrics=keep_extra_metrics, server_metrics_fn=server_metrics_fn)

    def __repr__(self) -> str:
        return f"ObservedLegacyStrategy({self.strategy!r})"

    @property
    def records(self):
        return getattr(self.builder.sink, "records", None)

    def initialize_parameters(self, client_manager):
        return self.strategy.initialize_parameters(client_manager)

    def configure_fit(self, server_round, parameters, client_manager):
        """Delegate, and remember the global model sent out (theta_k).

        Parameters
        ----------
        server_round : int
            The round, from 1.
        parameters : flwr.common.Parameters
            The global model.
        client_manager : flwr.server.client_manager.ClientManager
            Passed on.

        Returns
        -------
        list of tuple of (ClientProxy, FitIns)
            The wrapped strategy's instructions.
        """
        instructions = self.strategy.configure_fit(server_round, parameters, client_manager)
        self.builder.begin(server_round, [np.array(a, copy=True) for a in parameters_to_ndarrays(parameters)])
        return instructions

    def aggregate_fit(self, server_round, results, failures):
        """Read every client's model and fit metrics, then let the wrapped strategy aggregate.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        results : list of tuple of (ClientProxy, FitRes)
            The clients' results; the client id is the ``partition-id`` fit metric (else the
            proxy's ``cid``). The wrapped strategy gets them in client-id order.
        failures : list
            Failed clients (logged, not observed), passed on.

        Returns
        -------
        tuple of (flwr.common.Parameters or None, dict)
            The wrapped strategy's result, its arrays cast back to the global model's dtypes.
        """
        rows = []
        for proxy, res in results:
            metrics = dict(res.metrics or {})
            metrics.setdefault("num-examples", res.num_examples)
            cid = int(metrics[CLIENT_ID_KEY]) if CLIENT_ID_KEY in metrics else int(proxy.cid)
            params = [np.array(a, copy=True) for a in parameters_to_ndarrays(res.parameters)]
            confusion = confusion_from_metric(metrics[CONFUSION_KEY]) if CONFUSION_KEY in metrics else None
            rows.append(ClientRow(cid, int(proxy.node_id) if hasattr(proxy, "node_id") else cid, params, metrics, confusion))
        order = np.argsort([r.client_id for r in rows], kind="stable")
        rows, results = [rows[i] for i in order], [results[i] for i in order]
        if failures:
            log.warning("round %d: %d client(s) failed and are not observed", server_round, len(failures))
        parameters, metrics = self.strategy.aggregate_fit(server_round, results, failures)
        if parameters is not None and self.builder.reference is not None:
            params = [cast_like(p, ref) for p, ref in zip(parameters_to_ndarrays(parameters), self.builder.reference)]
            parameters = ndarrays_to_parameters(params)
        pending = self.builder.pending
        if pending is not None and pending.round == server_round:
            pending.rows = rows
        return parameters, metrics

    def configure_evaluate(self, server_round, parameters, client_manager):
        return self.strategy.configure_evaluate(server_round, parameters, client_manager)

    def aggregate_evaluate(self, server_round, results, failures):
        return self.strategy.aggregate_evaluate(server_round, results, failures)

    def evaluate(self, server_round, parameters):
        """Delegate the server-side evaluation, then record the round.

        Parameters
        ----------
        server_round : int
            The round just finished (0 = initial model).
        parameters : flwr.common.Parameters
            The global model.

        Returns
        -------
        tuple of (float, dict) or None
            The wrapped strategy's ``(loss, metrics)``; the loss is recorded as ``aux_loss``, the
            metrics (e.g. ``aux_accuracy``) as further server metrics.
        """
        result = self.strategy.evaluate(server_round, parameters)
        metrics: dict[str, Any] = {} if result is None else {**dict(result[1] or {}), AUX_LOSS: float(result[0])}
        self.builder.emit(server_round, [np.array(a, copy=True) for a in parameters_to_ndarrays(parameters)], metrics)
        return result
