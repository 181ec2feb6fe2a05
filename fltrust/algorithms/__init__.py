"""The federated algorithms: what a client does locally, how the server aggregates, and privacy.

Engines run these; nothing here runs a round, samples clients or imports an engine or a metric.

- :mod:`fltrust.algorithms.strategies` -- FedAvg, FedProx, q-FedAvg, Ditto, FedMedian, Krum,
  Multi-Krum, trimmed mean, Bulyan: a selected client's local step and the server's aggregation
  (:func:`~fltrust.algorithms.strategies.build_strategy`);
- :mod:`fltrust.algorithms.aggregation` -- the aggregation rules as pure functions on lists of arrays
  (weighted average, coordinate median, q-FFL, Krum family, trimmed mean, Bulyan, update clipping);
- :mod:`fltrust.algorithms.privacy` -- differential privacy: the :class:`~fltrust.algorithms.privacy.PrivacyMechanism`
  an engine holds (none, local DP-SGD, server-side DP, NbAFL; :func:`~fltrust.algorithms.privacy.build_privacy`),
  noise calibration and the epsilon spent.

Strategies and mechanisms register by name in :mod:`fltrust.registry`; a new one is one registered
class (``docs/extending.md``).
"""
