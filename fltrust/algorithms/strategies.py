"""FL strategies: what a selected client does locally and how the server aggregates.

The round loop lives once, in :mod:`fltrust.engines.inprocess`; a strategy fills only two steps
(the Flower ``Strategy`` template-method idea):

- ``local_update(client)``: train from the received global model; return the model to send and
  the model whose validation accuracy is the client's performance (Ditto: the personal model);
- ``aggregate(global_params, results, server_loss)``: the new global model.

``local_updates(clients, global_params, group=...)``: with a
:class:`~fltrust.engines.vectorized.ClientGroup` (the in-process engine passes one where vectorised
training applies) the round's clients train side by side as one stacked model
(``local_updates_grouped``); every built-in strategy implements it with the same seeds, batch
orders and optimiser math as its per-client ``local_update``. A subclass that overrides
``local_update`` without its own ``local_updates_grouped`` trains one client after another.

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

Byzantine-robust aggregation (:mod:`fltrust.algorithms.aggregation`, f = ``strategy.num_malicious_nodes``):
``krum`` (Blanchard et al. 2017; the update with the lowest Krum score), ``multikrum`` (weighted
mean of the ``num_nodes_to_select`` lowest scores), ``trimmedmean`` (Yin et al. 2018; ``beta`` cut
at each end of every coordinate), ``bulyan`` (El Mhamdi et al. 2018; recursive Krum selection, then
the mean of the values closest to the coordinate median).

Spec and bug references ("fairness spec §N", "trust spec §N", "Bn") are defined in ``docs/references.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


from fltrust.config import ExperimentConfig, StrategyConfig
from fltrust.core.records import Params
from fltrust.algorithms.aggregation import coordinate_median, qffl_aggregate, weighted_average
from fltrust.algorithms import aggregation as robust



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

        Parameters
        ----------
        params : Params
            The model training starts from (not modified).
        seed_offset : int
            Selects the random stream (batch order, dropout) among the client's streams of this
            round (default 0).
        private : bool
            Whether the configured client-side privacy (local DP-SGD, NbAFL's upload noise)
            applies (default True).
        **kwargs
            :meth:`fltrust.engines.training.LocalTrainer.train` keywords: ``epochs`` (required),
            ``proximal_center``, ``proximal_mu``, ``learning_rate``, ``plain_sgd``.

        Returns
        -------
        tuple of (Params, float)
            The trained model and its last-epoch mean training loss.
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

    def __init__(self, settings: StrategyConfig, *, local_epochs: int, clients_per_round: int) -> None:
        """A strategy takes its own section of the config and two training facts, not the whole config.

        Parameters
        ----------
        settings : StrategyConfig
            The ``strategy`` section (weighting, q, Ditto and robust-aggregation settings).
        local_epochs : int
            ``training.local_epochs``: epochs of local training per round.
        clients_per_round : int
            Clients sampled per round (:meth:`~fltrust.config.ExperimentConfig.clients_per_round`;
            Multi-Krum's default selection is this minus f).
        """
        self.settings = settings
        self.local_epochs = int(local_epochs)
        self.clients_per_round = int(clients_per_round)

    @classmethod
    def from_config(cls, cfg: ExperimentConfig) -> Strategy:
        """This strategy with the settings it uses from an experiment config.

        Parameters
        ----------
        cfg : ExperimentConfig

        Returns
        -------
        Strategy
        """
        return cls(cfg.strategy, local_epochs=cfg.training.local_epochs, clients_per_round=cfg.clients_per_round())

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        """One client's local work in a round (the base class: ``local_epochs`` epochs from the
        received model); subclasses change the objective or add a personal model.

        Parameters
        ----------
        client : ClientHandle
            The client being worked for (its data stays behind the handle).
        global_params : Params
            The model the client received (not modified).

        Returns
        -------
        LocalResult
            The model the client sends, its training loss, and optionally the model its
            performance is measured with and extra values for the server.
        """
        params, loss = client.train(global_params, epochs=self.local_epochs)
        return LocalResult(params, loss)

    def local_updates(self, clients: list[ClientHandle], global_params: Params, group: Any = None) -> list[LocalResult]:
        """Local updates of all of a round's clients.

        With ``group`` (a :class:`~fltrust.engines.vectorized.ClientGroup` over ``clients``) and a
        strategy whose grouped update matches its ``local_update``, all clients train side by
        side; otherwise one after another.

        Parameters
        ----------
        clients : list of ClientHandle
            The round's clients.
        global_params : Params
            The model they received.
        group : ClientGroup, optional
            The clients stacked for side-by-side training (default ``None``: one after another).

        Returns
        -------
        list of LocalResult
            One result per client, in the order of ``clients``.
        """
        if group is not None and self._grouped_matches():
            return self.local_updates_grouped(clients, global_params, group)
        return [self.local_update(client, global_params) for client in clients]

    def local_updates_grouped(self, clients: list[ClientHandle], global_params: Params, group: Any) -> list[LocalResult]:
        """``local_update`` of every client at once (plain local training); subclasses that
        override ``local_update`` override this too, or the engine trains one client after another.

        Parameters
        ----------
        clients : list of ClientHandle
            The round's clients, in the order of ``group``.
        global_params : Params
            The model they received.
        group : ClientGroup
            The clients stacked for side-by-side training.

        Returns
        -------
        list of LocalResult
            One result per client, in the order of ``clients``.
        """
        params, losses = group.train(global_params, epochs=self.local_epochs)
        return [LocalResult(p, loss) for p, loss in zip(params, losses)]

    def _grouped_matches(self) -> bool:
        """True when the class defining ``local_updates_grouped`` also defines (or inherits
        unchanged) the ``local_update`` in use, so both paths compute the same thing."""
        mro = type(self).__mro__
        owner_single = next(c for c in mro if "local_update" in c.__dict__)
        owner_grouped = next(c for c in mro if "local_updates_grouped" in c.__dict__)
        return issubclass(owner_grouped, owner_single)

    def aggregation_weights(self, results: list[ClientResult]) -> list[float]:
        """Each result's weight in a weighted mean: its ``num_batches`` when
        ``strategy.weighting`` is ``"batches"``, else its ``num_samples``."""
        key = "num_batches" if self.settings.weighting == "batches" else "num_samples"
        return [float(getattr(r, key)) for r in results]

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        """The next global model from the round's client results (the base class: their mean
        weighted by :meth:`aggregation_weights`, FedAvg); subclasses replace the rule.

        Parameters
        ----------
        global_params : Params
            The round's global model (what the clients received).
        results : list of ClientResult
            The updates that arrived.
        server_loss : float
            The loss of ``global_params`` on the server's auxiliary set (Flower's legacy q-FedAvg
            uses it for every client).

        Returns
        -------
        Params
            The new global model.
        """
        return weighted_average([r.params for r in results], self.aggregation_weights(results))

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of the strategy between rounds (``{}``: stateless)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (on resume)."""
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
            epochs=self.local_epochs,
            proximal_center=global_params,
            proximal_mu=self.settings.proximal_mu,
        )
        return LocalResult(params, loss)

    def local_updates_grouped(self, clients: list[ClientHandle], global_params: Params, group: Any) -> list[LocalResult]:
        params, losses = group.train(global_params, epochs=self.local_epochs,
                                     proximal_center=global_params, proximal_mu=self.settings.proximal_mu)
        return [LocalResult(p, loss) for p, loss in zip(params, losses)]


