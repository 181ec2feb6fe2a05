"""fltrust.names: every name family is spelled once, and each table that dispatches on one knows them all."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest

from fltrust import names
from fltrust.config import ConfigError, ExperimentConfig


def test_each_tuple_is_the_values_of_its_literal_type():
    pairs = [(names.TrustMode, names.TRUST_MODES), (names.FairnessMode, names.FAIRNESS_MODES),
             (names.StrategyName, names.STRATEGIES), (names.RobustStrategy, names.ROBUST_STRATEGIES),
             (names.DatasetName, names.DATASETS), (names.EngineName, names.ENGINES),
             (names.PrivacyMode, names.PRIVACY_MODES), (names.ClientMetricKey, names.CLIENT_METRIC_KEYS),
             (names.TrustFix, names.TRUST_FIXES), (names.ModelName, names.MODEL_NAMES)]
    for literal, values in pairs:
        assert values == typing.get_args(literal) and len(set(values)) == len(values)
        assert all(isinstance(v, str) for v in values)


def test_the_subsets_lie_in_their_families():
    assert set(names.ROBUST_STRATEGIES) < set(names.STRATEGIES)
    assert names.PAPER_TREE_TRUST_MODES + (names.EXTENDED_TRUST_MODE,) == names.TRUST_MODES
    assert names.DATASETS == names.REAL_DATASETS + names.SYNTHETIC_DATASETS
    assert names.SYNTHETIC_DATASETS == tuple(f"synthetic_{name}" for name in names.REAL_DATASETS)


def test_every_mode_has_its_defaults():
    assert list(names.TRUST_MODE_DEFAULTS) == list(names.TRUST_MODES)
    assert list(names.TRUST_SCORING_DEFAULTS) == list(names.TRUST_MODES)
    assert list(names.FAIRNESS_MODE_DEFAULTS) == list(names.FAIRNESS_MODES)
    for defaults in names.TRUST_SCORING_DEFAULTS.values():
        assert set(defaults["fixes"]) <= set(names.TRUST_FIXES)
    # fix B2 (docs/references.md#trust-b2) is one fact: the observer's report and the score treat a NaN value alike
    assert [d["nan_is_missing"] for d in names.TRUST_MODE_DEFAULTS.values()] == [False, True, True, True]
    assert names.TRUST_MODE_DEFAULTS["extended"] == names.TRUST_MODE_DEFAULTS["fixed"]


def test_the_old_public_names_are_the_ones_defined_here():
    from fltrust import config, experiment, settings
    from fltrust.flower.records import STANDARD_CLIENT_KEYS
    from fltrust.metrics.fairness import MODE_DEFAULTS as FAIRNESS_DEFAULTS
    from fltrust.repro.trust import experiments as trust_experiments
    from fltrust.trust import observer, scoring

    assert config.STRATEGIES is names.STRATEGIES and config.ROBUST_STRATEGIES is names.ROBUST_STRATEGIES
    assert config.DATASETS is names.DATASETS and experiment.ENGINES is names.ENGINES
    assert settings.TRUST_MODES is names.TRUST_MODES and settings.FAIRNESS_MODES is names.FAIRNESS_MODES
    assert settings.TRUST_MODE_DEFAULTS is observer.MODE_DEFAULTS is names.TRUST_MODE_DEFAULTS
    assert settings.FAIRNESS_MODE_DEFAULTS is FAIRNESS_DEFAULTS is names.FAIRNESS_MODE_DEFAULTS
    assert scoring.MODE_DEFAULTS is names.TRUST_SCORING_DEFAULTS
    assert scoring.ALL_MODES is trust_experiments.SCORING_MODES is names.TRUST_MODES
    assert scoring.MODES is trust_experiments.COMPARED_MODES is names.PAPER_TREE_TRUST_MODES
    assert STANDARD_CLIENT_KEYS is names.CLIENT_METRIC_KEYS


def test_the_dispatch_tables_know_every_name():
    from fltrust.data.registry import REFERENCE_SPECS, SPECS
    from fltrust.data.specs import INPUT_SPECS
    from fltrust.algorithms.strategies import STRATEGY_CLASSES
    from fltrust.data.synthetic import GENERATORS
    from fltrust.models import MODELS
    from fltrust.repro.trust.report import MODE_LABELS
    from fltrust.trust.factsheet import _PREPROCESSING, STRATEGY_NAMES
    from fltrust.trust.scoring import FIXES

    assert set(STRATEGY_CLASSES) == set(names.STRATEGIES)
    assert set(names.STRATEGIES) <= set(STRATEGY_NAMES)  # the FactSheet's algorithm names (plus apps' "median")
    assert set(SPECS) == set(INPUT_SPECS) == set(_PREPROCESSING) == set(names.REAL_DATASETS)
    assert set(GENERATORS) == set(names.SYNTHETIC_DATASETS)
    assert set(REFERENCE_SPECS) == set(names.REFERENCE_DATA)
    assert tuple(FIXES) == names.TRUST_FIXES  # same order: the canonical order of a fix list
    assert set(MODE_LABELS) == set(names.TRUST_MODES)
    assert tuple(MODELS) == names.MODEL_NAMES


def test_every_strategy_builds_a_flower_strategy():
    pytest.importorskip("flwr")
    from fltrust.engines.flower.strategies import build_flower_strategy

    from fltrust.algorithms.strategies import build_strategy

    for name in names.STRATEGIES:
        cfg = ExperimentConfig.tiny(strategy={"name": name})
        strategy = build_strategy(cfg.strategy, local_epochs=1, clients_per_round=cfg.clients_per_round())
        assert build_flower_strategy(strategy, clients_per_round=3, seed=0, central_loss=lambda r, a: 0.0), name


def test_every_strategy_has_default_sensitive_attributes_on_every_fairness_dataset():
    from fltrust.metrics.fairness import MetricInputError, default_sensitive_attributes

    for name in names.STRATEGIES:
        for dataset in ("cifar10", "femnist", "nsl_kdd"):
            assert default_sensitive_attributes(dataset, name)
    with pytest.raises(MetricInputError, match=r"strategy 'median' on 'nsl_kdd'; known: \['bulyan'"):
        default_sensitive_attributes("nsl_kdd", "median")


def test_the_in_process_engine_records_the_client_metric_keys_in_order(tmp_path):
    from fltrust.experiment import run_experiment

    record = run_experiment(ExperimentConfig.tiny(training={"rounds": 1}), out_dir=tmp_path)
    assert tuple(record.rounds[-1].client_metrics) == names.CLIENT_METRIC_KEYS[:-1]  # no attack: no "malicious"


@pytest.mark.parametrize(("section", "key", "family"), [
    ("metrics.trust", "mode", names.TRUST_MODES),
    ("metrics.fairness", "mode", names.FAIRNESS_MODES),
    ("strategy", "name", names.STRATEGIES),
    ("data", "name", names.DATASETS),
    ("run", "engine", names.ENGINES),
    ("privacy", "mode", names.PRIVACY_MODES),
])
def test_the_config_offers_exactly_each_family(section, key, family):
    data: dict = {}
    node = data
    for part in section.split("."):
        node = node.setdefault(part, {})
    node[key] = "nonsense"
    with pytest.raises(ConfigError) as info:
        ExperimentConfig.from_dict(data)
    assert str(info.value) == f"{section}.{key}='nonsense' is not allowed; choose one of {list(family)}"
    node[key] = 3  # a typed name is still a string to the YAML reader
    with pytest.raises(ConfigError, match=rf"^{section}\.{key}=3 must be a string; quote it"):
        ExperimentConfig.from_dict(data)


def test_the_names_import_nothing():
    code = "import sys, fltrust.names; print(sorted(m for m in sys.modules if m.startswith('fltrust')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['fltrust', 'fltrust.names']"
