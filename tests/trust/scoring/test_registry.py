"""The operation and score-type registries: one decorated function each, validated and dispatched by name."""

from __future__ import annotations

import pytest
import yaml

from fltrust.trust.scoring import (
    FIXES,
    OPERATIONS,
    SCORE_TYPES,
    DefinitionsError,
    definitions_from_dict,
    engine_switches,
    load_definitions,
    operation,
    score_factsheet,
    score_type,
)
from fltrust.trust.scoring.registry import RegistryError

TREE = {"name": "t", "pillars": {"p": {"notions": {"n": {"metrics": {"m": {
    "inputs": ["performance/test_acc_avg", "fairness/test_acc_cv"], "operation": "acc_times_spread",
    "type": "squared", "direction": "desc"}}}}}}}


@pytest.fixture
def registered():
    @operation("acc_times_spread", arity=2)
    def acc_times_spread(acc, cv):
        return acc * cv

    @score_type("squared", optional=("direction",))
    def squared(raw, metric):
        return raw ** 2 if metric.direction == "asc" else 1 - raw ** 2

    yield
    OPERATIONS.unregister("acc_times_spread")
    SCORE_TYPES.unregister("squared")


def test_a_registered_operation_and_type_are_validated_and_dispatched(registered):
    report = score_factsheet({"performance": {"test_acc_avg": 0.8}, "fairness": {"test_acc_cv": 0.5}},
                             definitions=definitions_from_dict(TREE))
    metric = report.metric("m")
    assert metric.raw_value == pytest.approx(0.4) and metric.score == pytest.approx(1 - 0.16)
    with pytest.raises(DefinitionsError, match="operation 'acc_times_spread' takes 2 input"):
        definitions_from_dict({**TREE, "pillars": {"p": {"notions": {"n": {"metrics": {"m": {
            **TREE["pillars"]["p"]["notions"]["n"]["metrics"]["m"], "inputs": ["a/b"]}}}}}}})
    with pytest.raises(DefinitionsError, match=r"key\(s\) \['ranges'\] are not used by type 'squared'"):
        definitions_from_dict({**TREE, "pillars": {"p": {"notions": {"n": {"metrics": {"m": {
            **TREE["pillars"]["p"]["notions"]["n"]["metrics"]["m"], "ranges": [1, 2]}}}}}}})


def test_an_unknown_name_names_the_file_the_metric_and_the_registered_names(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(TREE))
    with pytest.raises(DefinitionsError) as info:
        load_definitions(path)
    message = str(info.value)
    assert message.startswith(f"{path}: pillars.p.notions.n.metrics.m: metric 'm': unknown operation 'acc_times_spread'")
    assert str(OPERATIONS.names()) in message and "fltrust.trust.scoring.registry.operation" in message
    assert "\n" not in message


def test_packaged_names_and_registration_errors():
    assert {"get_value", "check_properties", "first_present", "mean_of_present"} <= set(OPERATIONS)
    assert set(SCORE_TYPES) == {"true_score", "ranges", "breakpoints", "scaled_score", "score_mapping",
                                "score_ranking", "score_map_value", "property_check"}
    assert OPERATIONS["check_properties"].switches == ("missing",) and OPERATIONS["get_value"].arity == 1
    with pytest.raises(RegistryError, match="already registered by fltrust.trust.scoring.operations.get_value"):
        operation("get_value", arity=1)(lambda v: v)
    with pytest.raises(RegistryError, match=r"unknown metric key\(s\) \['base'\]"):
        score_type("logs", required=("base",))
    with pytest.raises(RegistryError, match=r"unknown switch\(es\) \['strict'\]"):
        operation("x", arity=1, switches=("strict",))
    with pytest.raises(RegistryError, match="arity=0"):
        operation("x", arity=0)


def test_the_engine_switches_come_from_the_fixes():
    assert engine_switches([]) == {"missing": "prototype", "coerce_types": False, "unknown": "prototype"}
    assert engine_switches(list(FIXES)) == {"missing": "strict", "coerce_types": True, "unknown": "zero"}
    assert {name for name, fix in FIXES.items() if fix.switch} == {"nan_is_missing", "unknown_key_zero", "coerce_types"}


def test_a_file_extends_another_by_name(tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"name": "base", "pillars": {"p": {"label": "P", "notions": {"n": {"metrics": {
        "a": {"inputs": ["x/a"], "operation": "get_value", "type": "true_score"}}}}}}}))
    child = tmp_path / "child.yaml"
    child.write_text(yaml.safe_dump({"extends": "base.yaml", "pillars": {
        "p": {"notions": {"n": {"metrics": {"b": {"inputs": ["x/b"], "operation": "get_value", "type": "true_score"}}},
                          "n2": {"metrics": {"c": {"inputs": ["x/c"], "operation": "get_value", "type": "true_score"}}}}},
        "q": {"notions": {"k": {"metrics": {"a": {"inputs": ["x/d"], "operation": "get_value", "type": "true_score",
                                                  "direction": "desc"}}}}}}}))
    tree = load_definitions(child)
    assert tree.name == "child" and tree.metric_paths() == ["p/n/a", "p/n/b", "p/n2/c", "q/k/a"]
    assert tree.pillars[0].label == "P" and tree.get_metric("q/k/a").direction == "desc"
    packaged = load_definitions(mode="extended")
    extended = definitions_from_dict({"extends": "extended.yaml", "pillars": {}}, name="same")
    assert extended.metric_paths() == packaged.metric_paths() and extended.use_provenance
    child.write_text("extends: nowhere.yaml\n")
    with pytest.raises(DefinitionsError, match=r"extends='nowhere.yaml' is neither a packaged definitions file"):
        load_definitions(child)
    child.write_text("extends: child.yaml\npillars: {}\n")
    with pytest.raises(DefinitionsError, match="nested more than 8 levels"):
        load_definitions(child)
