"""``run.engine: flower``: an fltrust experiment as a Flower ServerApp + ClientApp.

- :mod:`~fltrust.engines.flower.engine` -- :class:`~fltrust.engines.flower.engine.FlowerEngine`, the
  ServerApp (built on :class:`fltrust.flower.ObservedStrategy`, the same adapter anyone's Flower app uses);
- :mod:`~fltrust.engines.flower.client_app` -- the ClientApp, which trains a
  :class:`fltrust.engines.client.SimulatedClient`;
- :mod:`~fltrust.engines.flower.strategies` -- the Flower strategies of fltrust's configs (Flower's
  own where they compute what the papers ran; Ditto and Flower 1.7's legacy q-FedAvg as Message-API
  strategies);
- :mod:`~fltrust.engines.flower.simulation` -- Flower's Simulation Runtime on Ray: start, logs,
  resources, stop.

Its modules import :mod:`fltrust.flower`, which checks the Flower version first.
"""
