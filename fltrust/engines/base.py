"""What fltrust's two engines share: the experiment's set-up and the pieces of a run both use.

:class:`EngineBase` is the small interface behind ``run.engine``: the in-process engine
(:class:`fltrust.engines.inprocess.Engine`, fltrust's own round loop) and the Flower engine
(:class:`fltrust.engines.flower.engine.FlowerEngine`, Flower's Simulation Runtime) are its two subclasses,
and neither imports the other. It holds what a run is made of -- the config, the federation, the
model, the local trainer, the strategy, the DP set-up (local DP-SGD calibration, server noise,
NbAFL), the attack plan -- and the pieces both engines use: the seeded client sampling, the
evaluation on the server's auxiliary set, the epsilon accounting, the run folder's start and the
summary written at its end. An engine adds :meth:`EngineBase.run`. The simulated client both
engines train is :class:`fltrust.engines.client.SimulatedClient`.

The engines know nothing about metrics: :mod:`fltrust.experiment` builds the federation, the
model and the observers and hands them to an engine (:func:`fltrust.experiment.build_engine`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from torch import nn

from fltrust.config import ExperimentConfig, config_yaml
from fltrust.core.evaluation import set_params
from fltrust.core.records import Params, RoundRecord, RunInfo
from fltrust.federation import Federation, sample_clients
from fltrust.algorithms.privacy import NbAFL, calibrate_noise, epsilon_from_history, nbafl_from_config, trainable_mask
from fltrust.algorithms.strategies import build_strategy
from fltrust.engines.training import LocalDP, LocalTrainer
from fltrust.engines.batched_evaluation import BatchedEvaluator
from fltrust.core.params import count_parameters
from fltrust.runs import RunRecorder

log = logging.getLogger("fltrust")


class EngineBase:
    """One prepared experiment, ready to be run by an engine (the shared part of both engines).

    A subclass implements :meth:`run`. ``EngineBase`` itself is usable on its own as the
    experiment's set-up: a Flower ClientApp process builds one to train its simulated clients
    (:class:`fltrust.engines.client.SimulatedClient`) exactly as the in-process engine does.

    Parameters
    ----------
    cfg : ExperimentConfig
    federation : Federation
        Client data, auxiliary and test sets, on ``device``.
    model : nn.Module
        The architecture (initial parameters = round 0's global model), on ``device``.
    device : torch.device

    Attributes
    ----------
    seed : int
        The run seed (``cfg.effective_seed()``); every random stream derives from it.
    trainer : LocalTrainer
        Local training and evaluation of one client.
    strategy : fltrust.algorithms.strategies.Strategy
        The configured strategy (local update and aggregation).
    per_round : int
        Clients sampled per round.
    local_dp, server_noise, nbafl
        The calibrated privacy mechanism of ``privacy.mode`` (``None`` for the others).
    dp_history : dict of str to list
        Each client's DP-SGD accounting history (local DP), merged round after round.
    evaluator : BatchedEvaluator or None
        Batched evaluation (``training.vectorize`` not ``off``), else ``None``.
    """

    name = "base"

    def __init__(self, cfg: ExperimentConfig, federation: Federation, model: nn.Module, device: torch.device) -> None:
        self.cfg = cfg
        self.seed = cfg.effective_seed()
        self.device = device
        self.fed = federation
        self.model = model
        self.trainer = LocalTrainer(self.model, cfg.training, self.fed.bundle.num_classes, self.device)
        self.strategy = build_strategy(cfg)
        self.per_round = cfg.clients_per_round()
        self.local_dp = self._local_dp()
        self.server_noise = self._server_noise()
        self.nbafl = self._nbafl()
        self.trainable = trainable_mask(model)
        self.dp_history: dict[str, list[list[float]]] = {}
        self.evaluator = None
        if cfg.training.vectorize != "off":
            self.evaluator = BatchedEvaluator(self.model, cfg.training, self.fed.bundle.num_classes, self.device)

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
        recorder.start(info, config_yaml(self.cfg), {"dataset": self.fed.bundle.summary(),
                                                     "partition": self.fed.partition, **(dataset_extra or {})})

    def finish_run(self, recorder: RunRecorder, global_params: Params, wall: float, final_aux: tuple[float, float], *,
                   engine_fields: dict[str, Any] | None = None,
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
        engine_fields : dict, optional
            The engine's own further fields (e.g. the Flower engine's ``flower`` timings).
        extra_summary : dict, optional
            The caller's fields (override the engine's own of the same name).

        Returns
        -------
        dict of str to Any
            ``seconds_per_round``, ``device``, ``final_aux_loss``, ``final_aux_accuracy``,
            ``epsilon``, ``engine_fields``, ``extra_summary`` and the attack / reliability blocks.
        """
        rounds = self.cfg.training.rounds
        set_params(self.model, global_params)
        fields = {"seconds_per_round": wall / max(1, rounds), "device": str(self.device),
                  "final_aux_loss": final_aux[0], "final_aux_accuracy": final_aux[1],
                  "epsilon": self.epsilon_spent(rounds), **(engine_fields or {}), **(extra_summary or {})}
        fields.update(self.robustness_summary(recorder.records, final_aux[1]))  # attack / reliability blocks
        recorder.finish(global_params, self.model.state_dict(), wall, self.system(recorder.records, global_params),
                        fields)
        return fields

    # -- set-up ---------------------------------------------------------------------------
    def _local_dp(self) -> LocalDP | None:
        p = self.cfg.privacy
        if p.mode != "local":
            return None
        sizes = [len(i) for i in self.fed.train_index]
        rate = min(1.0, self.cfg.training.batch_size / max(1, min(sizes)))
        steps = int(np.ceil(1 / rate)) * self.cfg.training.local_epochs * self.cfg.training.rounds
        noise = calibrate_noise(p.target_epsilon, p.delta, rate, steps)
        log.info("local DP: noise multiplier %.4f for epsilon %.3g", noise, p.target_epsilon)
        return LocalDP(noise_multiplier=noise, max_grad_norm=p.max_grad_norm)

    def _server_noise(self) -> float | None:
        p = self.cfg.privacy
        if p.mode != "server":
            return None
        if p.noise_multiplier is not None:
            return p.noise_multiplier
        rate = self.per_round / self.fed.num_clients
        return calibrate_noise(p.target_epsilon, p.delta, rate, self.cfg.training.rounds)

    def _nbafl(self) -> NbAFL | None:
        if self.cfg.privacy.mode != "nbafl":
            return None
        t = self.cfg.training
        return nbafl_from_config(self.cfg.privacy, rounds=t.rounds, num_clients=self.fed.num_clients,
                                 clients_per_round=self.per_round, local_epochs=t.local_epochs,
                                 client_sizes=[len(i) for i in self.fed.train_index])


    # -- privacy --------------------------------------------------------------------------
    def epsilon_spent(self, rounds_done: int) -> float | None:
        """The privacy budget spent after ``rounds_done`` rounds: the largest client epsilon (local
        DP), the server mechanism's epsilon (server DP), NbAFL's target epsilon, or None without DP."""
        p = self.cfg.privacy
        if p.mode == "local":
            eps = [epsilon_from_history(h, p.delta) for h in self.dp_history.values()]
            return max(eps) if eps else 0.0
        if p.mode == "server":
            rate = self.per_round / self.fed.num_clients
            return epsilon_from_history([[self.server_noise, rate, rounds_done]], p.delta)
        if p.mode == "nbafl":  # no accounting: the epsilon NbAFL's noise scales are derived from
            return p.target_epsilon
        return None


    # -- one round ------------------------------------------------------------------------
    def sample_clients(self, round_: int) -> np.ndarray:
        """The round's participants: ``m`` of ``C`` without replacement, seeded by (seed, round)."""
        return sample_clients(self.seed, round_, self.fed.num_clients, self.per_round)

    def evaluate_aux(self, params: Params) -> tuple[float, float]:
        """(loss, accuracy) of ``params`` on the server's auxiliary set D."""
        if self.evaluator is not None:
            result = self.evaluator.evaluate_shared(params, [self.fed.x_aux], [self.fed.y_aux])[0]
        else:
            result = self.trainer.evaluate(params, self.fed.x_aux, self.fed.y_aux)
        return result.loss, result.accuracy


    def system(self, records: list[RoundRecord], params: Params) -> dict[str, Any]:
        """System figures of the run (model size, traffic, training time).

        Parameters
        ----------
        records : list of RoundRecord
            The run's rounds.
        params : Params
            The final global model (its size in bytes is ``model_bytes``).

        Returns
        -------
        dict of str to Any
            See :func:`system_figures`.
        """
        return system_figures(self.model, records, params)

    # -- attacks and injected failures (fltrust.attacks, fltrust.faults; issue 11) ---------------
    @property
    def attack_plan(self):
        """The run's :class:`fltrust.attacks.AttackPlan` (built by ``prepare_federation``)."""
        plan = getattr(self, "_attack_plan", None)
        if plan is None:
            from fltrust.attacks import AttackPlan
            from fltrust.config import DATA_ATTACKS

            plan = getattr(self.fed, "attack", None)
            if plan is None:
                if self.cfg.attack.kind in DATA_ATTACKS:
                    raise ValueError(f"attack.kind={self.cfg.attack.kind!r} poisons training rows when the federation is "
                                     "built: build it with fltrust.federation.prepare_federation")
                plan = AttackPlan.from_config(self.cfg, self.fed.num_clients)
            self._attack_plan = plan
        return plan


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
        if self.cfg.reliability.active:
            out["reliability"] = reliability_summary(records, self.cfg.reliability)
        return out



def system_figures(model: nn.Module, records: list[RoundRecord], params: Params) -> dict[str, Any]:
    """``model_num_params``, ``model_num_tensors``, ``model_bytes`` and traffic/time totals.

    Parameters
    ----------
    model : torch.nn.Module
        The architecture (parameter and tensor counts).
    records : list of RoundRecord
        The run's rounds; their ``bytes_sent``, ``bytes_received`` and ``train_time_s`` client
        metrics are summed into ``bytes_up_total``, ``bytes_down_total`` (bytes) and
        ``train_time_s_total`` (seconds).
    params : Params
        The final global model (``model_bytes``).

    Returns
    -------
    dict of str to Any
        The six figures named above.
    """
    n_params, n_tensors = count_parameters(model)

    def total(key: str) -> float:
        return float(sum(r.client_metrics[key].sum() for r in records if key in r.client_metrics))

    return {"model_num_params": n_params, "model_num_tensors": n_tensors,
            "model_bytes": int(sum(p.nbytes for p in params)), "bytes_up_total": total("bytes_sent"),
            "bytes_down_total": total("bytes_received"), "train_time_s_total": total("train_time_s")}


