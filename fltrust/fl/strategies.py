"""FL strategies: what a selected client does locally and how the server aggregates.

The round loop lives once, in :mod:`fltrust.fl.engine`; a strategy fills only two steps
(the Flower ``Strategy`` template-method idea):

- ``local_update(client)``: train from the received global model; return the model to send and
  the model whose validation accuracy is the client's performance (Ditto: the personal model);
- ``aggregate(global_params, results, server_loss)``: the new global model.

=============  ===========================================================================
strategy       reference
=============  ===========================================================================
``fedavg``     McMahan et al. 2017; weights = samples or mini-batches (``strategy.weighting``)
``fedprox``    Li et al. 2020 (MLSys); local loss + mu/2 ||w - theta||^2, FedAvg aggregation
``qfedavg``    Li et al. 2020 (ICLR, q-FFL); ``qfedavg_variant`` "flower_legacy" (central loss,
               as the fairness authors ran) or "qffl" (each client's own loss)
``ditto``      Li et al. 2021; personal models kept per client across rounds (server-side
               store, as the fairness authors did); FedAvg aggregation of the global track
``fedmedian``  Yin et al. 2018; coordinate-wise median
=============  ===========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


from fltrust.config import ExperimentConfig
from fltrust.core.records import Params
from fltrust.fl.aggregation import coordinate_median, qffl_aggregate, weighted_average



class ClientHandle(Protocol):
    """What a strategy may do with the client it is working for (built by the engine)."""

    client_id: int
    num_samples: int
    num_batches: int
    round: int

    def train(self, params: Params, *, seed_offset: int = 0, private: bool = True, **kwargs: Any) -> tuple[Params, float]:
        """Train on the client's data (``LocalTrainer.train`` keywords).

        Local DP-SGD applies when configured and ``private`` (models that leave the client);
        ``seed_offset`` separates the random streams of two trainings in one round.
        """

    def train_loss_of(self, params: Params) -> float:
        """Loss of ``params`` on the client's training data (q-FFL's F_n(theta))."""


@dataclass
class LocalResult:
    """What ``local_update`` returns."""

    params: Params
    train_loss: float
    eval_params: Params | None = None  # defaults to ``params``
    extra: dict[str, float] = field(default_factory=dict)


@dataclass
class ClientResult:
    """A client's contribution as the server sees it."""

    client_id: int
    params: Params
    num_samples: int
    num_batches: int
    extra: dict[str, float] = field(default_factory=dict)


class Strategy:
    """Base class: plain local training, FedAvg aggregation."""

    name = "base"

    def __init__(self, cfg: ExperimentConfig) -> None:
        self.cfg = cfg

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        params, loss = client.train(global_params, epochs=self.cfg.training.local_epochs)
        return LocalResult(params, loss)

    def local_updates(self, clients: list[ClientHandle], global_params: Params) -> list[LocalResult]:
        """Local updates of all of a round's clients (one after another by default)."""
        return [self.local_update(client, global_params) for client in clients]

    def aggregation_weights(self, results: list[ClientResult]) -> list[float]:
        key = "num_batches" if self.cfg.strategy.weighting == "batches" else "num_samples"
        return [float(getattr(r, key)) for r in results]

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return weighted_average([r.params for r in results], self.aggregation_weights(results))

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class FedAvg(Strategy):
    """Federated averaging (McMahan et al. 2017)."""

    name = "fedavg"


class FedProx(Strategy):
    """FedProx: proximal local objective (Li et al. 2020), FedAvg aggregation."""

    name = "fedprox"

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        params, loss = client.train(
            global_params,
            epochs=self.cfg.training.local_epochs,
            proximal_center=global_params,
            proximal_mu=self.cfg.strategy.proximal_mu,
        )
        return LocalResult(params, loss)


class QFedAvg(Strategy):
    """q-FedAvg (Li et al. 2020, q-FFL); see :func:`fltrust.fl.aggregation.qffl_aggregate`."""

    name = "qfedavg"

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        extra = {}
        if self.cfg.strategy.qfedavg_variant == "qffl":
            extra["qffl_loss"] = client.train_loss_of(global_params)
        params, loss = client.train(global_params, epochs=self.cfg.training.local_epochs)
        return LocalResult(params, loss, extra=extra)

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        s = self.cfg.strategy
        if s.qfedavg_variant == "flower_legacy":
            losses = [server_loss] * len(results)
        else:
            losses = [r.extra["qffl_loss"] for r in results]
        return qffl_aggregate(global_params, [r.params for r in results], losses, q=s.q, learning_rate=s.qffl_learning_rate)


class Ditto(Strategy):
    """Ditto (Li et al. 2021) as the fairness authors ran it (fairness spec 5.3).

    Global track: ``local_epochs`` epochs from the received model -> w_n, sent to the server.
    Personal track: the client's stored personal model v_n (initialised to the global model at the
    client's first selection) takes ``ditto_epochs`` epochs of plain SGD on
    ``loss(v) + lambda/2 ||v - anchor||^2``, i.e. ``v <- v - eta (grad + lambda (v - anchor))``,
    with anchor = w_n (``ditto_anchor="local"``, the authors' code) or the received global model
    (``"global"``, the Ditto paper). The client's performance is measured with v_n.
    """

    name = "ditto"

    def __init__(self, cfg: ExperimentConfig) -> None:
        super().__init__(cfg)
        self.personal: dict[int, Params] = {}

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        s = self.cfg.strategy
        params, loss = client.train(global_params, epochs=self.cfg.training.local_epochs)
        personal = self.personal.get(client.client_id, [p.copy() for p in global_params])
        anchor = params if s.ditto_anchor == "local" else global_params
        if s.ditto_epochs > 0:
            personal, _ = client.train(
                personal,
                epochs=s.ditto_epochs,
                proximal_center=anchor,
                proximal_mu=s.ditto_lambda,
                learning_rate=s.ditto_lr,
                plain_sgd=True,
                seed_offset=1,
                private=False,  # the personal model never leaves the client
            )
        self.personal[client.client_id] = personal
        return LocalResult(params, loss, eval_params=personal)

    def state_dict(self) -> dict[str, Any]:
        return {"personal": {str(k): v for k, v in self.personal.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.personal = {int(k): v for k, v in state.get("personal", {}).items()}


class FedMedian(Strategy):
    """Coordinate-wise median aggregation (Yin et al. 2018)."""

    name = "fedmedian"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return coordinate_median([r.params for r in results])


STRATEGY_CLASSES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (FedAvg, FedProx, QFedAvg, Ditto, FedMedian)
}


def build_strategy(cfg: ExperimentConfig) -> Strategy:
    """The strategy named by ``cfg.strategy.name``."""
    return STRATEGY_CLASSES[cfg.strategy.name](cfg)
