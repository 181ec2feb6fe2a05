"""The ``attack``, ``reliability``, ``flower`` and ``run`` sections: what is injected into a run,
where it runs, and its identity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fltrust.config.checks import ConfigError, at_most, check_fields, fraction, nonnegative, positive, share
from fltrust.names import ATTACK_KINDS, DEVICES, ENGINES, PERSONAL_STORES, AttackKind, Device, EngineName, PersonalStore
from fltrust.settings import show


@dataclass(frozen=True)
class AttackConfig:
    """Poisoning attack run by malicious clients inside the FL loop (see :mod:`fltrust.attacks`).

    Data-level attacks (``label_flip``, ``backdoor``) rewrite copies of the malicious clients'
    training rows when the federation is built, so every engine trains on them; update-level
    attacks (``sign_flip``, ``scale``) change what a malicious client sends after its local
    training: ``w_sent = theta + s * (w - theta)`` with ``s = -1`` or ``s = scale``.

    Attributes
    ----------
    kind : str
        ``"none"``, ``"label_flip"``, ``"sign_flip"``, ``"scale"`` or ``"backdoor"``.
    malicious_clients : list of int or None
        Ids of the malicious clients; ``None`` = ``num_malicious`` clients drawn with the run seed.
    num_malicious : int
        Number of malicious clients when ``malicious_clients`` is not given.
    scale : float
        ``kind: scale``: the factor s of the update (model-replacement boosting).
    flip_fraction : float
        ``kind: label_flip``: share of each malicious client's training rows whose label is flipped.
    target_label : int or None
        ``backdoor``: the label triggered rows get (default 0). ``label_flip``: ``None`` maps
        y -> K - 1 - y, an int sends every flipped row to that label.
    poison_fraction : float
        ``backdoor``: share of each malicious client's training rows that get the trigger and
        the target label.
    trigger_size : int
        ``backdoor``: tabular data: the first ``trigger_size`` features; images: a
        ``trigger_size`` x ``trigger_size`` patch in the bottom-right corner of every channel.
    trigger_value : float or None
        Value written into the trigger (``None`` = the largest value of the training data).
    """

    kind: AttackKind = "none"
    malicious_clients: list[int] | None = None
    num_malicious: int = 0
    scale: float = 10.0
    flip_fraction: float = 1.0
    target_label: int | None = None
    poison_fraction: float = 0.5
    trigger_size: int = 3
    trigger_value: float | None = None

    def __post_init__(self) -> None:
        check_fields(self, "attack", kind=ATTACK_KINDS, num_malicious=nonnegative, flip_fraction=fraction,
                     poison_fraction=fraction, trigger_size=positive, target_label=nonnegative)
        if self.malicious_clients is not None:
            if any(c < 0 for c in self.malicious_clients) or len(set(self.malicious_clients)) != len(self.malicious_clients):
                raise ConfigError(f"attack.malicious_clients={show(self.malicious_clients)} must be distinct client ids >= 0")
        if self.kind != "none" and not (self.malicious_clients or self.num_malicious):
            raise ConfigError(f"attack.kind={self.kind!r} needs attack.num_malicious > 0 or attack.malicious_clients")


@dataclass(frozen=True)
class ReliabilityConfig:
    """Injected system failures of the sampled clients (see :mod:`fltrust.faults`).

    Each sampled client of a round falls in at most one category, drawn from a generator seeded
    by (run seed, round, client id), so both engines inject the same failures.

    Attributes
    ----------
    dropout_rate : float
        Probability that a sampled client drops out: it never trains, nothing arrives.
    failure_rate : float
        Probability that a sampled client's training raises an error (the engine catches it,
        counts it and aggregates the others).
    timeout_rate : float
        Probability that a sampled client trains but its update arrives after the round's
        deadline and is discarded.
    """

    dropout_rate: float = 0.0
    failure_rate: float = 0.0
    timeout_rate: float = 0.0

    def __post_init__(self) -> None:
        check_fields(self, "reliability", dropout_rate=share, failure_rate=share, timeout_rate=share)
        if self.dropout_rate + self.failure_rate + self.timeout_rate > 1.0:
            raise ConfigError("reliability.dropout_rate + failure_rate + timeout_rate must not exceed 1")

    @property
    def active(self) -> bool:
        """Whether any failure is injected."""
        return self.dropout_rate + self.failure_rate + self.timeout_rate > 0


@dataclass(frozen=True)
class FlowerConfig:
    """Settings of the Flower engine (``run.engine: flower``); names follow Flower's.

    Attributes
    ----------
    num_cpus, num_gpus : float
        Resources of one ClientApp (Flower's ``client_resources``); a fractional ``num_gpus``
        (e.g. 0.25) lets several clients share one GPU.
    num_supernodes : int or None
        Virtual SuperNodes of the simulation (``None`` = ``partition.num_clients``).
    ray_address : str or None
        Address of an existing Ray cluster: ``"auto"``, ``"host:port"`` or ``"ray://host:10001"``;
        ``None`` starts a local Ray instance for the run.
    ditto_personal_store : str
        Where Ditto's personal models live between rounds: ``"server"`` (sent with each training
        message, as the fairness authors stored them) or ``"client"`` (Flower's per-node
        ``context.state``). Both give the same results.
    """

    num_cpus: float = 1.0
    num_gpus: float = 0.0
    num_supernodes: int | None = None
    ray_address: str | None = None
    ditto_personal_store: PersonalStore = "server"

    def __post_init__(self) -> None:
        check_fields(self, "flower", num_cpus=positive, num_gpus=nonnegative, num_supernodes=positive)
        _check_ray_address(self.ray_address)
        check_fields(self, "flower", ditto_personal_store=PERSONAL_STORES)


RAY_ADDRESS = re.compile(r"(ray://)?(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")
"""``flower.ray_address`` besides ``auto``: ``host:port`` or ``ray://host:port`` (a local Ray is the
unset address, started on loopback by the Flower engine)."""


def _check_ray_address(address: str | None) -> None:
    if address is None or address == "auto":
        return
    match = RAY_ADDRESS.fullmatch(address)
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise ConfigError(f"flower.ray_address={show(address)} is not a Ray address; use 'auto', "
                          f"'host:port' (e.g. '10.0.0.5:6379') or 'ray://host:port' (Ray Client, e.g. port 10001), "
                          f"or leave it unset to start a local Ray")


RUN_NAME_MAX = 100
RUN_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{RUN_NAME_MAX - 1}}}")
"""Allowed ``run.name``: it starts every run folder's name, so no separators, spaces, control characters."""
SEED_MAX = 2**32 - 1
"""Largest ``run.seed + run.repeat``: numpy's legacy ``np.random.seed`` (CLEVER's sampling) takes 32 bits."""

