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

**Adding a strategy.** A strategy is one class: a subclass of :class:`Strategy` with a ``name``,
registered with ``@registry.STRATEGIES.register`` (:data:`fltrust.registry.STRATEGIES`), whose
constructor takes the parameters it uses as keyword arguments. :func:`build_strategy` binds each
keyword to the run fact of that name (``local_epochs``, ``clients_per_round``), else to
``strategy.options[<name>]``, else to the ``strategy`` field of that name, else leaves its default; ``strategy.name:
<name>`` then selects it in a YAML file (``docs/extending.md``, "A new aggregation strategy").
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Protocol

from fltrust import registry
from fltrust.algorithms import aggregation as robust
from fltrust.algorithms.aggregation import coordinate_median, qffl_aggregate, weighted_average
from fltrust.config import ConfigError, StrategyConfig
from fltrust.core.records import Params
from fltrust.names import DITTO_ANCHORS, QFEDAVG_VARIANTS, WEIGHTINGS, DittoAnchor, QFedAvgVariant, Weighting

log = logging.getLogger("fltrust")


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
    """Base class: plain local training, FedAvg aggregation.

    Parameters
    ----------
    local_epochs : int
        Epochs of local training per round (``training.local_epochs``).
    weighting : {"samples", "batches"}
        The weights of the mean (:meth:`aggregation_weights`).

    Attributes
    ----------
    name : str
        ``strategy.name``; a subclass registers under it (``@registry.STRATEGIES.register``).
    local_proximal_term : bool
        Whether the training that leaves the client adds a proximal term of its own (FedProx),
        which client-side privacy mechanisms that bring their own local objective refuse.
    personalized : bool
        Whether each client's performance is measured with a personal model (Ditto; the
        FactSheet's ``configuration/personalization``).
    """

    name: ClassVar[str] = "base"
    local_proximal_term: ClassVar[bool] = False
    personalized: ClassVar[bool] = False

    def __init__(self, *, local_epochs: int = 1, weighting: Weighting = "samples") -> None:
        if weighting not in WEIGHTINGS:
            raise ConfigError(f"strategy.weighting={weighting!r} is not allowed; choose one of {list(WEIGHTINGS)}")
        self.local_epochs = int(local_epochs)
        self.weighting = weighting

    @classmethod
    def aggregates_by_mean(cls) -> bool:
        """Whether the aggregation is the base class's weighted mean (what server-side DP and
        secure aggregation can replace or wrap): true unless the class overrides :meth:`aggregate`."""
        return cls.aggregate is Strategy.aggregate

    @classmethod
    def max_malicious_nodes(cls, clients_per_round: int) -> int | None:
        """The largest f the rule tolerates among ``clients_per_round`` updates (``None``: the
        rule takes no f); ``fltrust.experiment.defence_comparison`` caps its default f by it.

        Parameters
        ----------
        clients_per_round : int

        Returns
        -------
        int or None
        """
        return None

    def check(self, *, clients_per_round: int) -> None:
        """Raise :class:`~fltrust.config.ConfigError` when the rule's preconditions fail for rounds
        of ``clients_per_round`` updates (the base class has none).

        Parameters
        ----------
        clients_per_round : int
            m, the clients sampled per round.
        """
        return None

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
        params, loss = client.train(global_params, epochs=self.local_epochs, **self.local_objective(global_params))
        return LocalResult(params, loss)

    def local_objective(self, global_params: Params) -> dict[str, Any]:
        """Further ``train`` keywords of the local objective (the base class: none; FedProx: its
        proximal term around ``global_params``), for :meth:`local_update` and its grouped form."""
        return {}

    def local_updates(self, clients: Sequence[ClientHandle], global_params: Params, group: Any = None) -> list[LocalResult]:
        """Local updates of all of a round's clients.

        With ``group`` (a :class:`~fltrust.engines.vectorized.ClientGroup` over ``clients``) and a
        strategy whose grouped update matches its ``local_update``, all clients train side by
        side; otherwise one after another.

        Parameters
        ----------
        clients : sequence of ClientHandle
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

    def local_updates_grouped(self, clients: Sequence[ClientHandle], global_params: Params, group: Any) -> list[LocalResult]:
        """``local_update`` of every client at once (plain local training); subclasses that
        override ``local_update`` override this too, or the engine trains one client after another.

        Parameters
        ----------
        clients : sequence of ClientHandle
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
        params, losses = group.train(global_params, epochs=self.local_epochs, **self.local_objective(global_params))
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
        key = "num_batches" if self.weighting == "batches" else "num_samples"
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


