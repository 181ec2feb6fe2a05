"""FederatedTrust experiments 1-5 (paper Section 6, Figures 4-5), generated from one definition.

Paper: "FederatedTrust: A Solution for Trustworthy Federated Learning", Section 6; trust spec §7.1 (setups), §7.2
(reported numbers) and §7.3 (which normalisations reproduce them): docs/references.md#trust-7-1, #trust-7-2,
#trust-7-3.

=====  ==========================  ===  ==========  ======  ===========  ==========  =======================
exp    data                        N    rate        rounds  DP           strategy    model
=====  ==========================  ===  ==========  ======  ===========  ==========  =======================
exp1   FEMNIST (311-writer pool)   10   50 %        5       none         FedAvg      ConvNet2
exp2   FEMNIST (311-writer pool)   50   60 %        25      NbAFL 20     FedAvg      ConvNet2
exp3   FEMNIST (311-writer pool)   100  40 %        50      NbAFL 6      FedAvg      ConvNet2
exp4   N-BaIoT (SYNTHETIC)         9    70 %        [20]    none         FedAvg      MLP 115-50-50-2
exp5   N-BaIoT (SYNTHETIC)         9    90 %        [20]    local eps 4  FedMedian   MLP 115-100-80-70-50-2
=====  ==========================  ===  ==========  ======  ===========  ==========  =======================

[20]: not stated in the paper; chosen here. Every experiment trains as the authors' FederatedScope
example config (trust spec 7.1): SGD, learning rate 0.01, batch 10, one local epoch, gradient
clipping 5, uniform random client sampling, project purpose and background left empty.

Local adaptations (stored in every configuration's ``run.deviations``, printed under every table):

- N-BaIoT is not on this machine: experiments 4-5 run on the SYNTHETIC stand-in
  (:func:`fltrust.data.synthetic.synthetic_n_baiot`); their numbers say nothing about real traffic.
- Differential privacy of experiments 2-3: the paper does not say which mechanism; the prototype
  reads FederatedScope's NbAFL switch, so fltrust runs NbAFL as FederatedScope implements it
  (``privacy.mode: nbafl``, :class:`fltrust.algorithms.privacy.NbAFL`) with the prototype's constants
  (:data:`NBAFL_PROTOTYPE`) and the paper's epsilon.
- Scale: experiments 1-3 run at the paper's settings (N writers of the 311-writer pool, every
  writer's rows, the paper's rounds). :class:`CpuScale` remains the one place to shrink an
  experiment that would not fit a machine; ``full_scale=True`` ignores it.

Modes: an experiment is scored in each of :data:`fltrust.names.TRUST_MODES`; RESULTS.md compares
:data:`fltrust.names.PAPER_TREE_TRUST_MODES` with the paper's numbers (extended mode scores 16 metrics
and a pillar the paper does not have; it gets its own table). Extended mode
(:data:`fltrust.names.EXTENDED_TRUST_MODE`) needs what a replay cannot give: the per-round client
models (client reputation, data quality, model co-versioning: ``RoundRecord.client_params`` are not
saved in ``rounds.jsonl``), the clients' training rows (membership inference) and the energy of the
rounds. So its FactSheet is measured live, not by :func:`fltrust.repro.trust.run.mode_factsheet`'s
replay: by a second, extended-mode trust observer riding along in the run
(:class:`fltrust.repro.trust.run.ModeObserver`), or, for a run finished without it, by a *companion
run* of the same configuration made with ``metrics.trust.mode: extended`` (same seed, data and
training; its own run id).

Running and scoring the experiments is :mod:`fltrust.repro.trust.run`; the attack ablation on
experiment 4 is :mod:`fltrust.repro.trust.ablation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fltrust.config import ExperimentConfig
from fltrust.names import TRUST_MODES, Device, TrustMode
from fltrust.repro.paths import repo_root, resource_root, write_configs
REPO = repo_root()  # where outputs go: the checkout, or the cwd of a wheel outside one (fltrust.repro.paths)
PAPER_DIR = REPO / "papers_repro" / "federatedtrust"
"""The paper folder of the outputs: results, run folders, RESULTS.md."""
PAPER_INPUTS = resource_root() / "papers_repro" / "federatedtrust"
"""The paper folder of the inputs (configs, reported.yaml, the N-BaIoT comparison): the checkout's, or the wheel's copy."""
CONFIG_DIR = PAPER_INPUTS / "configs"

RUN_MODE: TrustMode = "paper"
"""Trust mode of the observer attached to the run itself (its ``factsheet.json``); other modes
are replayed from the run record. Fixed so that the run id does not depend on the modes asked for."""


TRAINING = {
    "rounds": 5,
    "local_epochs": 1,
    "batch_size": 10,
    "optimizer": "sgd",
    "learning_rate": 0.01,
    "grad_clip": 5.0,
}
"""FederatedScope example config of the prototype (trust spec 7.1): SGD lr 0.01, batch 10, one
local epoch, grad_clip 5 (momentum and weight decay 0, FederatedScope's defaults)."""

FEDERATEDSCOPE_SPLITS = (0.6, 0.2, 0.2)
"""FederatedScope's per-client ``data.splits`` [train, val, test] (trust spec 7.1)."""

NBAIOT_SYNTHETIC_SAMPLES = 20_000
"""Training rows of the synthetic N-BaIoT stand-in (the test split gets a quarter)."""


class TrustExperimentError(ValueError):
    """Unknown experiment or mode, or a run that cannot be scored; the message names the fix."""


@dataclass(frozen=True)
class CpuScale:
    """How an experiment is shrunk to fit this machine (``None`` = the paper's value).

    Attributes
    ----------
    rounds : int or None
        Training rounds T.
    max_train_samples : int or None
        Seeded subsample of the FEMNIST training split before partitioning (``data.max_train_samples``):
        every writer keeps about this share of its samples, so every local update is cheaper while
        N, the selection rate and the rounds stay as in the paper.
    reason : str
        Why, with the measurement behind it.
    """

    rounds: int | None = None
    max_train_samples: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class TrustExperiment:
    """One experiment of paper Section 6 (trust spec 7.1).

    Attributes
    ----------
    name : str
        ``"exp1"`` ... ``"exp5"``.
    title : str
        One-line description.
    figure : str
        Paper figure that shows it.
    dataset : str
        ``data.name``.
    paper_dataset : str
        The paper's dataset.
    num_clients : int
        N.
    fraction : float
        Clients sampled per round / N (Flower and FederatedScope round ``N * rate`` down).
    rounds : int
        Rounds T run here at full scale.
    rounds_stated : bool
        Whether the paper states T (experiments 4-5 do not).
    privacy : str
        ``privacy.mode``.
    epsilon : float or None
        DP budget.
    strategy : str
        ``strategy.name``.
    model : str
        ``model.name``.
    balance : bool
        N-BaIoT 50/50 benign/attack balancing per client.
    scale : CpuScale or None
        The CPU-budget version; ``None`` = full scale fits.
    notes : tuple of str
        Experiment-specific deviations.
    """

    name: str
    title: str
    figure: str
    dataset: str
    paper_dataset: str
    num_clients: int
    fraction: float
    rounds: int
    rounds_stated: bool
    privacy: str
    epsilon: float | None
    strategy: str
    model: str
    balance: bool = False
    scale: CpuScale | None = None
    notes: tuple[str, ...] = ()

    @property
    def synthetic(self) -> bool:
        """True when the experiment runs on a generated stand-in."""
        return self.dataset.startswith("synthetic_")


_FEMNIST_NOTES = (
    "FEMNIST: the 311-writer pool of three LEAF runs on this machine (LEAF niid sampling fraction 0.05, like "
    "FederatedScope's subsample 0.05; one copy per writer id); the N clients are N writers drawn with the run seed, "
    "each with all of its LEAF training rows",
    "each client's rows split 0.6/0.2/0.2 into train/validation/test as FederatedScope's data.splits "
    "(partition.client_splits); performance = mean accuracy of the global model received in the last round on the "
    "last round's participants' test parts; the server's auxiliary set = 500 of the writers' LEAF test rows",
)
FEMNIST_NORMALIZE = (0.1307, 0.3081)
"""``Normalize(mean, std)`` of the FederatedTrust prototype's FederatedScope FEMNIST configuration
(``data.transform``), applied to LEAF's [0, 1] pixels (``data.normalize``)."""
NBAFL_PROTOTYPE = {"nbafl_mu": 0.01, "nbafl_w_clip": 0.1, "nbafl_constant": 1.0}
"""The NbAFL constants of the FederatedTrust prototype's FederatedScope configs (its FEMNIST config
and example ``fs_config.yaml``: ``nbafl.mu`` 0.01, ``nbafl.w_clip`` 0.1, ``nbafl.constant`` 1); the
experiment's epsilon is the paper's. FederatedScope's own defaults (w_clip 1, constant 30) put
about 300x more noise on every upload."""

_DP_NOTE = (
    "DP mechanism: NbAFL as FederatedScope implements it (privacy.mode: nbafl, fltrust.algorithms.privacy.NbAFL), the "
    "mechanism the prototype switches on (cfg.nbafl): proximal term mu=0.01, every upload perturbed with Gaussian "
    "noise of std w_clip*T*c/(n_k*epsilon) with the prototype's constants w_clip=0.1, c=1, epsilon={eps:g}; every "
    "broadcast clipped entrywise to [-0.1, 0.1]; no server noise, since T <= sqrt(N)*K here. FederatedScope does no "
    "privacy accounting: epsilon is the configured value"
)
_NBAIOT_NOTES = (
    "N-BaIoT: SYNTHETIC stand-in (fltrust.data.synthetic.synthetic_n_baiot: 9 devices as natural clients, 115 "
    f"standardised features, about 80 % attack rows, {NBAIOT_SYNTHETIC_SAMPLES:,} training rows); the real UCI archive "
    "is not on this machine, so every number of this experiment is about generated data",
    "rounds not stated in the paper: 20 chosen for both N-BaIoT experiments (CPU seconds; on the stand-in experiment "
    "4's model reaches 100 % server accuracy well before, experiment 5's DP-SGD model is still improving)",
    "training settings not stated for N-BaIoT: the FederatedScope settings of the FEMNIST experiments are reused "
    "(SGD lr 0.01, batch 10, one local epoch, grad clip 5)",
)

EXPERIMENTS: dict[str, TrustExperiment] = {
    e.name: e
    for e in (
        TrustExperiment(
            "exp1", "FEMNIST, 10 clients, 50 % per round, 5 rounds, no DP", "Fig. 4", "femnist", "FEMNIST",
            10, 0.5, 5, True, "none", None, "fedavg", "convnet2",
            notes=_FEMNIST_NOTES,
        ),
        TrustExperiment(
            "exp2", "FEMNIST, 50 clients, 60 % per round, 25 rounds, DP epsilon 20", "Fig. 4", "femnist", "FEMNIST",
            50, 0.6, 25, True, "nbafl", 20.0, "fedavg", "convnet2",
            notes=_FEMNIST_NOTES + (_DP_NOTE.format(eps=20.0),),
        ),
        TrustExperiment(
            "exp3", "FEMNIST, 100 clients, 40 % per round, 50 rounds, DP epsilon 6", "Fig. 4", "femnist", "FEMNIST",
            100, 0.4, 50, True, "nbafl", 6.0, "fedavg", "convnet2",
            notes=_FEMNIST_NOTES + (_DP_NOTE.format(eps=6.0),),
        ),
        TrustExperiment(
            "exp4", "N-BaIoT (SYNTHETIC), 9 devices, 70 % per round, FedAvg, no DP, MLP 50-50", "Fig. 5",
            "synthetic_n_baiot", "N-BaIoT", 9, 0.7, 20, False, "none", None, "fedavg", "nbaiot_mlp_50_50",
            notes=_NBAIOT_NOTES + ("no data balancing: about 20/80 benign/attack, as in the paper",),
        ),
        TrustExperiment(
            "exp5", "N-BaIoT (SYNTHETIC), 9 devices, 90 % per round, FedMedian, local DP epsilon 4, MLP 100-80-70-50",
            "Fig. 5", "synthetic_n_baiot", "N-BaIoT", 9, 0.9, 20, False, "local", 4.0, "fedmedian",
            "nbaiot_mlp_100_80_70_50", balance=True,
            notes=_NBAIOT_NOTES + (
                "local DP = DP-SGD with Opacus on every client (per-sample clipping norm 1, noise calibrated so that a "
                "client selected in every round spends at most epsilon=4, delta=1e-5); the paper names local DP "
                "without its mechanism",
                "local 50/50 benign/attack balancing per client (data.balance: true)",
            ),
        ),
    )
}
"""The five experiments of paper Section 6, by name."""

QUICK_OVERRIDES: dict[str, Any] = {
    "training.rounds": 2,
    "data.max_test_samples": 400,
    "partition.aux_max_samples": 200,
    "metrics.trust.clever_nb_batches": 2,
    "metrics.trust.clever_batch_size": 2,
    "metrics.trust.clever_pool_factor": 1,
    "metrics.trust.shap_background": 4,
    "metrics.trust.shap_samples": 1,
    "metrics.trust.shap_nsamples": 16,
    "metrics.trust.evasion_samples": 20,
    "metrics.trust.mia_samples": 50,
    "metrics.trust.reference_samples": 64,
    "data.allow_synthetic_fallback": True,
}
"""Applied by ``quick=True`` on top of the full-scale config (with :func:`quick_overrides`'
client count and data size): a CPU-seconds smoke run (2 rounds, small CLEVER, SHAP, evasion,
membership-inference and reputation samples; the labelled synthetic stand-in where the real data
is missing). Every stage still runs. Not comparable with the paper.
On FEMNIST's 62 classes CLEVER and SHAP cost one gradient per class and sample: CLEVER's pool
factor 1 makes it seconds instead of a minute (``shap_nsamples`` only matters for a model that
SHAP's DeepExplainer cannot take, which none of the five experiments' models is)."""

QUICK_MAX_CLIENTS = 10
"""Clients N of an experiment in quick mode (at most; the selection rate stays the paper's): experiments
2-3 train 30 and 40 ConvNet2 clients (6.6 M parameters) per round at full N, a minute per quick run."""

QUICK_FEMNIST_FALLBACK_SAMPLES = 4000
"""Rows of the FEMNIST stand-in in quick mode when the real data is missing: every one of its 110
writers gets at least 3 (with the experiments' seed), so the 100 clients of experiment 3 can split
0.6/0.2/0.2 (with the default 2,000, one writer has a single row and experiments 2-3 fail)."""


def _experiment(name: str) -> TrustExperiment:
    if name not in EXPERIMENTS:
        raise TrustExperimentError(f"unknown trust experiment {name!r}; choose one of {list(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def run_name(name: str) -> str:
    """Run name (and FactSheet ``project/overview``) of an experiment: ``federatedtrust_<exp>``."""
    return f"federatedtrust_{_experiment(name).name}"


def experiment_dict(name: str, *, full_scale: bool = False) -> dict[str, Any]:
    """The configuration of one experiment as a nested dict (what ``configs/<name>.yaml`` holds).

    Parameters
    ----------
    name : str
        ``"exp1"`` ... ``"exp5"``.
    full_scale : bool
        ``True`` ignores the experiment's :class:`CpuScale` (the paper's rounds and all samples).

    Returns
    -------
    dict
        Sections ``data``, ``partition``, ``model``, ``strategy``, ``training``, ``privacy``,
        ``metrics``, ``project``, ``run`` (valid for :meth:`ExperimentConfig.from_dict`).
    """
    e = _experiment(name)
    scale = None if full_scale else e.scale
    data: dict[str, Any] = {"name": e.dataset}
    if e.dataset == "femnist":  # the prototype's FederatedScope transform on LEAF's [0, 1] pixels
        data["normalize"] = list(FEMNIST_NORMALIZE)
    if e.synthetic:
        data["synthetic_samples"] = NBAIOT_SYNTHETIC_SAMPLES
    if e.balance:
        data["balance"] = True
    if scale is not None and scale.max_train_samples is not None:
        data["max_train_samples"] = scale.max_train_samples
    partition: dict[str, Any] = {"num_clients": e.num_clients, "scheme": "natural",
                                 "client_splits": list(FEDERATEDSCOPE_SPLITS), "aux_max_samples": 500}
    training = dict(TRAINING, rounds=e.rounds if scale is None or scale.rounds is None else scale.rounds)
    privacy: dict[str, Any] = {"mode": e.privacy}
    if e.epsilon is not None:
        privacy.update(target_epsilon=e.epsilon, delta=1e-5)
    if e.privacy == "nbafl":
        privacy.update(NBAFL_PROTOTYPE)
    deviations = list(e.notes)
    if scale is not None:
        deviations.append(scale.reason)
    return {
        "data": data,
        "partition": partition,
        "model": {"name": e.model},
        "strategy": {"name": e.strategy, "fraction_fit": e.fraction},
        "training": training,
        "privacy": privacy,
        "metrics": {"trust": {"enabled": True, "mode": RUN_MODE, "client_selector": "uniform"}},
        # purpose and background left empty, as in the paper (project_specs = 1/3)
        "project": {"overview": run_name(name), "purpose": "", "background": ""},
        "run": {"name": run_name(name), "seed": 12345, "torch_threads": 1, "deviations": deviations},
    }


def quick_overrides(name: str) -> dict[str, Any]:
    """Quick-mode overrides for one experiment: :data:`QUICK_OVERRIDES`, at most :data:`QUICK_MAX_CLIENTS`
    clients and a data size."""
    e = _experiment(name)
    out = dict(QUICK_OVERRIDES)
    out["partition.num_clients"] = min(e.num_clients, QUICK_MAX_CLIENTS)
    if e.synthetic:
        out["data.synthetic_samples"] = 1500
    elif e.dataset == "femnist":
        out["data.synthetic_samples"] = QUICK_FEMNIST_FALLBACK_SAMPLES  # used by the stand-in only
    return out


def experiment_config(
    name: str,
    *,
    mode: str = RUN_MODE,
    quick: bool = False,
    device: Device = "auto",
    data_dir: str | Path | None = None,
    full_scale: bool = False,
) -> ExperimentConfig:
    """The validated configuration of one experiment.

    Parameters
    ----------
    name : str
        ``"exp1"`` ... ``"exp5"``.
    mode : str
        ``metrics.trust.mode`` of the run's observer (``"prototype"``, ``"paper"``, ``"fixed"``, ``"extended"``).
    quick : bool
        Apply :func:`quick_overrides` (2 rounds, small data; not comparable with the paper).
    device : str
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    data_dir : str, Path or None
        Data root (``data.root``); ``None`` = ``$FLTRUST_DATA``.
    full_scale : bool
        The paper's settings without the CPU-budget :class:`CpuScale`.

    Returns
    -------
    ExperimentConfig
    """
    if mode not in TRUST_MODES:
        raise TrustExperimentError(f"mode={mode!r} is not a trust mode; choose one of {list(TRUST_MODES)}")
    overrides: dict[str, Any] = {"metrics.trust.mode": mode, "run.device": device}
    if quick:
        overrides.update(quick_overrides(name))
    if data_dir:
        overrides["data.root"] = str(data_dir)
    cfg = ExperimentConfig.from_dict(experiment_dict(name, full_scale=full_scale))
    return cfg.with_overrides(overrides)


def write_experiment_configs(folder: str | Path = CONFIG_DIR) -> list[Path]:
    """Write ``exp1.yaml`` ... ``exp5.yaml`` (validated) into ``folder``; returns their paths."""
    return write_configs(folder, (
        (name, experiment_dict(name),
         "# Generated by fltrust.repro.trust.experiments.write_experiment_configs -- do not edit by hand.\n"
         f"# FederatedTrust {e.figure}, experiment {name[3:]}: {e.title}\n")
        for name, e in EXPERIMENTS.items()))


__all__ = [
    "CONFIG_DIR",
    "EXPERIMENTS",
    "FEDERATEDSCOPE_SPLITS",
    "NBAFL_PROTOTYPE",
    "NBAIOT_SYNTHETIC_SAMPLES",
    "PAPER_DIR",
    "PAPER_INPUTS",
    "QUICK_FEMNIST_FALLBACK_SAMPLES",
    "QUICK_MAX_CLIENTS",
    "QUICK_OVERRIDES",
    "RUN_MODE",
    "TRAINING",
    "CpuScale",
    "TrustExperiment",
    "TrustExperimentError",
    "experiment_config",
    "experiment_dict",
    "quick_overrides",
    "run_name",
    "write_experiment_configs",
]
