"""Both papers' metrics on anyone's Flower app (Flower 1.42, Message API; the legacy API is adapted too).

- **Your own Flower app, in a dozen lines.** On the server
  ``strategy = instrument(FedAvg(...), model=Net(), aux=..., test=..., out_dir=..., name=...,
  dataset_name=...)`` and ``strategy.start(...)`` as Flower's; on the clients
  ``report = client_report(model, trainloader, valloader, context=context)`` before training and
  ``report.attach(content)`` on the reply. Settings: :class:`FairnessSettings`,
  :class:`TrustSettings`. See :mod:`fltrust.flower.app`.
- **Your own Flower app, piece by piece.** Wrap your strategy in :class:`ObservedStrategy` (Message API) or
  :class:`ObservedLegacyStrategy` (``flwr.server.strategy.Strategy``); each round becomes a plain
  :class:`~fltrust.core.records.RoundRecord` handed to a sink -- a :class:`~fltrust.runs.RunRecorder`
  (standard run folder) or an :class:`ObserverSink` -- whose observers compute the fairness notions
  (FedSV on a server-side auxiliary set) and FederatedTrust. On the clients, :class:`ClientReport`
  measures what the observers need (reward before training, accuracy after, confusion matrix,
  sample and batch counts) and returns it as a Flower ``MetricRecord``.

Modules: :mod:`~fltrust.flower.app` (``instrument``, ``client_report``), :mod:`~fltrust.flower.tensors`
(reading an app's data and model), :mod:`~fltrust.flower.adapter` (:class:`ObservedStrategy`),
:mod:`~fltrust.flower.legacy` (:class:`ObservedLegacyStrategy`), :mod:`~fltrust.flower.sinks` (sinks
and the round builder), :mod:`~fltrust.flower.partitions` (node -> partition id),
:mod:`~fltrust.flower.client` (:class:`ClientReport`), :mod:`~fltrust.flower.records` (Flower records
<-> fltrust values).

A ServerApp and its ClientApp also run in this process, without Ray: :func:`run_local`, on a
:class:`LocalGrid` (tests and benchmarks use it). fltrust's own experiments on Flower
(``run.engine: flower``) are an engine, built on this package: :mod:`fltrust.engines.flower`.

Importing this package checks the Flower version: anything but ``flwr`` 1.42.x is a one-line
:class:`FlowerVersionError`.
"""

from __future__ import annotations

from fltrust.flower.version import REQUIRED_FLOWER, FlowerVersionError, require_flower

FLOWER_VERSION = require_flower()
"""The installed Flower version (``flwr.__version__``, checked: 1.42.x)."""

# the imports below come after the version check, on purpose (E402)
from fltrust.flower.adapter import ObservedStrategy, aux_evaluate_fn  # noqa: E402
from fltrust.flower.app import InstrumentedStrategy, client_report, instrument  # noqa: E402
from fltrust.flower.client import ClientReport  # noqa: E402
from fltrust.flower.legacy import ObservedLegacyStrategy  # noqa: E402
from fltrust.flower.local import LocalGrid, run_local  # noqa: E402
from fltrust.flower.partitions import discover_partitions, partition_query_reply  # noqa: E402
from fltrust.flower.records import arrays_to_params, params_to_arrays  # noqa: E402
from fltrust.flower.sinks import ClientRow, ObserverSink, RoundSink  # noqa: E402
from fltrust.flower.tensors import as_tensors  # noqa: E402
from fltrust.settings import FairnessSettings, TrustSettings  # noqa: E402

__all__ = [
    "FLOWER_VERSION", "REQUIRED_FLOWER", "ClientReport", "ClientRow", "FairnessSettings", "FlowerVersionError",
    "InstrumentedStrategy", "LocalGrid", "ObservedLegacyStrategy", "ObservedStrategy", "ObserverSink", "RoundSink",
    "TrustSettings", "arrays_to_params", "as_tensors", "aux_evaluate_fn", "client_report", "discover_partitions",
    "instrument", "params_to_arrays", "partition_query_reply", "require_flower", "run_local",
]
