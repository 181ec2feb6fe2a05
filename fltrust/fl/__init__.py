"""The in-process engine: federated rounds on one machine, with plain numpy / torch state.

:func:`fltrust.experiment.run_experiment` drives it; the Flower engine (:mod:`fltrust.flower`)
reuses its client, aggregation rules and privacy bookkeeping. Engines never import metrics: the fairness
and trust observers receive the engine-neutral records of :mod:`fltrust.core.records`.

- :mod:`fltrust.fl.engine` -- :class:`~fltrust.fl.engine.Engine`, the one round loop for every
  strategy (sampling, local training, aggregation, evaluation, observers, checkpoints);
- :mod:`fltrust.fl.strategies` -- what a selected client does and how the server aggregates:
  FedAvg, FedProx, q-FedAvg, Ditto, FedMedian, Krum, Multi-Krum, trimmed mean, Bulyan
  (:func:`~fltrust.fl.strategies.build_strategy`);
- :mod:`fltrust.fl.aggregation` -- the aggregation rules as pure functions on lists of arrays
  (weighted average, coordinate median, q-FFL, Krum family, trimmed mean, Bulyan, update clipping);
- :mod:`fltrust.fl.training` -- local training on one client (optimisers, proximal terms, local DP-SGD);
- :mod:`fltrust.fl.vectorized` -- the sampled clients of a round trained side by side as one stacked
  model (same batch order and per-sample means as :mod:`~fltrust.fl.training`, less per-step overhead);
  its parts: :mod:`fltrust.fl.schedule` (every client's mini-batches per stacked step),
  :mod:`fltrust.fl.stacked_optimizer` (Adam / SGD on the stacked parameters) and
  :mod:`fltrust.fl.batched_evaluation` (per-client evaluations batched across the round's clients);
- :mod:`fltrust.fl.privacy` -- differential privacy: noise calibration, the epsilon spent, server-side
  DP and NbAFL.
"""
