"""The whole experiment: :class:`ExperimentConfig` (the sections together and the checks across
them), its run id and config hash, and building it from nested dicts and YAML files.

Building (:func:`_build`) checks keys and coerces values against the sections' type hints; every
float is checked finite there (:func:`_check_finite` for direct construction). Whether the model
takes the dataset's inputs, and the rules that tie a component to the rest of the run -- a
strategy's preconditions (Krum's ``m >= 2f + 3``), the strategies and engines a privacy mechanism
works with, the strategies SecAgg+ can aggregate -- belong to the components and are checked
above them, by :func:`fltrust.compatibility.check_compatible` and
:func:`fltrust.experiment.check_experiment`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fltrust.config.checks import ConfigError
from fltrust.config.data import DataConfig, ModelConfig, PartitionConfig
from fltrust.config.learning import PrivacyConfig, StrategyConfig, TrainingConfig
from fltrust.config.loading import apply_overrides, read_config_file
from fltrust.config.paper_metrics import MetricsConfig, ProjectConfig
from fltrust.config.run import AttackConfig, FlowerConfig, ReliabilityConfig, RunConfig
from fltrust.settings import show


@dataclass(frozen=True)
class ExperimentConfig:
    """A complete, validated experiment description."""

    data: DataConfig = field(default_factory=DataConfig)
    partition: PartitionConfig = field(default_factory=PartitionConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    attack: AttackConfig = field(default_factory=AttackConfig)
    reliability: ReliabilityConfig = field(default_factory=ReliabilityConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    project: ProjectConfig = field(default_factory=ProjectConfig)
    run: RunConfig = field(default_factory=RunConfig)
    flower: FlowerConfig = field(default_factory=FlowerConfig)

    def __post_init__(self) -> None:
        _check_finite(self, "")
        per_round = self.clients_per_round()
        if per_round > self.partition.num_clients:
            raise ConfigError(
                f"strategy.clients_per_round={per_round} exceeds partition.num_clients={self.partition.num_clients}"
            )

        self._check_attack()
        if self.privacy.secure_aggregation == "secagg+" and self.run.engine != "flower":
            raise ConfigError("privacy.secure_aggregation='secagg+' runs Flower's SecAgg+ protocol, which the in-process "
                              "engine does not have: set run.engine=flower")

    def _check_attack(self) -> None:
        a = self.attack
        if a.kind == "none":
            return
        clients = self.partition.num_clients
        bad = [c for c in (a.malicious_clients or []) if c >= clients]
        if bad:
            raise ConfigError(f"attack.malicious_clients {bad} are not client ids (partition.num_clients={clients})")
        if a.malicious_clients is None and a.num_malicious > clients:
            raise ConfigError(f"attack.num_malicious={a.num_malicious} exceeds partition.num_clients={clients}")

    # -- derived values -------------------------------------------------------------------
    def clients_per_round(self) -> int:
        """Clients sampled per round (Flower: ``int(C * fraction_fit)``, at least 1)."""
        if self.strategy.clients_per_round is not None:
            return self.strategy.clients_per_round
        assert self.strategy.fraction_fit is not None
        return max(1, int(self.partition.num_clients * self.strategy.fraction_fit))

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (what is saved with every run)."""
        return dataclasses.asdict(self)

    def config_hash(self) -> str:
        """Hash of the settings that differ from the defaults, without run identity.

        Only non-default values enter the hash, so adding a new option (with a default) to the
        kit does not change the ids of existing runs. Seed, repeat, output folder, device,
        threads, progress and checkpoint settings are excluded.
        """
        data = _non_default(self.to_dict(), ExperimentConfig().to_dict())
        for key in ("seed", "repeat", "out_dir", "progress", "device", "checkpoint", "torch_threads"):
            data.get("run", {}).pop(key, None)
        data.pop("flower", None)  # where clients run changes nothing in the results
        data.get("training", {}).pop("vectorize", None)  # speed switches: same results to float rounding
        data.get("metrics", {}).get("fairness", {}).pop("aux_batch_size", None)
        data = {k: v for k, v in data.items() if v != {}}
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:10]

    def run_id(self) -> str:
        """``<name>-<config hash>-s<seed>-r<repeat>``."""
        return f"{self.run.name}-{self.config_hash()}-s{self.run.seed}-r{self.run.repeat}"

    def effective_seed(self) -> int:
        """Seed of this repeat."""
        return self.run.seed + self.run.repeat

    def with_overrides(self, overrides: dict[str, Any]) -> ExperimentConfig:
        """A new config with dotted-path overrides applied (``{"training.rounds": 3}``)."""
        data = self.to_dict()
        apply_overrides(data, overrides)
        return ExperimentConfig.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ExperimentConfig:
        """Build and validate from a nested dict; unknown keys raise :class:`ConfigError`."""
        return _build(cls, data or {}, "")

    @classmethod
    def tiny(cls, **sections: dict[str, Any]) -> ExperimentConfig:
        """A seconds-long experiment for tests, docs and trying things out: synthetic NSL-KDD
        (600 rows), 6 iid clients, 3 per round, 3 rounds of 1 local epoch, on the CPU.

        ``sections`` update the matching sections key by key (nested dicts merge), e.g.
        ``ExperimentConfig.tiny(strategy={"name": "ditto"}, metrics={"fairness": {"enabled": True}})``.
        """
        data: dict[str, Any] = {
            "data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 600},
            "partition": {"num_clients": 6, "scheme": "iid"},
            "model": {"name": "nsl_kdd_mlp"},
            "strategy": {"name": "fedavg", "clients_per_round": 3},
            "training": {"rounds": 3, "local_epochs": 1, "batch_size": 32},
            "run": {"name": "tiny", "progress": False, "torch_threads": 1, "device": "cpu"},
        }
        apply_overrides(data, {f"{name}.{key}": value for name, section in sections.items() for key, value in section.items()})
        return cls.from_dict(data)

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
        """Load a YAML file and apply dotted-path overrides."""
        return load_config(path, overrides)


