"""One place that assembles an experiment and hands it to an engine.

:func:`run_experiment` is what the CLI, the demo, the notebooks and the batch runners call:

1. resolve the device, load and partition the data (:func:`fltrust.federation.prepare_federation`);
2. build the model and the observers the config switches on (fairness analytics, FederatedTrust)
   plus any the caller passes;
3. pick the run folder (the run id names the config, seed, repeat and -- for synthetic stand-ins --
   the data source), skip it when a complete record of the *same data* is there, else lock it;
4. build the engine named by ``run.engine`` (``inprocess``: :mod:`fltrust.engines.inprocess`;
   ``flower``: :mod:`fltrust.engines.flower.engine`) from its typed parts -- the strategy, the
   privacy mechanism, the training and run settings, the attack plan -- and let it feed its
   rounds to a :class:`~fltrust.runs.RunRecorder`.

This is the one place that reads an :class:`~fltrust.config.ExperimentConfig` and builds the
engine's parts from it (:func:`build_engine`; whether they fit each other is checked first,
:func:`check_experiment`); no engine, strategy or mechanism takes the whole config. Engines
never import metrics and metrics never import engines; this module is the only one that knows both.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust import registry
from fltrust.algorithms.privacy import PrivacyRun, build_privacy, privacy_mechanism
from fltrust.algorithms.strategies import build_strategy, strategy_class
from fltrust.compatibility import check_compatible
from fltrust.config import ExperimentConfig, config_yaml
from fltrust.core.observers import ObserverSet, RoundObserver
from fltrust.core.records import RunInfo
from fltrust.data.base import DatasetBundle
from fltrust.federation import Federation, prepare_federation, resolve_device
from fltrust.models import build_model
from fltrust.names import Device
from fltrust.runs import RunDiverged, RunFolder, RunRecord, RunRecorder, load_final_model, load_run, locked

log = logging.getLogger("fltrust")


@dataclass
class Experiment:
    """A prepared experiment: everything an engine needs."""

    cfg: ExperimentConfig
    device: torch.device
    federation: Federation
    model: nn.Module
    observers: ObserverSet

    def run_info(self, run_id: str) -> RunInfo:
        fed = self.federation
        return RunInfo(
            run_id=run_id,
            num_clients=fed.num_clients,
            num_rounds=self.cfg.training.rounds,
            num_classes=fed.bundle.num_classes,
            client_num_samples=np.array([len(i) for i in fed.train_index]),
            client_class_counts=fed.class_counts,
            config=self.cfg.to_dict(),
            dataset=fed.bundle.summary(),
            clients_per_round=self.cfg.clients_per_round(),
        )


def build_experiment_model(cfg: ExperimentConfig, federation: Federation, device: torch.device) -> nn.Module:
    """The configured architecture, initialised from the run seed and prepared for the privacy
    mechanism (:meth:`~fltrust.algorithms.privacy.PrivacyMechanism.prepare_model`; local DP:
    BatchNorm -> GroupNorm)."""
    torch.manual_seed(cfg.effective_seed())
    model = build_model(cfg.model.name, federation.bundle.input_shape, federation.bundle.num_classes)
    model = privacy_mechanism(cfg.privacy.mode).prepare_model(model)
    return model.to(device)


def fairness_observer(cfg: ExperimentConfig, model: nn.Module, x_aux: torch.Tensor, y_aux: torch.Tensor, *,
                      num_clients: int | None = None):
    """The :class:`~fltrust.metrics.fairness.FairnessObserver` of an experiment.

    Its settings are :func:`fltrust.config.fairness_settings` of ``metrics.fairness`` (the
    authors' sensitive attributes of the dataset and strategy when the config names none); the
    run's batch size, loss convention, seed and weighting come from the config.

    Parameters
    ----------
    cfg : ExperimentConfig
    model : nn.Module
        Architecture template.
    x_aux, y_aux : torch.Tensor
        The server's auxiliary set.
    num_clients : int or None
        Registered clients (default: ``RunInfo.num_clients`` at the run's start).

    Returns
    -------
    FairnessObserver
    """
    from dataclasses import replace

    from fltrust.config import fairness_settings
    from fltrust.metrics.fairness import FairnessObserver, default_sensitive_attributes

    settings = fairness_settings(cfg.metrics.fairness)
    if settings.sensitive_attributes is None:
        attributes = tuple(default_sensitive_attributes(cfg.data.name, cfg.strategy.name))
        settings = replace(settings, sensitive_attributes=attributes)
    return FairnessObserver(settings, model, x_aux, y_aux, batch_size=cfg.training.batch_size,
                            loss_scaling=cfg.training.loss_scaling, num_clients=num_clients,
                            coalition_weight_key="num_batches" if cfg.strategy.weighting == "batches" else "num_samples",
                            seed=cfg.effective_seed())


def trust_inputs(cfg: ExperimentConfig, *, member_sampler: Any = None, sensitive: Any = None):
    """What an experiment states about itself for its FactSheet: its :class:`~fltrust.trust.inputs.TrustInputs`.

    The one place a configuration becomes the trust observer's inputs (the pre-training fields of
    :func:`~fltrust.trust.factsheet.populate_pre_training` and extended mode's facts).

    Parameters
    ----------
    cfg : ExperimentConfig
    member_sampler, sensitive : optional
        Extended mode's data hooks (:func:`federation_trust_observer` draws them from the federation).

    Returns
    -------
    TrustInputs
    """
    from fltrust.trust.inputs import TrustInputs
    from fltrust.trust.measures.poisoning import is_byzantine_robust

    dp = privacy_mechanism(cfg.privacy.mode).differential_privacy
    strategy = strategy_class(cfg.strategy.name)
    epsilon = cfg.privacy.target_epsilon
    project, data = cfg.project, cfg.data
    return TrustInputs(
        name=cfg.run.name, strategy=cfg.strategy.name, byzantine_robust=is_byzantine_robust(cfg.strategy.name),
        personalized=strategy.personalized, model=cfg.model.name, num_clients=cfg.partition.num_clients,
        clients_per_round=cfg.clients_per_round(), rounds=cfg.training.rounds,
        learning_rate=cfg.training.learning_rate, local_epochs=cfg.training.local_epochs,
        differential_privacy=dp, dp_epsilon=float(epsilon) if dp and epsilon is not None else float("nan"),
        secure_aggregation=getattr(cfg.privacy, "secure_aggregation", None),
        overview=project.overview, purpose=project.purpose, background=project.background,
        organisations=tuple(project.organisations), data_name=data.name,
        data_files=tuple((data.train_files or []) + (data.test_files or [])),
        loader_options={"onehot_order": data.onehot_order, "balance": data.balance},
        seed=int(cfg.effective_seed()), batch_size=cfg.training.batch_size,
        member_sampler=member_sampler, sensitive=sensitive,
    )


def trust_observer(cfg: ExperimentConfig, model: nn.Module, x_test: torch.Tensor, y_test: torch.Tensor, *,
                   test_groups: Any = None, member_sampler: Any = None, sensitive: Any = None):
    """The :class:`~fltrust.trust.observer.TrustObserver` of an experiment.

    Its settings are :func:`fltrust.config.trust_settings` of ``metrics.trust``; seed, batch size
    and loss convention come from the config, the FactSheet describes the run from the config's
    :func:`trust_inputs` (:func:`~fltrust.trust.factsheet.populate_pre_training`), and extended
    mode's measurements are built from the same inputs.

    Parameters
    ----------
    cfg : ExperimentConfig
    model : nn.Module
    x_test, y_test : torch.Tensor
        The test split.
    test_groups : optional
        See :class:`~fltrust.trust.observer.TrustObserver`.
    member_sampler, sensitive : optional
        Extended mode's data hooks (:class:`~fltrust.trust.inputs.TrustInputs`).

    Returns
    -------
    TrustObserver
    """
    from fltrust.config import trust_settings
    from fltrust.trust.factsheet import populate_pre_training
    from fltrust.trust.observer import TrustObserver

    settings = trust_settings(cfg.metrics.trust)
    inputs = trust_inputs(cfg, member_sampler=member_sampler, sensitive=sensitive)

    def describe(fs: dict[str, Any], info: RunInfo, template: nn.Module) -> None:  # what the config ran
        populate_pre_training(fs, inputs, template, info.dataset or None, settings=settings)

    extended = None
    if settings.mode == "extended":
        from fltrust.trust.extended import ExtendedMetrics

        extended = ExtendedMetrics(settings, inputs, model, x_test, y_test)
    return TrustObserver(settings, model, x_test, y_test, seed=cfg.effective_seed(),
                         batch_size=cfg.training.batch_size, loss_scaling=cfg.training.loss_scaling,
                         test_groups=test_groups, extended=extended, describe=describe)


def paper_observers(cfg: ExperimentConfig, model: nn.Module, federation: Federation) -> list[RoundObserver]:
    """The observers the config switches on: fairness analytics and FederatedTrust.

    The same observer classes a Flower app gets from :func:`fltrust.flower.instrument`, built
    from the config's settings (:func:`fairness_observer`, :func:`trust_observer`).
    """
    out: list[RoundObserver] = []
    if cfg.metrics.fairness.enabled:
        out.append(fairness_observer(cfg, model, federation.x_aux, federation.y_aux,
                                     num_clients=federation.num_clients))
    if cfg.metrics.trust.enabled:
        out.append(federation_trust_observer(cfg, model, federation))
    return out


def federation_trust_observer(cfg: ExperimentConfig, model: nn.Module, federation: Federation):
    """:func:`trust_observer` on ``federation``'s test split, with extended mode's data hooks drawn from it.

    In extended mode, the members of the membership-inference attack are the clients' training
    rows (:func:`fltrust.trust.extended.sample_client_rows`) and the sensitive attribute is the
    test split's (:func:`fltrust.trust.measures.discrimination.sensitive_attribute`).

    Parameters
    ----------
    cfg : ExperimentConfig
        Its ``metrics.trust`` section sets the observer's mode and settings.
    model : nn.Module
        Architecture template.
    federation : Federation
        The prepared federation of ``cfg``.

    Returns
    -------
    TrustObserver
    """
    hooks: dict[str, Any] = {}
    if cfg.metrics.trust.mode == "extended":
        import functools

        from fltrust.trust.extended import sample_client_rows
        from fltrust.trust.measures.discrimination import sensitive_attribute

        hooks = {"member_sampler": functools.partial(sample_client_rows, federation),
                 "sensitive": sensitive_attribute(federation.bundle)}
    return trust_observer(cfg, model, federation.x_test, federation.y_test, **hooks)


ObserverFactory = Callable[[nn.Module, Federation], RoundObserver]
"""Builds an extra observer from the prepared experiment: ``factory(template_model, federation)``
(e.g. a second trust observer of another scoring mode, which needs the test split)."""


def prepare_experiment(
    cfg: ExperimentConfig,
    *,
    observers: Sequence[RoundObserver] = (),
    observer_factories: Sequence[ObserverFactory] = (),
    device: torch.device | None = None,
    federation: Federation | None = None,
) -> Experiment:
    """Load data, build the model and the observers (nothing is run or written).

    Parameters
    ----------
    cfg : ExperimentConfig
    observers : sequence of RoundObserver
        Extra observers besides the ones the config switches on.
    observer_factories : sequence of ObserverFactory
        Extra observers built here from the model template and the federation.
    device : torch.device, optional
        Default: ``run.device`` resolved.
    federation : Federation, optional
        An already prepared federation of ``cfg`` (default: prepared here).

    Returns
    -------
    Experiment

    Raises
    ------
    ConfigError
        When the model does not take the dataset's inputs, or another part does not fit
        (:func:`check_experiment`).
    """
    check_experiment(cfg)  # the parts fit each other, before any data is loaded
    if cfg.run.torch_threads is not None:
        torch.set_num_threads(cfg.run.torch_threads)
    # Tiny feature values (NSL-KDD's fixed min-max table) drive Adam's moments into float
    # denormals, which are ~10x slower on CPUs; flushing them to zero changes nothing visible.
    torch.set_flush_denormal(True)
    device = device or resolve_device(cfg.run.device)
    federation = federation or prepare_federation(cfg, device)
    model = build_experiment_model(cfg, federation, device)
    # the observers get their own copy of the architecture, so engines may reuse ``model`` freely
    import copy

    template = copy.deepcopy(model)
    built = [factory(template, federation) for factory in observer_factories]
    observer_set = ObserverSet(list(paper_observers(cfg, template, federation)) + list(observers) + built)
    return Experiment(cfg, device, federation, model, observer_set)


def data_fingerprint(bundle: DatasetBundle) -> str:
    """Short hash of where the data came from: file checksums, or the synthetic generator's settings.

    Absolute folders are left out, so the same files give the same fingerprint on every machine.
    """
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in sorted(value.items()) if k not in ("folder", "root", "fallback_reason")}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    blob = json.dumps({"synthetic": bool(bundle.synthetic), "source": clean(bundle.source)},
                      sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def run_id_for(cfg: ExperimentConfig, bundle: DatasetBundle) -> str:
    """``cfg.run_id()``, with ``-synthetic`` before the seed when a synthetic stand-in replaced
    the real data the config asks for (``data.allow_synthetic_fallback``).

    Real and synthetic results therefore live in different folders and can never be swapped.
    """
    base = cfg.run_id()
    if not bundle.synthetic or cfg.data.name.startswith("synthetic"):
        return base
    stem, seed, repeat = base.rsplit("-", 2)
    return f"{stem}-synthetic-{seed}-{repeat}"


def _stored_fingerprint(folder: RunFolder) -> str | None:
    try:
        return json.loads(folder.dataset.read_text()).get("fingerprint")
    except (OSError, json.JSONDecodeError):
        return None


def run_experiment(
    cfg: ExperimentConfig,
    *,
    observers: Sequence[RoundObserver] = (),
    observer_factories: Sequence[ObserverFactory] = (),
    out_dir: str | Path | None = None,
    device: Device | None = None,
    resume: bool = True,
    force: bool = False,
    wait_s: float = 0.0,
) -> RunRecord:
    """Run (or resume, or skip if complete) one experiment and return its reloaded record.

    Parameters
    ----------
    cfg : ExperimentConfig
    observers : sequence of RoundObserver
        Extra observers besides the ones the config switches on.
    observer_factories : sequence of ObserverFactory
        Extra observers built from the prepared model template and federation
        (:func:`prepare_experiment`).
    out_dir : str or Path, optional
        Folder of run folders (default ``run.out_dir``).
    device : str, optional
        Overrides ``run.device`` (``cpu``, ``cuda``, ``auto``).
    resume, force : bool
        Resume from a checkpoint; rerun even when a complete record exists.
    wait_s : float
        How long to wait for another process that holds the run folder (then a one-line error).

    Returns
    -------
    RunRecord
        ``record.summary["status"]`` is ``complete``, or ``diverged`` when training produced a
        non-finite loss or model (then ``diverged_round`` says where, and no metric was computed
        from the broken model).
    """
    if device is not None:
        cfg = cfg.with_overrides({"run.device": device})
    experiment = prepare_experiment(cfg, observers=observers, observer_factories=observer_factories)
    fed = experiment.federation
    run_id = run_id_for(cfg, fed.bundle)
    folder = RunFolder(Path(out_dir or cfg.run.out_dir) / run_id)
    fingerprint = data_fingerprint(fed.bundle)
    with locked(folder, wait_s=wait_s):
        if not force and folder.is_complete(cfg.training.rounds):
            stored = _stored_fingerprint(folder)
            if stored in (None, fingerprint):
                print(f"skipped {run_id}: already complete in {folder.path} (--force reruns it)")
                return load_run(folder.path)
            print(f"rerunning {run_id}: its record in {folder.path} was made from other data "
                  f"(fingerprint {stored}, now {fingerprint})")
            force = True
        elif not force and folder.status() == "complete":
            print(f"rerunning {run_id}: {folder.rounds} does not hold the {cfg.training.rounds} rounds "
                  "its config asks for")
            force = True
        return _run_locked(experiment, folder, run_id, fingerprint, resume=resume and not force)


def _run_locked(experiment: Experiment, folder: RunFolder, run_id: str, fingerprint: str, *,
                resume: bool) -> RunRecord:
    cfg = experiment.cfg
    for observer in experiment.observers.observers:
        if hasattr(observer, "run_folder"):
            observer.run_folder = folder.path
    handler = logging.FileHandler(folder.log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    previous_level = log.level
    log.setLevel(logging.INFO)  # the run's log file gets every round; the console keeps its level
    log.addHandler(handler)
    recorder = RunRecorder(folder, experiment.observers)
    info = experiment.run_info(run_id)
    start = time.perf_counter()
    common = {"synthetic": experiment.federation.bundle.synthetic, "engine": cfg.run.engine,
              "data_fingerprint": fingerprint, "deviations": cfg.run.deviations}
    try:
        engine = build_engine(experiment)
        try:
            engine.run(recorder, info, resume=resume, extra_summary=common, dataset_extra={"fingerprint": fingerprint})
        except RunDiverged as exc:
            log.error("%s: %s", run_id, exc)
            recorder.diverged(exc, time.perf_counter() - start, common)
            print(f"run {run_id} DIVERGED at round {exc.round}: {exc.what}; metrics were not computed "
                  f"from the broken model (record: {folder.path})")
    finally:
        log.removeHandler(handler)
        log.setLevel(previous_level)
        handler.close()
    return load_run(folder.path)


def check_experiment(cfg: ExperimentConfig) -> None:
    """Check that the config's parts fit each other, before any data is loaded or run folder made.

    First the model and the dataset (:func:`fltrust.compatibility.check_compatible`), then the
    rules each component states about the others: the strategy builds from ``strategy`` (its
    constructor's values and :meth:`~fltrust.algorithms.strategies.Strategy.check`, e.g. Krum's
    ``m >= 2f + 3``); the privacy mechanism of ``privacy.mode`` accepts the strategy and
    ``run.engine`` (:meth:`~fltrust.algorithms.privacy.PrivacyMechanism.check`); the engine runs
    both (``check_components``: the Flower engine needs a Flower counterpart of the strategy, and
    SecAgg+ a strategy it can aggregate). :func:`prepare_experiment` and ``fltrust run`` call it.

    Parameters
    ----------
    cfg : ExperimentConfig

    Raises
    ------
    ConfigError
        One line naming the fields that do not fit.

    Examples
    --------
    >>> check_experiment(ExperimentConfig.tiny(strategy={"name": "krum", "num_malicious_nodes": 1}))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fltrust.config.checks.ConfigError: strategy.name='krum' with num_malicious_nodes=1 needs clients_per_round >= 2f + 3 ...
    """
    from fltrust.engines import engine_class

    check_compatible(cfg)
    strategy = type(build_strategy(cfg.strategy, local_epochs=cfg.training.local_epochs,
                                   clients_per_round=cfg.clients_per_round()))
    mechanism = privacy_mechanism(cfg.privacy.mode)
    mechanism.check(cfg.privacy, strategy=strategy, engine=cfg.run.engine)
    engine_class(cfg.run.engine).check_components(strategy=strategy, privacy=mechanism,
                                                  secure_aggregation=cfg.privacy.secure_aggregation)


def build_engine(experiment: Experiment):
    """The engine named by ``run.engine``, built from the typed parts of a prepared experiment.

    Here the config is read once for the engine: the strategy
    (:func:`~fltrust.algorithms.strategies.build_strategy`), the privacy mechanism calibrated for the
    federation (:func:`~fltrust.algorithms.privacy.build_privacy`), the attack plan, the training,
    run and (Flower) ``flower`` / SecAgg+ settings.

    Parameters
    ----------
    experiment : Experiment
        The prepared experiment (config, device, federation, model).

    Returns
    -------
    EngineBase
        A :class:`fltrust.engines.inprocess.Engine` or :class:`fltrust.engines.flower.engine.FlowerEngine`.
    """
    from fltrust.attacks import AttackPlan
    from fltrust.names import DATA_ATTACKS
    from fltrust.engines import engine_class
    from fltrust.engines.base import RunSettings

    cfg, fed = experiment.cfg, experiment.federation
    check_experiment(cfg)
    per_round = cfg.clients_per_round()
    strategy = build_strategy(cfg.strategy, local_epochs=cfg.training.local_epochs, clients_per_round=per_round)
    facts = PrivacyRun(rounds=cfg.training.rounds, local_epochs=cfg.training.local_epochs,
                       batch_size=cfg.training.batch_size, num_clients=fed.num_clients, clients_per_round=per_round,
                       client_sizes=tuple(len(i) for i in fed.train_index), seed=cfg.effective_seed())
    privacy = build_privacy(cfg.privacy, facts, experiment.model)
    attack = getattr(fed, "attack", None)
    if attack is None:
        if cfg.attack.kind in DATA_ATTACKS:
            raise ValueError(f"attack.kind={cfg.attack.kind!r} poisons training rows when the federation is "
                             "built: build it with fltrust.federation.prepare_federation")
        attack = AttackPlan.from_config(cfg.attack, fed.num_clients, seed=cfg.effective_seed())
    run = RunSettings(name=cfg.run.name, seed=cfg.effective_seed(), config_yaml=config_yaml(cfg),
                      identity={"config_hash": cfg.config_hash(), "seed": int(cfg.run.seed), "repeat": int(cfg.run.repeat)},
                      checkpoint=cfg.run.checkpoint, progress=cfg.run.progress)
    parts: dict[str, Any] = dict(strategy=strategy, privacy=privacy, training=cfg.training,
                                 clients_per_round=per_round, run=run, device=experiment.device, attack=attack,
                                 reliability=cfg.reliability)
    engine = engine_class(cfg.run.engine)
    if cfg.run.engine == "flower":
        from fltrust.engines.flower.engine import SecAggPlus

        p = cfg.privacy
        secagg = None
        if p.secure_aggregation == "secagg+":
            secagg = SecAggPlus(num_shares=p.secagg_num_shares, reconstruction_threshold=p.secagg_reconstruction_threshold,
                                clipping_range=p.secagg_clipping_range, quantization_range=p.secagg_quantization_range)
        parts.update(flower=cfg.flower, secure_aggregation=secagg, torch_threads=cfg.run.torch_threads)
    return engine(fed, experiment.model, **parts)


# -- poisoning defences: the same attack, undefended and defended --------------------------------

def _default_num_malicious_nodes(bound: int, cfg: ExperimentConfig) -> int:
    """f for a robust rule: the expected malicious updates per round, ceil(m * M / C), capped by
    ``bound``, the largest f the rule's precondition allows (Krum: m >= 2f + 3, Bulyan: m >= 4f + 3;
    :meth:`~fltrust.algorithms.strategies.Strategy.max_malicious_nodes`)."""
    m, clients = cfg.clients_per_round(), cfg.partition.num_clients
    a = cfg.attack
    num_bad = len(a.malicious_clients) if a.malicious_clients is not None else a.num_malicious
    f = math.ceil(m * num_bad / clients) if clients else 0
    return int(min(f, bound))


def defence_comparison(cfg: ExperimentConfig, defences: Sequence[str] = ("krum", "trimmedmean", "fedmedian"), *,
                       out_dir: str | Path | None = None, undefended: str = "fedavg",
                       defence_overrides: Mapping[str, Mapping[str, Any]] | None = None,
                       device: Device | None = None, force: bool = False) -> dict[str, Any]:
    """Run clean, attacked-undefended and attacked-defended experiments; return their numbers.

    ``cfg`` carries the attack (``attack.kind`` != ``none``). Runs, all with
    :func:`run_experiment` (complete runs in ``out_dir`` are reused):

    - *clean*: ``cfg`` without the attack, ``strategy.name = undefended``;
    - *undefended*: ``cfg`` with the attack, ``strategy.name = undefended``;
    - *defended*: ``cfg`` with the attack, ``strategy.name = d`` for every ``d`` in ``defences``
      (``strategy.num_malicious_nodes`` defaults to ceil(m M / C), capped by the rule's
      precondition, unless ``cfg`` or ``defence_overrides[d]`` -- dotted keys -- set it).

    Every final global model is evaluated on the clean test split (and, for a backdoor, its
    attack success rate on the triggered non-target test rows).

    Returns
    -------
    dict
        ``{"attack": str, "clean": {...}, "undefended": {...}, "defended": {name: {...}},
        "outcomes": {name: kwargs}}``; each run entry has ``run_id``, ``path``, ``strategy``,
        ``test_accuracy``, ``attack_success_rate``, ``final_aux_accuracy``; ``outcomes[name]`` are
        the keyword arguments of :func:`fltrust.trust.measures.poisoning.attack_outcome` (clean, attacked =
        undefended and defended test accuracies, the defended run's attack success rate)::

            from fltrust.trust.measures.poisoning import attack_outcome, record_attack_outcome
            numbers = defence_comparison(cfg, ["krum"], out_dir="runs/poisoning")
            outcome = attack_outcome(**numbers["outcomes"]["krum"])
    """
    from fltrust.attacks import attack_success_rate, clean_accuracy

    if cfg.attack.kind == "none":
        raise ValueError("defence_comparison needs cfg.attack.kind != 'none'")
    overrides = {k: dict(v) for k, v in (defence_overrides or {}).items()}
    clean_cfg = cfg.with_overrides({"attack": {}, "strategy.name": undefended})
    attacked_cfg = cfg.with_overrides({"strategy.name": undefended})
    defended_cfgs = {}
    for name in defences:
        extra = {"strategy.name": name, **overrides.get(name, {})}
        bound = strategy_class(name).max_malicious_nodes(cfg.clients_per_round()) if name in registry.STRATEGIES else None
        if bound is not None and "strategy.num_malicious_nodes" not in extra and cfg.strategy.num_malicious_nodes == 0:
            extra["strategy.num_malicious_nodes"] = _default_num_malicious_nodes(bound, cfg)
        defended_cfgs[name] = cfg.with_overrides(extra)

    torch_device = resolve_device(device or cfg.run.device)
    fed = prepare_federation(attacked_cfg, torch_device)  # the test split is the same in every run
    model = build_experiment_model(attacked_cfg, fed, torch_device)
    plan = getattr(fed, "attack", None)

    def run(run_cfg: ExperimentConfig) -> dict[str, Any]:
        record = run_experiment(run_cfg, out_dir=out_dir, device=device, force=force)
        if record.summary.get("status") != "complete":
            return {"run_id": record.run_id, "path": str(record.path), "strategy": run_cfg.strategy.name,
                    "status": record.summary.get("status"), "test_accuracy": float("nan"),
                    "attack_success_rate": float("nan"), "final_aux_accuracy": float("nan")}
        state = load_final_model(Path(record.path) / "final_model.pt", map_location=fed.x_test.device)
        model.load_state_dict(state)
        asr = None
        if plan is not None and plan.kind == "backdoor":
            asr = attack_success_rate(model, fed.x_test, fed.y_test, plan)
        return {"run_id": record.run_id, "path": str(record.path), "strategy": run_cfg.strategy.name,
                "status": "complete", "test_accuracy": clean_accuracy(model, fed.x_test, fed.y_test),
                "attack_success_rate": asr, "final_aux_accuracy": record.summary.get("final_aux_accuracy"),
                "num_malicious_nodes": run_cfg.strategy.num_malicious_nodes}

    clean, attacked = run(clean_cfg), run(attacked_cfg)
    defended = {name: run(c) for name, c in defended_cfgs.items()}
    label = plan.describe() if plan is not None else cfg.attack.kind
    outcomes = {
        name: {"clean_accuracy": clean["test_accuracy"], "attacked_accuracy": attacked["test_accuracy"],
               "defended_accuracy": d["test_accuracy"], "attack_success_rate": d["attack_success_rate"],
               "attack": label, "defence": name}
        for name, d in defended.items()
    }
    return {"attack": label, "clean": clean, "undefended": attacked, "defended": defended, "outcomes": outcomes}
