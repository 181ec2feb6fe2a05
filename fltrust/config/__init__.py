"""Experiment configuration: nested frozen dataclasses loaded from YAML.

One :class:`ExperimentConfig` describes a run completely. It is loaded with
:func:`load_config` (a YAML file plus ``key.path=value`` overrides), validated on
construction, and saved verbatim (``to_dict``) with every run.

Rules
-----
- Unknown keys are errors, never ignored (the message names the key and lists the allowed ones).
- Every choice-valued field names its allowed values when it is wrong.
- ``None`` in a fairness/trust switch means "the mode's default" (see those modules).
- Every float must be finite (NaN and infinities are rejected for every float field, in one place:
  the coercion layer). Strings such as ``"1e-3"`` are accepted for float fields because PyYAML
  (YAML 1.1) reads ``1e-3`` -- an exponent without a decimal point -- as a string.
- YAML syntax errors name ``file:line:column``; a ``--set`` value that is not valid YAML names the
  override.
- The model must accept the dataset's input (checked before any run folder exists): the message
  names the model/dataset pair and the models that fit the dataset.

Example
-------
>>> cfg = ExperimentConfig.from_dict({"data": {"name": "synthetic_nsl_kdd"},
...                                    "partition": {"num_clients": 4}})
>>> cfg.partition.num_clients
4

Modules
-------
- :mod:`~fltrust.config.checks`: :class:`ConfigError` and the value checks the sections use
  (``choice``, ``positive``, ``nonnegative``, ``at_most``, ``fraction``, ``share``; ``check_fields``
  runs a section's rules, field by field).
- :mod:`~fltrust.config.data`: the ``data``, ``partition`` and ``model`` sections
  (:class:`DataConfig`, :class:`PartitionConfig`, :class:`ModelConfig`).
- :mod:`~fltrust.config.learning`: ``strategy``, ``training`` and ``privacy``
  (:class:`StrategyConfig`, :class:`TrainingConfig`, :class:`PrivacyConfig`).
- :mod:`~fltrust.config.paper_metrics`: ``metrics.fairness``, ``metrics.trust`` and ``project``
  (:class:`FairnessConfig`, :class:`TrustConfig`, :class:`MetricsConfig`, :class:`ProjectConfig`)
  and the settings the observers get from them (:func:`fairness_settings`, :func:`trust_settings`).
- :mod:`~fltrust.config.run`: ``attack``, ``reliability``, ``flower`` and ``run``
  (:class:`AttackConfig`, :class:`ReliabilityConfig`, :class:`FlowerConfig`, :class:`RunConfig`).
- :mod:`~fltrust.config.experiment`: :class:`ExperimentConfig` (checks across sections, run id,
  config hash), building from dicts (key and type checks) and :func:`load_config`. Checks that
  need a component (does the model take the dataset's inputs?) live above the components, in
  :mod:`fltrust.compatibility`.
- :mod:`~fltrust.config.loading`: YAML in and out: :class:`ConfigLoader` (the safe loader),
  :func:`parse_overrides`, :func:`apply_overrides`, :func:`read_config_file`, :func:`config_yaml`,
  :func:`save_config`.

Every name below is importable from ``fltrust.config`` (the name families it checks are defined
in :mod:`fltrust.names`, the metrics' settings in :mod:`fltrust.settings`); the modules import only
:mod:`fltrust.names`, :mod:`fltrust.settings` and each other (the models, data specs, trust
declarations and atomic writer lazily, where used), never an engine or the experiment runner.
"""

from fltrust.config.checks import ConfigError
from fltrust.config.data import DataConfig, ModelConfig, PartitionConfig
from fltrust.config.experiment import ExperimentConfig, load_config
from fltrust.config.learning import PrivacyConfig, StrategyConfig, TrainingConfig
from fltrust.config.loading import ConfigLoader, apply_overrides, config_yaml, parse_overrides, read_config_file, save_config
from fltrust.config.paper_metrics import (
    FairnessConfig,
    MetricsConfig,
    ProjectConfig,
    TrustConfig,
    fairness_settings,
    trust_settings,
)
from fltrust.config.run import (
    RAY_ADDRESS,
    RUN_NAME,
    RUN_NAME_MAX,
    TORCH_THREADS_MAX,
    AttackConfig,
    FlowerConfig,
    ReliabilityConfig,
    RunConfig,
)

__all__ = [
    # errors
    "ConfigError",
    # the sections (fltrust.config.data, .learning, .paper_metrics, .run)
    "DataConfig", "PartitionConfig", "ModelConfig",
    "StrategyConfig", "TrainingConfig", "PrivacyConfig",
    "FairnessConfig", "TrustConfig", "MetricsConfig", "ProjectConfig", "fairness_settings", "trust_settings",
    "AttackConfig", "ReliabilityConfig", "FlowerConfig", "RunConfig",
    # their constants
    "RAY_ADDRESS", "RUN_NAME", "RUN_NAME_MAX", "TORCH_THREADS_MAX",
    # the whole experiment (fltrust.config.experiment)
    "ExperimentConfig", "load_config",
    # YAML in and out (fltrust.config.loading)
    "ConfigLoader", "parse_overrides", "apply_overrides", "read_config_file", "config_yaml", "save_config",
]
