"""The federated algorithms: what a client does locally, how the server aggregates, and privacy.

Engines run these; nothing here runs a round, samples clients or imports an engine or a metric.

- :mod:`fltrust.algorithms.strategies` -- FedAvg, FedProx, q-FedAvg, Ditto, FedMedian, Krum,
  Multi-Krum, trimmed mean, Bulyan: a selected client's local step and the server's aggregation
  (:func:`~fltrust.algorithms.strategies.build_strategy`);
- :mod:`fltrust.algorithms.aggregation` -- the aggregation rules as pure functions on lists of arrays
  (weighted average, coordinate median, q-FFL, Krum family, trimmed mean, Bulyan, update clipping);
- :mod:`fltrust.algorithms.privacy` -- differential privacy: noise calibration, the epsilon spent,
  server-side DP and NbAFL.
"""