class QFedAvg(Strategy):
    """q-FedAvg (Li et al. 2020, q-FFL); see :func:`fltrust.algorithms.aggregation.qffl_aggregate`."""

    name = "qfedavg"

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        extra = {}
        if self.settings.qfedavg_variant == "qffl":
            extra["qffl_loss"] = client.train_loss_of(global_params)
        params, loss = client.train(global_params, epochs=self.local_epochs)
        return LocalResult(params, loss, extra=extra)

    def local_updates_grouped(self, clients: list[ClientHandle], global_params: Params, group: Any) -> list[LocalResult]:
        extras: list[dict[str, float]] = [{} for _ in clients]
        if self.settings.qfedavg_variant == "qffl":  # each client's loss of the received model
            for extra, loss in zip(extras, group.train_loss_of(global_params)):
                extra["qffl_loss"] = loss
        params, losses = group.train(global_params, epochs=self.local_epochs)
        return [LocalResult(p, loss, extra=e) for p, loss, e in zip(params, losses, extras)]

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        s = self.settings
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

    def __init__(self, settings: StrategyConfig, *, local_epochs: int, clients_per_round: int) -> None:
        super().__init__(settings, local_epochs=local_epochs, clients_per_round=clients_per_round)
        self.personal: dict[int, Params] = {}

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        s = self.settings
        params, loss = client.train(global_params, epochs=self.local_epochs)
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

    def local_updates_grouped(self, clients: list[ClientHandle], global_params: Params, group: Any) -> list[LocalResult]:
        s = self.settings
        params, losses = group.train(global_params, epochs=self.local_epochs)
        personal = [self.personal.get(c.client_id, [p.copy() for p in global_params]) for c in clients]
        if s.ditto_epochs > 0:
            anchor = params if s.ditto_anchor == "local" else global_params
            personal, _ = group.train(personal, epochs=s.ditto_epochs, proximal_center=anchor,
                                      proximal_mu=s.ditto_lambda, learning_rate=s.ditto_lr, plain_sgd=True,
                                      seed_offset=1, private=False)
        for c, v in zip(clients, personal):
            self.personal[c.client_id] = v
        return [LocalResult(p, loss, eval_params=v) for p, loss, v in zip(params, losses, personal)]

    def state_dict(self) -> dict[str, Any]:
        """The clients' personal models, ``{"personal": {str(client_id): params}}``."""
        return {"personal": {str(k): v for k, v in self.personal.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the personal models from :meth:`state_dict` (on resume)."""
        self.personal = {int(k): v for k, v in state.get("personal", {}).items()}


class FedMedian(Strategy):
    """Coordinate-wise median aggregation (Yin et al. 2018)."""

    name = "fedmedian"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return coordinate_median([r.params for r in results])


class Krum(Strategy):
    """Krum (Blanchard et al. 2017): the update with the lowest Krum score becomes the global
    model (:func:`fltrust.algorithms.aggregation.krum`; f = ``strategy.num_malicious_nodes``)."""

    name = "krum"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return robust.krum([r.params for r in results], self.settings.num_malicious_nodes)


class MultiKrum(Strategy):
    """Multi-Krum (Blanchard et al. 2017): weighted mean (``strategy.weighting``, as Flower's
    MultiKrum) of the ``num_nodes_to_select`` lowest-scoring updates (default m - f)."""

    name = "multikrum"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        s = self.settings
        k = s.num_nodes_to_select or max(1, self.clients_per_round - s.num_malicious_nodes)
        return robust.multikrum([r.params for r in results], s.num_malicious_nodes, k, self.aggregation_weights(results))


class TrimmedMean(Strategy):
    """Coordinate-wise trimmed mean (Yin et al. 2018), ``strategy.beta`` cut at each end."""

    name = "trimmedmean"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return robust.trimmed_mean([r.params for r in results], self.settings.beta)


class Bulyan(Strategy):
    """Bulyan over recursive Krum (El Mhamdi et al. 2018). A round with fewer than 4f + 3
    updates (drop-outs) keeps the global model, as Flower's Bulyan does."""

    name = "bulyan"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        f = self.settings.num_malicious_nodes
        if len(results) < 4 * f + 3:
            import logging

            logging.getLogger("fltrust").warning("Bulyan needs 4f + 3 = %d updates, got %d: the global model is kept",
                                                 4 * f + 3, len(results))
            return [p.copy() for p in global_params]
        return robust.bulyan([r.params for r in results], f)


STRATEGY_CLASSES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (FedAvg, FedProx, QFedAvg, Ditto, FedMedian, Krum, MultiKrum, TrimmedMean, Bulyan)
}


def build_strategy(cfg: ExperimentConfig) -> Strategy:
    """The strategy named by ``cfg.strategy.name``, built from the settings it uses
    (:meth:`Strategy.from_config`)."""
    return STRATEGY_CLASSES[cfg.strategy.name].from_config(cfg)
