"""What fltrust's two engines share: the experiment's set-up and the pieces of a run both use.

:class:`EngineBase` is the small interface behind ``run.engine``: the in-process engine
(:class:`fltrust.engines.inprocess.Engine`, fltrust's own round loop) and the Flower engine
(:class:`fltrust.engines.flower.engine.FlowerEngine`, Flower's Simulation Runtime) are its two subclasses,
and neither imports the other. It holds what a run is made of -- the federation, the model, the
local trainer, the strategy, the privacy mechanism, the attack plan, the training and run
settings -- and the pieces both engines use: the seeded client sampling, the evaluation on the
server's auxiliary set, the run folder's start and the summary written at its end. An engine adds
:meth:`EngineBase.run`. The simulated client both engines train is
:class:`fltrust.engines.client.SimulatedClient`.

An engine takes the parts it uses, each typed, never the whole config: :mod:`fltrust.experiment`
reads the config and builds them (:func:`fltrust.experiment.build_engine`). The engines know
nothing about metrics.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.algorithms.privacy import PrivacyMechanism
from fltrust.algorithms.strategies import Strategy
from fltrust.attacks import AttackPlan
from fltrust.config import ReliabilityConfig, TrainingConfig
from fltrust.core.evaluation import set_params
from fltrust.core.params import system_figures
from fltrust.core.records import Params, RoundRecord, RunInfo
from fltrust.engines.batched_evaluation import BatchedEvaluator
from fltrust.engines.training import LocalTrainer
from fltrust.federation import Federation, sample_clients
from fltrust.names import SecureAggregation
from fltrust.runs import RunRecorder

log = logging.getLogger("fltrust")


@dataclass(frozen=True)
class RunSettings:
    """What an engine needs of the run's identity and switches (built by :mod:`fltrust.experiment`).

    Attributes
    ----------
    name : str
        ``run.name`` (the progress bar's label).
    seed : int
        The run seed of this repeat (``ExperimentConfig.effective_seed()``); every random stream
        derives from it.
    config_yaml : str
        The config as written to the run folder's ``config.yaml``.
    identity : dict
        What a checkpoint must match to be resumed, beside the run id and the data fingerprint:
        ``config_hash``, ``seed`` (``run.seed``) and ``repeat``.
    checkpoint : bool
        Write ``checkpoint.pt`` after every round (``run.checkpoint``).
    progress : bool
        Show a progress bar (``run.progress``).
    """

    name: str
    seed: int
    config_yaml: str
    identity: dict[str, Any]
    checkpoint: bool = True
    progress: bool = False


class EngineBase:
    """One prepared experiment, ready to be run by an engine (the shared part of both engines).

    A subclass implements :meth:`run`. ``EngineBase`` itself is usable on its own as the
    experiment's set-up: a Flower ClientApp process builds one to train its simulated clients
    (:class:`fltrust.engines.client.SimulatedClient`) exactly as the in-process engine does.

    Parameters
    ----------
    federation : Federation
        Client data, auxiliary and test sets, on ``device``.
    model : nn.Module
        The architecture (initial parameters = round 0's global model), on ``device``.
    strategy : Strategy
        The local update and the aggregation (:func:`fltrust.algorithms.strategies.build_strategy`).
    privacy : PrivacyMechanism
        The run's privacy mechanism (:func:`fltrust.algorithms.privacy.build_privacy`).
    training : TrainingConfig
        Rounds, local epochs, batch size, optimiser, ``vectorize``.
    clients_per_round : int
        m, the clients sampled per round.
    run : RunSettings
        Seed, identity and switches of the run.
    device : torch.device
    attack : AttackPlan, optional
        The run's attack (default: none).
    reliability : ReliabilityConfig, optional
        Injected drop-outs, failures and time-outs (default: none).

    Attributes
    ----------
    seed : int
        The run seed of this repeat (``run.seed``); every random stream derives from it.
    trainer : LocalTrainer
        Local training and evaluation of one client.
    per_round : int
        Clients sampled per round.
    evaluator : BatchedEvaluator or None
        Batched evaluation (``training.vectorize`` not ``off``), else ``None``.
    """

    name = "base"

    def __init__(self, federation: Federation, model: nn.Module, *, strategy: Strategy, privacy: PrivacyMechanism,
                 training: TrainingConfig, clients_per_round: int, run: RunSettings, device: torch.device,
                 attack: AttackPlan | None = None, reliability: ReliabilityConfig | None = None) -> None:
        self.fed = federation
        self.model = model
        self.strategy = strategy
        self.privacy = privacy
        self.training = training
        self.per_round = int(clients_per_round)
        self.settings = run
        self.seed = run.seed
        self.device = device
        self.attack_plan = attack if attack is not None else AttackPlan()
        self.reliability = reliability if reliability is not None else ReliabilityConfig()
        self.trainer = LocalTrainer(self.model, training, self.fed.bundle.num_classes, self.device)
        self.evaluator = (BatchedEvaluator(self.model, training, self.fed.bundle.num_classes, self.device)
                          if training.vectorize != "off" else None)

    @classmethod
    def check_components(cls, *, strategy: type[Strategy], privacy: type[PrivacyMechanism],
                         secure_aggregation: SecureAggregation | None) -> None:
        """Raise :class:`~fltrust.config.ConfigError` when this engine cannot run the strategy or the
        privacy mechanism (the base class runs any; the Flower engine needs a Flower counterpart).

        Parameters
        ----------
        strategy : type of Strategy
            The strategy class.
        privacy : type of PrivacyMechanism
            The privacy mechanism class.
        secure_aggregation : str or None
            ``privacy.secure_aggregation``.
        """
        return None

    # -- the run: what an engine implements, and the pieces of it every engine shares -----
    def run(self, recorder: RunRecorder, info: RunInfo, *, resume: bool = True,
            extra_summary: dict[str, Any] | None = None, dataset_extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run every round through ``recorder``; returns the summary fields of the finished run.

        Parameters
        ----------
        recorder : RunRecorder
            The run folder's recorder: runs the observers, writes the rounds and the summary.
        info : RunInfo
            What the observers learn at the start (run id, clients, class counts, ...).
        resume : bool
            Continue an interrupted run where the engine can (default True).
        extra_summary : dict, optional
            Further fields for ``summary.json`` (override the engine's own of the same name).
        dataset_extra : dict, optional
            Further entries for ``dataset.json``.

        Returns
        -------
        dict of str to Any
            The summary fields the engine wrote (:meth:`finish_run`).
        """
        raise NotImplementedError(f"{type(self).__name__} does not run experiments; use an engine "
                                  "(fltrust.engines.inprocess.Engine or fltrust.engines.flower.engine.FlowerEngine)")

    def start_run(self, recorder: RunRecorder, info: RunInfo, dataset_extra: dict[str, Any] | None = None) -> None:
        """Start a fresh run folder: ``config.yaml``, ``dataset.json`` (dataset summary, partition,
        ``dataset_extra``) and the observers' ``on_run_start``.

        Parameters
        ----------
        recorder : RunRecorder
            The run folder's recorder.
        info : RunInfo
            What the observers learn at the start.
        dataset_extra : dict, optional
            Further entries for ``dataset.json``.
        """
        recorder.start(info, self.settings.config_yaml, {"dataset": self.fed.bundle.summary(),
                                                         "partition": self.fed.partition, **(dataset_extra or {})})

    def finish_run(self, recorder: RunRecorder, global_params: Params, wall: float, final_aux: tuple[float, float], *,
                   extra_summary: dict[str, Any] | None = None) -> dict[str, Any]:
        """Load the final model into ``self.model``, write the summary and return its fields.

        Parameters
        ----------
        recorder : RunRecorder
            The run folder's recorder (its records are the run's rounds).
        global_params : Params
            The final global model.
        wall : float
            Wall-clock seconds of the run.
        final_aux : tuple of (float, float)
            (loss, accuracy) of the final model on the auxiliary set.
        extra_summary : dict, optional
            Further fields: the engine's own (e.g. the Flower engine's ``flower`` timings), then
            the caller's (which override the engine's own of the same name).

        Returns
        -------
        dict of str to Any
            ``seconds_per_round``, ``device``, ``final_aux_loss``, ``final_aux_accuracy``,
            ``epsilon``, ``privacy`` (the mechanism's description), ``extra_summary`` and the
            attack / reliability blocks.
        """
        rounds = self.training.rounds
        set_params(self.model, global_params)
        fields = {"seconds_per_round": wall / max(1, rounds), "device": str(self.device),
                  "final_aux_loss": final_aux[0], "final_aux_accuracy": final_aux[1],
                  "epsilon": self.privacy.epsilon(rounds), "privacy": self.privacy.describe(),
                  **(extra_summary or {})}
        fields.update(self.robustness_summary(recorder.records, final_aux[1]))  # attack / reliability blocks
        recorder.finish(global_params, self.model.state_dict(), wall,
                        system_figures(self.model, recorder.records, global_params), fields)
        return fields

    # -- one round ------------------------------------------------------------------------
    def sample_clients(self, round_: int) -> np.ndarray:
        """The round's participants: ``m`` of ``C`` without replacement, seeded by (seed, round)."""
        return sample_clients(self.seed, round_, self.fed.num_clients, self.per_round)

    def evaluate_aux(self, params: Params) -> tuple[float, float]:
        """(loss, accuracy) of ``params`` on the server's auxiliary set D."""
        result = self.evaluate_on(params, [self.fed.x_aux], [self.fed.y_aux])[0]
        return result.loss, result.accuracy

    def _epsilon_metric(self, round_: int) -> dict[str, float]:
        """``{"epsilon": the privacy spent up to round_}`` where the mechanism accounts it, else ``{}``."""
        eps = self.privacy.epsilon(round_)
        return {} if eps is None else {"epsilon": eps}

    def evaluate_on(self, params: Any, xs: list, ys: list, *, each: bool = False) -> list:
        """Results of ``params`` on each dataset ``(xs[k], ys[k])``, batched where ``training.vectorize`` allows.

        Parameters
        ----------
        params : Params or list of Params
            One model, or (``each``) one model per dataset.
        xs, ys : list of torch.Tensor
            The datasets' inputs and labels.
        each : bool
            Evaluate model k on dataset k instead of the one model on every dataset.

        Returns
        -------
        list
            One evaluation result (``loss``, ``accuracy``, ...) per dataset, in order.
        """
        if self.evaluator is not None:
            return (self.evaluator.evaluate_each if each else self.evaluator.evaluate_shared)(params, xs, ys)
        models = params if each else [params] * len(xs)
        return [self.trainer.evaluate(p, x, y) for p, x, y in zip(models, xs, ys)]

    # -- attacks and injected failures (fltrust.attacks, fltrust.faults) -------------------------
    def round_extras(self, ids: Any, counters: dict[str, float]) -> dict[str, float]:
        """Server metrics of the attack (``num_malicious`` among ``ids``, the clients whose updates are
        aggregated) and of the injected failures: ``counters`` (``num_sampled``, ``num_dropped``,
        ``num_failed``, ``num_timed_out``; ``{}`` when nothing is injected), then ``num_aggregated``
        and ``model_kept``.

        Parameters
        ----------
        ids : sequence of int
            The ids of the clients whose updates are aggregated.
        counters : dict of str to float
            The round's injected-failure counts (``{}``: no failure counters).

        Returns
        -------
        dict of str to float
            The counters that apply (``{}`` without an attack and without injected failures).
        """
        out: dict[str, float] = {}
        if self.attack_plan.active:
            out["num_malicious"] = float(sum(self.attack_plan.is_malicious(c) for c in ids))
        if counters:
            out.update(counters)
            out["num_aggregated"] = float(len(ids))
            out["model_kept"] = float(len(ids) == 0)
        return out

    def robustness_summary(self, records: list[RoundRecord], final_aux_accuracy: float | None) -> dict[str, Any]:
        """The summary's ``attack`` and ``reliability`` blocks (only those that apply); ``self.model``
        must hold the final global model.

        Parameters
        ----------
        records : list of RoundRecord
            The run's rounds.
        final_aux_accuracy : float or None
            The final model's accuracy on the (clean) auxiliary set, reported in the attack block.

        Returns
        -------
        dict of str to Any
            ``{"attack": ..., "reliability": ...}``, each key only when it applies.
        """
        from fltrust.attacks import attack_summary
        from fltrust.faults import reliability_summary

        out: dict[str, Any] = {}
        if self.attack_plan.active:
            out["attack"] = attack_summary(self.attack_plan, self.model, self.fed.x_test, self.fed.y_test, records,
                                           final_aux_accuracy=final_aux_accuracy)
        if self.reliability.active:
            out["reliability"] = reliability_summary(records, self.reliability)
        return out



def progress_bar(run: RunSettings, rounds: int, first: int = 1, label: str = ""):
    """The run's progress bar over its rounds (off unless ``run.progress``).

    Parameters
    ----------
    run : RunSettings
        The run's name (the bar's label) and ``progress`` switch.
    rounds : int
        The number of rounds the bar counts.
    first : int
        The round the bar starts at (a resumed run starts past 1).
    label : str
        Appended to the run's name.

    Returns
    -------
    tqdm.auto.tqdm
        The bar (disabled when ``run.progress`` is off).
    """
    from tqdm.auto import tqdm

    return tqdm(total=rounds, initial=first - 1, desc=run.name + label, unit="round", disable=not run.progress,
                leave=False)