TORCH_THREADS_MAX = 1024
"""Largest ``run.torch_threads`` (far more threads make torch's thread pool crash)."""


@dataclass(frozen=True)
class RunConfig:
    """Identity, seeds, device and output of a run.

    Attributes
    ----------
    name : str
        Human-readable experiment name (first part of the run id and of the run folder's name):
        1 to 100 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit.
    seed : int
        Master seed (model init, sampling, splits); a repeat r uses ``seed + r``.
    repeat : int
        Repeat index (0-based).
    out_dir : str
        Folder that holds run folders.
    device : str
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"`` or ``"cuda"``.
    engine : str
        ``"inprocess"`` (fltrust's own round loop, the fast single-device path) or ``"flower"``
        (Flower's simulation runtime with the Ray backend; settings in the ``flower`` section).
        Both give the same run folder and metrics.
    progress : bool
        Show a tqdm progress bar.
    checkpoint : bool
        Write a checkpoint after every round so an interrupted run resumes.
    torch_threads : int or None
        CPU threads for torch, 1 to 1024 (``None`` = torch's default). Small models on few cores
        run fastest with 1 thread per process.
    deviations : list of str
        Where this configuration departs from the paper it reproduces (stored with the run and
        printed under every table that uses it).
    """

    name: str = "experiment"
    seed: int = 0
    repeat: int = 0
    out_dir: str = "runs"
    device: Device = "auto"
    engine: EngineName = "inprocess"
    progress: bool = True
    checkpoint: bool = True
    torch_threads: int | None = None
    deviations: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_fields(self, "run", device=DEVICES, engine=ENGINES, seed=nonnegative, repeat=nonnegative)
        if self.seed + self.repeat > SEED_MAX:
            raise ConfigError(f"run.seed={self.seed} with run.repeat={self.repeat} is too large: seed + repeat must be "
                              f"at most {SEED_MAX:,} (numpy's legacy seeding, used for CLEVER, takes 32 bits)")
        check_fields(self, "run", torch_threads=positive)
        at_most("run", "torch_threads", self.torch_threads, TORCH_THREADS_MAX, "CPU threads of one process")
        if not RUN_NAME.fullmatch(self.name):
            raise ConfigError(
                f"run.name={show(self.name)} must be 1 to {RUN_NAME_MAX} characters: letters, digits, '.', '_' and "
                f"'-', starting with a letter or digit (it becomes the run folder's name)")

