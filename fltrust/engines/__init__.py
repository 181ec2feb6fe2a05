"""The engines: they run an experiment's rounds and hand engine-neutral records to the observers.

:func:`fltrust.experiment.run_experiment` builds an engine by ``run.engine``. Engines never import
metrics: the fairness and trust observers receive the records of :mod:`fltrust.core.records`.

- :mod:`fltrust.engines.base` -- :class:`~fltrust.engines.base.EngineBase`, what both engines share
  (set-up, seeded sampling, aux evaluation, epsilon accounting, the run folder's start and summary);
- :mod:`fltrust.engines.client` -- :class:`~fltrust.engines.client.SimulatedClient`, one client's
  data, seeds, privacy and local training, trained by both engines;
- :mod:`fltrust.engines.inprocess` -- :class:`~fltrust.engines.inprocess.Engine` (``run.engine:
  inprocess``), fltrust's own round loop for every strategy;
- :mod:`fltrust.engines.training` -- local training on one client (optimisers, proximal terms,
  local DP-SGD);
- :mod:`fltrust.engines.vectorized` -- the sampled clients of a round trained side by side as one
  stacked model, with :mod:`~fltrust.engines.schedule` (every client's mini-batches per stacked step),
  :mod:`~fltrust.engines.stacked_optimizer` (Adam / SGD on the stacked parameters) and
  :mod:`~fltrust.engines.batched_evaluation` (per-client evaluations batched across clients);
- :mod:`fltrust.engines.flower` -- ``run.engine: flower``: the same experiment as a Flower ServerApp
  and ClientApp on Flower's Simulation Runtime (Ray).

:func:`engine_class` maps a ``run.engine`` name to its class (imported on use: the Flower engine
needs Flower).
"""

from __future__ import annotations

from fltrust.config import ConfigError
from fltrust.names import ENGINES


def engine_class(name: str) -> type:
    """The engine class of ``run.engine`` -- the one place an engine name is read.

    Parameters
    ----------
    name : str
        ``run.engine``.

    Returns
    -------
    type
        :class:`fltrust.engines.inprocess.Engine` or :class:`fltrust.engines.flower.engine.FlowerEngine`.

    Raises
    ------
    ConfigError
        For a name that is not an engine.
    """
    if name == "inprocess":
        from fltrust.engines.inprocess import Engine

        return Engine
    if name == "flower":
        from fltrust.engines.flower.engine import FlowerEngine

        return FlowerEngine
    raise ConfigError(f"run.engine={name!r}; choose one of {list(ENGINES)}")
