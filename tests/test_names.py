"""fltrust.names: every name family is spelled once, and each table that dispatches on one knows them all."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import typing

import pytest

import fltrust
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


def test_every_literal_has_its_tuple_and_every_tuple_its_literal():
    literals = {name: typing.get_args(value) for name, value in vars(names).items()
                if typing.get_origin(value) is typing.Literal}
    tuples = {name: value for name, value in vars(names).items() if name.isupper() and isinstance(value, tuple)}
    assert set(literals.values()) <= set(tuples.values()), "a Literal without the tuple of its values"
    assert set(tuples.values()) - set(literals.values()) == {names.PAPER_TREE_TRUST_MODES}  # the one derived subset
    for values in literals.values():
        assert len(set(values)) == len(values) and all(isinstance(v, (str, int)) for v in values)
    assert set(names.ATTACK_KINDS) == {"none", *names.DATA_ATTACKS, *names.UPDATE_ATTACKS}


def test_the_core_spells_the_loss_scalings_as_the_names_do():
    from fltrust.core.evaluation import LOSS_SCALINGS  # the core imports nothing else of fltrust

    assert LOSS_SCALINGS == names.LOSS_SCALINGS


def _literal_fields(cls, prefix=""):
    """(dotted path, Literal values, optional) of every Literal-typed field of a config section, recursively."""
    import dataclasses

    for f in dataclasses.fields(cls):
        hint = typing.get_type_hints(cls)[f.name]
        if dataclasses.is_dataclass(hint):
            yield from _literal_fields(hint, f"{prefix}{f.name}.")
            continue
        args = typing.get_args(hint)
        optional = type(None) in args
        literal = next((a for a in args if typing.get_origin(a) is typing.Literal), hint) if optional else hint
        if typing.get_origin(literal) is typing.Literal:
            yield f"{prefix}{f.name}", typing.get_args(literal), optional


def test_every_option_field_is_checked_against_its_literal():
    from fltrust.settings import FairnessSettings, SettingsError, TrustSettings

    fields = list(_literal_fields(ExperimentConfig))
    assert {"training.optimizer", "partition.scheme", "attack.kind", "metrics.fairness.reward", "run.device",
            "privacy.secure_aggregation"} <= {path for path, _, _ in fields}
    for path, values, optional in fields:
        *sections, key = path.split(".")
        bad = 3 if isinstance(values[0], int) else "nonsense"
        data: dict = {}
        node = data
        for part in sections:
            node = node.setdefault(part, {})
        node[key] = bad
        with pytest.raises(ConfigError) as info:
            ExperimentConfig.from_dict(data)
        choices = [list(values), [None, *values]] if optional else [list(values)]
        assert str(info.value) in [f"{path}={bad!r} is not allowed; choose one of {c}" for c in choices], path
    for cls in (FairnessSettings, TrustSettings):  # the switches only the settings have (no YAML key)
        for name, values, _ in _literal_fields(cls):
            bad = 3 if isinstance(values[0], int) else "nonsense"
            with pytest.raises(SettingsError) as info:
                cls(**{name: bad})
            assert str(info.value) == f"{cls.__name__}.{name}={bad!r} is not allowed; choose one of {list(values)}"


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


def _modules():
    return [importlib.import_module(info.name) for info in pkgutil.walk_packages(fltrust.__path__, prefix="fltrust.")
            if not info.name.endswith("__main__")]


def test_each_table_has_one_name():
    """No module binds a name family, a mode-defaults table or a registry to a second name: each table
    is reached by one name wherever it is imported (a second name is one more to keep in step)."""
    from fltrust import registry
    from fltrust.metrics.fairness import notions, registry as notion_registry

    tables = {id(value): name for name, value in vars(names).items() if name.isupper() and isinstance(value, (tuple, dict))}
    tables |= {id(getattr(module, name)): name for module, name in [
        (registry, "STRATEGIES"), (registry, "PRIVACY_MECHANISMS"), (notion_registry, "NOTIONS"),
        (notion_registry, "FAIRNESS_KEYS"), (notions, "PAPER_NOTIONS")]}
    second_names = [f"{module.__name__}.{attr} is {tables[id(value)]}" for module in _modules()
                    for attr, value in vars(module).items() if id(value) in tables and attr != tables[id(value)]]
    assert second_names == []


def test_the_names_are_exported_by_this_module_alone():
    """A family or its defaults is imported from fltrust.names, not through another module's __all__."""
    reexports = {module.__name__: sorted(name for name in getattr(module, "__all__", ())
                                         if name in names.__all__ and getattr(module, name) is getattr(names, name))
                 for module in _modules() if module is not names}
    assert {name: found for name, found in reexports.items() if found} == {}


def test_the_dispatch_tables_know_every_name():
    from fltrust.data.registry import REFERENCE_SPECS, SPECS
    from fltrust.data.specs import INPUT_SPECS
    from fltrust.algorithms import strategies  # noqa: F401 - registers the built-in strategies
    from fltrust.registry import STRATEGIES
    from fltrust.data.synthetic import GENERATORS
    from fltrust.models import MODELS
    from fltrust.repro.trust.report import MODE_LABELS
    from fltrust.trust.factsheet import STRATEGY_NAMES
    from fltrust.trust.factsheet.populate import _PREPROCESSING
    from fltrust.trust.scoring import FIXES

    assert set(STRATEGIES) == set(names.STRATEGIES)
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