def _non_default(data: dict[str, Any], default: dict[str, Any]) -> dict[str, Any]:
    """The entries of nested ``data`` that differ from ``default`` (a mapping whose default is not one,
    e.g. ``metrics.fairness.notion_weights`` naming a registered notion, counts as a whole)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(default.get(key, {}), dict):
            sub = _non_default(value, default.get(key, {}))
            if sub:
                out[key] = sub
        elif default.get(key, object()) != value:
            out[key] = value
    return out


def _build(cls: type, data: Any, prefix: str) -> Any:
    """Recursively build dataclass ``cls`` from ``data``, checking keys and types."""
    where = prefix.rstrip(".") or "config"
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown key(s) {[prefix + k for k in unknown]} in {where}; allowed: {sorted(known)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value, f"{prefix}{name}.")
        else:
            kwargs[name] = _coerce(value, hint, f"{prefix}{name}")
    try:
        return cls(**kwargs)
    except TypeError as exc:  # pragma: no cover - defensive
        raise ConfigError(f"{where}: {exc}") from exc


def _coerce(value: Any, hint: Any, path: str) -> Any:
    """Check ``value`` against a simple type hint; ints are accepted where floats are expected."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:  # a name of fltrust.names: a string here; its section checks the value
        return _coerce(value, type(args[0]), path)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, arg, path)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{path}: invalid value {show(value)}")
    if origin is list:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            raise ConfigError(f"{path}={show(value)} must be a list")
        return [_coerce(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)] if args else value
    if hint is float:
        if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no decimal point) as a string
            try:
                value = float(value.strip())
            except ValueError:
                raise ConfigError(f"{path}={show(value)} must be a number") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}={show(value)} must be a number")
        if not math.isfinite(value):
            raise ConfigError(f"{path}={show(value)} must be a finite number (NaN and infinity are not allowed)")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}={show(value)} must be an integer")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}={show(value)} must be true or false")
        return value
    if hint is str:
        if isinstance(value, bool):  # YAML 1.1: unquoted on/off/yes/no/true/false are booleans
            raise ConfigError(f"{path}={show(value)} must be a string; YAML reads an unquoted on, off, yes, no, "
                              f"true or false as a boolean: quote it, e.g. {path}: 'on' (--set \"{path}='on'\")")
        if not isinstance(value, str):
            hint = "; quote it: YAML read it as a number" if isinstance(value, (int, float)) else ""
            raise ConfigError(f"{path}={show(value)} must be a string{hint}")
        return value
    return value


def _check_finite(obj: Any, prefix: str) -> None:
    """Reject NaN/infinity anywhere in a config built without :func:`_coerce` (direct construction)."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        path = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            _check_finite(value, path + ".")
            continue
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, float) and not math.isfinite(item) for item in items):
            raise ConfigError(f"{path}={show(value)} must be a finite number (NaN and infinity are not allowed)")


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Load an :class:`ExperimentConfig` from YAML with optional dotted-path overrides."""
    data = read_config_file(path)
    apply_overrides(data, overrides or {})
    return ExperimentConfig.from_dict(data)
