"""What a run states about itself for its FactSheet, beyond its round records: :class:`TrustInputs`.

The trust observer learns most of the FactSheet from the run's records (clients, rounds, label
counts, metrics, models). The rest -- what was configured (strategy, privacy, model, data, learning
settings, the project's own description) and the two data hooks of extended mode (the clients'
training rows for membership inference, the test split's sensitive attribute) -- comes in one
:class:`TrustInputs`, built by whoever knows the run:

- an fltrust experiment: :func:`fltrust.experiment.trust_inputs` from its configuration;
- anyone's Flower app: :func:`fltrust.flower.instrument` from the app's strategy object and the
  arguments it is given.

:func:`~fltrust.trust.factsheet.populate_pre_training` fills an experiment's pre-training fields
from it; extended mode's measures (:class:`fltrust.trust.extended.ExtendedMetrics`,
:class:`fltrust.trust.measures.registry.RunView`) read it. Nothing in :mod:`fltrust.trust` reads an
experiment configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fltrust.trust.measures.discrimination import SensitiveAttribute

__all__ = ["TrustInputs"]


@dataclass(frozen=True)
class TrustInputs:
    """The facts of a run that its records do not carry (one per run; see the module docstring).

    Attributes
    ----------
    name : str
        The run's name (``project/overview`` when the project states none).
    strategy : str
        The aggregation rule as the run names it: an fltrust strategy (``"fedavg"``, ``"krum"``)
        or a Flower strategy class (``"FedAvg"``); the FactSheet maps it to the papers'
        vocabulary (:data:`~fltrust.trust.factsheet.STRATEGY_NAMES`).
    byzantine_robust : bool
        The rule bounds the influence of poisoned updates
        (:func:`~fltrust.trust.measures.poisoning.is_byzantine_robust`; extended mode's declared
        poisoning defence).
    personalized : bool
        The strategy trains personalised models (Ditto).
    model : str
        The architecture's name (an fltrust model name, mapped by
        :data:`~fltrust.trust.factsheet.TRAINING_MODEL_MAP`; an app's model class).
    num_clients, clients_per_round, rounds : int or None
        Registered clients C, clients sampled per round, training rounds T (``None`` = not known
        up front: the run's ``RunInfo`` says).
    learning_rate : float or None
        Client learning rate.
    local_epochs : int or None
        Local epochs per round.
    differential_privacy : bool
        The run applies differential privacy.
    dp_epsilon : float
        Its target epsilon (NaN without DP, or when not stated).
    secure_aggregation : str or None
        The configured secure-aggregation protocol (``"secagg+"``, ``"none"``); ``None`` = not
        configured (extended mode then reads ``declared.encryption``).
    overview, purpose, background : str
        The project's own description (user-supplied FactSheet fields; empty = reported missing).
    organisations : tuple of str
        The participants' organisations.
    data_name : str
        The dataset's name (``synthetic_`` prefix for a generated stand-in).
    data_files : tuple of str
        The data files the configuration names (used when the loader records none).
    loader_options : mapping
        Loader options the preprocessing description names (``onehot_order``, ``balance``).
    seed : int
        The run's seed (the observers' sampling).
    batch_size : int
        The run's batch size (extended mode evaluates in batches of at least 256).
    member_sampler : callable or None
        ``(client_ids, n, seed) -> (x, y)``: training rows of those clients, for membership
        inference (extended mode; :func:`fltrust.trust.extended.sample_client_rows`). ``None``:
        the attack is reported missing.
    sensitive : SensitiveAttribute or None
        Group of every test row, for the discrimination index (extended mode). ``None``: missing.

    Examples
    --------
    >>> TrustInputs(name="demo", strategy="FedAvg").dp_epsilon
    nan
    """

    name: str
    strategy: str
    byzantine_robust: bool = False
    personalized: bool = False
    model: str = ""
    num_clients: int | None = None
    clients_per_round: int | None = None
    rounds: int | None = None
    learning_rate: float | None = None
    local_epochs: int | None = None
    differential_privacy: bool = False
    dp_epsilon: float = float("nan")
    secure_aggregation: str | None = None
    overview: str = ""
    purpose: str = ""
    background: str = ""
    organisations: tuple[str, ...] = ()
    data_name: str = ""
    data_files: tuple[str, ...] = ()
    loader_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    batch_size: int = 256
    member_sampler: Callable[..., Any] | None = None
    sensitive: SensitiveAttribute | None = None