@registry.STRATEGIES.register
class FedAvg(Strategy):
    """Federated averaging (McMahan et al. 2017)."""

    name = "fedavg"


@registry.STRATEGIES.register
class FedProx(Strategy):
    """FedProx: proximal local objective (Li et al. 2020), FedAvg aggregation.

    Parameters
    ----------
    proximal_mu : float
        mu of the local term ``mu/2 ||w - theta||^2``.
    local_epochs, weighting
        As :class:`Strategy`.
    """

    name = "fedprox"
    local_proximal_term = True

    def __init__(self, *, proximal_mu: float = 0.01, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.proximal_mu = float(proximal_mu)

    def local_objective(self, global_params: Params) -> dict[str, Any]:
        return {"proximal_center": global_params, "proximal_mu": self.proximal_mu}


@registry.STRATEGIES.register
class QFedAvg(Strategy):
    """q-FedAvg (Li et al. 2020, q-FFL); see :func:`fltrust.algorithms.aggregation.qffl_aggregate`.

    Parameters
    ----------
    q : float
        The fairness exponent.
    qffl_learning_rate : float
        The step 1/L.
    qfedavg_variant : {"flower_legacy", "qffl"}
        One central loss for every client (Flower 1.7's legacy q-FedAvg) or each client's own loss.
    local_epochs, weighting
        As :class:`Strategy`.
    """

    name = "qfedavg"

    def __init__(self, *, q: float = 0.2, qffl_learning_rate: float = 0.1,
                 qfedavg_variant: QFedAvgVariant = "flower_legacy", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if qfedavg_variant not in QFEDAVG_VARIANTS:
            raise ConfigError(f"strategy.qfedavg_variant={qfedavg_variant!r} is not allowed; "
                              f"choose one of {list(QFEDAVG_VARIANTS)}")
        self.q = float(q)
        self.qffl_learning_rate = float(qffl_learning_rate)
        self.qfedavg_variant = qfedavg_variant

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        extra = {"qffl_loss": client.train_loss_of(global_params)} if self.qfedavg_variant == "qffl" else {}
        params, loss = client.train(global_params, epochs=self.local_epochs)
        return LocalResult(params, loss, extra=extra)

    def local_updates_grouped(self, clients: Sequence[ClientHandle], global_params: Params, group: Any) -> list[LocalResult]:
        # with qffl, each client's loss of the received model
        extras: list[dict[str, float]] = ([{"qffl_loss": loss} for loss in group.train_loss_of(global_params)]
                                          if self.qfedavg_variant == "qffl" else [{} for _ in clients])
        params, losses = group.train(global_params, epochs=self.local_epochs)
        return [LocalResult(p, loss, extra=e) for p, loss, e in zip(params, losses, extras)]

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        legacy = self.qfedavg_variant == "flower_legacy"  # one central loss for every client
        losses = [server_loss] * len(results) if legacy else [r.extra["qffl_loss"] for r in results]
        return qffl_aggregate(global_params, [r.params for r in results], losses, q=self.q,
                              learning_rate=self.qffl_learning_rate)


@registry.STRATEGIES.register
class Ditto(Strategy):
    """Ditto (Li et al. 2021) as the fairness authors ran it (fairness spec 5.3, docs/references.md#fairness-5-3).

    Global track: ``local_epochs`` epochs from the received model -> w_n, sent to the server.
    Personal track: the client's stored personal model v_n (initialised to the global model at the
    client's first selection) takes ``ditto_epochs`` epochs of plain SGD on
    ``loss(v) + lambda/2 ||v - anchor||^2``, i.e. ``v <- v - eta (grad + lambda (v - anchor))``,
    with anchor = w_n (``ditto_anchor="local"``, the authors' code) or the received global model
    (``"global"``, the Ditto paper). The client's performance is measured with v_n.

    Parameters
    ----------
    ditto_lambda, ditto_lr : float
        lambda of the personal objective and the personal learning rate eta.
    ditto_epochs : int
        Personal epochs per round (0: the personal model stays as initialised).
    ditto_anchor : {"local", "global"}
        The proximal anchor of the personal update.
    local_epochs, weighting
        As :class:`Strategy`.
    """

    name = "ditto"
    personalized = True

    def __init__(self, *, ditto_lambda: float = 0.8, ditto_lr: float = 0.01, ditto_epochs: int = 10,
                 ditto_anchor: DittoAnchor = "local", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if ditto_anchor not in DITTO_ANCHORS:
            raise ConfigError(f"strategy.ditto_anchor={ditto_anchor!r} is not allowed; choose one of {list(DITTO_ANCHORS)}")
        self.ditto_lambda = float(ditto_lambda)
        self.ditto_lr = float(ditto_lr)
        self.ditto_epochs = int(ditto_epochs)
        self.ditto_anchor = ditto_anchor
        self.personal: dict[int, Params] = {}

    def local_update(self, client: ClientHandle, global_params: Params) -> LocalResult:
        params, loss = client.train(global_params, epochs=self.local_epochs)
        personal = self.personal.get(client.client_id, [p.copy() for p in global_params])
        if self.ditto_epochs > 0:  # private=False: the personal model never leaves the client
            personal, _ = client.train(personal, **self._personal_kwargs(params, global_params), private=False)
        self.personal[client.client_id] = personal
        return LocalResult(params, loss, eval_params=personal)

    def local_updates_grouped(self, clients: Sequence[ClientHandle], global_params: Params, group: Any) -> list[LocalResult]:
        params, losses = group.train(global_params, epochs=self.local_epochs)
        personal = [self.personal.get(c.client_id, [p.copy() for p in global_params]) for c in clients]
        if self.ditto_epochs > 0:
            personal, _ = group.train(personal, **self._personal_kwargs(params, global_params), private=False)
        self.personal.update({c.client_id: v for c, v in zip(clients, personal)})
        return [LocalResult(p, loss, eval_params=v) for p, loss, v in zip(params, losses, personal)]

    def _personal_kwargs(self, local: Any, global_params: Params) -> dict[str, Any]:
        """The personal track's training keywords: plain SGD on stream 1, proximal to the anchor
        (``local``, the client's trained w_n, or the received global model)."""
        anchor = local if self.ditto_anchor == "local" else global_params
        return dict(epochs=self.ditto_epochs, proximal_center=anchor, proximal_mu=self.ditto_lambda,
                    learning_rate=self.ditto_lr, plain_sgd=True, seed_offset=1)

    def state_dict(self) -> dict[str, Any]:
        """The clients' personal models, ``{"personal": {str(client_id): params}}``."""
        return {"personal": {str(k): v for k, v in self.personal.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the personal models from :meth:`state_dict` (on resume)."""
        self.personal = {int(k): v for k, v in state.get("personal", {}).items()}


@registry.STRATEGIES.register
class FedMedian(Strategy):
    """Coordinate-wise median aggregation (Yin et al. 2018)."""

    name = "fedmedian"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return coordinate_median([r.params for r in results])


@registry.STRATEGIES.register
class Krum(Strategy):
    """Krum (Blanchard et al. 2017): the update with the lowest Krum score becomes the global
    model (:func:`fltrust.algorithms.aggregation.krum`).

    Parameters
    ----------
    num_malicious_nodes : int
        f, the Byzantine updates the rule assumes among a round's updates (needs m >= 2f + 3).
    local_epochs, weighting
        As :class:`Strategy`.
    """

    name = "krum"
    f_factor: ClassVar[int] = 2  # the rule needs clients_per_round >= f_factor * f + 3 (f_source)
    f_source: ClassVar[str] = "Blanchard et al. 2017"

    def __init__(self, *, num_malicious_nodes: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.num_malicious_nodes = int(num_malicious_nodes)

    @classmethod
    def max_malicious_nodes(cls, clients_per_round: int) -> int | None:
        return max(0, (clients_per_round - 3) // cls.f_factor)

    def check(self, *, clients_per_round: int) -> None:
        f, k = self.num_malicious_nodes, self.f_factor
        if clients_per_round < k * f + 3:
            raise ConfigError(f"strategy.name={self.name!r} with num_malicious_nodes={f} needs clients_per_round >= "
                              f"{k}f + 3 = {k * f + 3} ({self.f_source}), got {clients_per_round}")

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return robust.krum([r.params for r in results], self.num_malicious_nodes)


@registry.STRATEGIES.register
class MultiKrum(Krum):
    """Multi-Krum (Blanchard et al. 2017): weighted mean (``weighting``, as Flower's MultiKrum) of
    the ``num_nodes_to_select`` lowest-scoring updates.

    Parameters
    ----------
    num_malicious_nodes : int
        f, as :class:`Krum`.
    num_nodes_to_select : int or None
        The updates averaged; ``None``: ``clients_per_round - f`` (Blanchard et al.'s m = n - f), at least 1.
    clients_per_round : int
        m, the clients sampled per round.
    local_epochs, weighting
        As :class:`Strategy`.
    """

    name = "multikrum"

    def __init__(self, *, num_malicious_nodes: int = 0, num_nodes_to_select: int | None = None,
                 clients_per_round: int, **kwargs: Any) -> None:
        super().__init__(num_malicious_nodes=num_malicious_nodes, **kwargs)
        self.requested_nodes_to_select = num_nodes_to_select
        self.num_nodes_to_select = int(num_nodes_to_select or max(1, clients_per_round - self.num_malicious_nodes))

    def check(self, *, clients_per_round: int) -> None:
        super().check(clients_per_round=clients_per_round)
        k = self.requested_nodes_to_select
        if k is not None and k > clients_per_round:
            raise ConfigError(f"strategy.num_nodes_to_select={k} exceeds clients_per_round={clients_per_round}")

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return robust.multikrum([r.params for r in results], self.num_malicious_nodes, self.num_nodes_to_select,
                                self.aggregation_weights(results))


@registry.STRATEGIES.register
class TrimmedMean(Strategy):
    """Coordinate-wise trimmed mean (Yin et al. 2018).

    Parameters
    ----------
    beta : float
        The fraction cut at each end of every coordinate, in [0, 0.5).
    local_epochs, weighting
        As :class:`Strategy`.
    """

    name = "trimmedmean"

    def __init__(self, *, beta: float = 0.2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta = float(beta)

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        return robust.trimmed_mean([r.params for r in results], self.beta)


@registry.STRATEGIES.register
class Bulyan(Krum):
    """Bulyan over recursive Krum (El Mhamdi et al. 2018). A round with fewer than 4f + 3
    updates (drop-outs) keeps the global model, as Flower's Bulyan does.

    Parameters
    ----------
    num_malicious_nodes : int
        f (needs m >= 4f + 3).
    local_epochs, weighting
        As :class:`Strategy`.
    """

    name = "bulyan"
    f_factor = 4
    f_source = "El Mhamdi et al. 2018"

    def aggregate(self, global_params: Params, results: list[ClientResult], server_loss: float) -> Params:
        f = self.num_malicious_nodes
        if len(results) < 4 * f + 3:
            log.warning("Bulyan needs 4f + 3 = %d updates, got %d: the global model is kept", 4 * f + 3, len(results))
            return [p.copy() for p in global_params]
        return robust.bulyan([r.params for r in results], f)


_FACTS = ("local_epochs", "clients_per_round")


def _keywords(cls: type) -> dict[str, inspect.Parameter]:
    """The keyword parameters ``cls(...)`` takes: its constructor's, and -- while a constructor
    passes ``**kwargs`` on -- those of the constructors above it."""
    out: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        if "__init__" not in klass.__dict__ or klass is object:
            continue
        passes_on = False
        for name, p in inspect.signature(klass.__dict__["__init__"]).parameters.items():
            if p.kind is p.VAR_KEYWORD:
                passes_on = True
            elif name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
                out.setdefault(name, p)
        if not passes_on:
            break
    return out


def strategy_class(name: str) -> type[Strategy]:
    """The strategy class registered under ``strategy.name`` -- the one place a strategy name is read.

    Parameters
    ----------
    name : str
        A registered ``strategy.name``.

    Returns
    -------
    type of Strategy

    Raises
    ------
    ConfigError
        If no strategy is registered under ``name``.

    Examples
    --------
    >>> strategy_class("ditto").personalized, strategy_class("fedavg").personalized
    (True, False)
    """
    try:
        return registry.STRATEGIES[name]
    except KeyError as exc:
        raise ConfigError(exc.args[0]) from None


def build_strategy(settings: StrategyConfig, *, local_epochs: int, clients_per_round: int) -> Strategy:
    """The strategy named by ``settings.name``, built with the keyword arguments its constructor takes.

    Each keyword of the class's constructor gets, in this order: the run fact of that name
    (``local_epochs``, ``clients_per_round`` -- the resolved m); ``settings.options[<keyword>]``;
    the ``strategy`` field of that name (``num_malicious_nodes``, ``beta``, ...); or its default.
    Then the rule's preconditions are checked (:meth:`Strategy.check`).

    Parameters
    ----------
    settings : StrategyConfig
        The ``strategy`` section.
    local_epochs : int
        ``training.local_epochs``.
    clients_per_round : int
        m, the clients sampled per round (:meth:`~fltrust.config.ExperimentConfig.clients_per_round`).

    Returns
    -------
    Strategy

    Raises
    ------
    ConfigError
        For an unregistered name, an option the constructor does not take, a required keyword
        nothing provides, a value the constructor refuses, or a failed precondition.

    Examples
    --------
    >>> krum = build_strategy(StrategyConfig(name="krum", num_malicious_nodes=1), local_epochs=2, clients_per_round=5)
    >>> type(krum).__name__, krum.num_malicious_nodes, krum.local_epochs
    ('Krum', 1, 2)
    """
    cls = strategy_class(settings.name)
    facts = {"local_epochs": local_epochs, "clients_per_round": clients_per_round}
    config_fields = {f.name for f in fields(StrategyConfig)} - {"name", "options"}
    params = _keywords(cls)
    unknown = sorted(set(settings.options) - (set(params) - set(_FACTS)))
    if unknown:
        raise ConfigError(f"strategy.options {unknown} are not parameters of strategy.name={settings.name!r}; "
                          f"its parameters: {sorted(set(params) - set(_FACTS))}")
    kwargs: dict[str, Any] = {}
    for name, p in params.items():
        if name in facts:
            kwargs[name] = facts[name]
        elif name in settings.options:
            kwargs[name] = settings.options[name]
        elif name in config_fields:
            kwargs[name] = getattr(settings, name)
        elif p.default is inspect.Parameter.empty:
            raise ConfigError(f"strategy.name={settings.name!r} needs strategy.options.{name}")
    try:
        strategy = cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"strategy.name={settings.name!r}: {exc}") from None
    strategy.check(clients_per_round=clients_per_round)
    return strategy
