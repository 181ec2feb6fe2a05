"""Flower integration: both papers' metrics for any Flower app, and fltrust experiments on Flower.

Two ways in (Flower 1.42, Message API; the legacy ``flwr.server.strategy`` API is adapted too):

- **Your own Flower app.** Wrap your strategy in :class:`ObservedStrategy` (Message API) or
  :class:`ObservedLegacyStrategy` (``flwr.server.strategy.Strategy``); each round becomes a plain
  :class:`~fltrust.core.records.RoundRecord` handed to a sink -- a :class:`~fltrust.runs.RunRecorder`
  (standard run folder) or an :class:`ObserverSink` -- whose observers compute the fairness notions
  (FedSV on a server-side auxiliary set) and FederatedTrust. On the clients, :class:`ClientReport`
  measures what the observers need (reward before training, accuracy after, confusion matrix,
  sample and batch counts) and returns it as a Flower ``MetricRecord``.
- **An fltrust experiment.** ``run.engine: flower`` runs the configured experiment as a Flower
  ServerApp + ClientApp on Flower's Simulation Runtime (Ray backend):
  :class:`fltrust.flower.engine.FlowerEngine`, itself built on the two pieces above.

Importing this package checks the Flower version: anything but ``flwr`` 1.42.x is a one-line
:class:`FlowerVersionError`.
"""

from __future__ import annotations

from fltrust.flower.version import REQUIRED_FLOWER, FlowerVersionError, require_flower

FLOWER_VERSION = require_flower()

from fltrust.flower.adapter import (  # noqa: E402  (after the version check, on purpose)
    ClientRow,
    ObservedLegacyStrategy,
    ObservedStrategy,
    ObserverSink,
    RoundSink,
    aux_evaluate_fn,
    discover_partitions,
)
from fltrust.flower.client import ClientReport  # noqa: E402
from fltrust.flower.records import arrays_to_params, params_to_arrays  # noqa: E402
from fltrust.flower.strategies import Ditto, QFedAvg, build_flower_strategy  # noqa: E402


def __getattr__(name: str):
    if name == "FlowerEngine":  # lazy: the engine pulls in Ray only when it is used
        from fltrust.flower.engine import FlowerEngine

        return FlowerEngine
    raise AttributeError(f"module 'fltrust.flower' has no attribute {name!r}")


__all__ = [
    "FLOWER_VERSION", "REQUIRED_FLOWER", "ClientReport", "ClientRow", "Ditto", "FlowerEngine",
    "FlowerVersionError", "ObservedLegacyStrategy", "ObservedStrategy", "ObserverSink", "QFedAvg",
    "RoundSink", "arrays_to_params", "aux_evaluate_fn", "build_flower_strategy", "discover_partitions",
    "params_to_arrays", "require_flower",
]
