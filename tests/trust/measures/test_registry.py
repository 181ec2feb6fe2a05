"""Measures as declarations: what a measure returns becomes its fields and its metrics' provenance."""

from __future__ import annotations

import math

import pytest

from fltrust.trust.factsheet import FIELD_BY_PATH, field_spec, new_factsheet
from fltrust.trust.measures import Measured, declared_field, measure
from fltrust.trust.measures.registry import MEASURES, MeasureError, registered_measures, unregister_measure
from fltrust.trust.measures.taxonomy import template_provenance
from fltrust.trust.scoring import load_definitions


@pytest.fixture
def forget():
    names = []
    yield names.append
    for name in names:
        unregister_measure(name)


def _declared(name):
    return next(m for m in registered_measures() if m.name == name)


def test_a_plain_value_is_measured_and_a_missing_one_is_missing(forget):
    @measure("scratch/share", provenance="a share of something")
    def share(run):
        return run

    forget("share")
    entry = _declared("share")
    assert field_spec("scratch/share").source == "a share of something" and field_spec("scratch/share").extra
    assert math.isnan(new_factsheet(extended=True)["scratch"]["share"])
    assert entry.run(0.25) == Measured({"scratch/share": 0.25}, "measured", "a share of something")
    missing = entry.run(float("nan"))
    assert missing.status == "missing" and missing.reason == "share gave no value"


def test_results_are_checked_against_the_declaration(forget):
    @measure("scratch/a", provenance="p", also=(declared_field("scratch/b", "list", "q"),))
    def pair(run):
        return run

    forget("pair")
    entry = _declared("pair")
    with pytest.raises(MeasureError, match="declares 2 fields; return Measured"):
        entry.run(1.0)
    with pytest.raises(MeasureError, match=r"returned \['scratch/c'\], which it does not declare"):
        entry.run(Measured({"scratch/c": 1}))
    with pytest.raises(MeasureError, match="an n/a result needs a reason"):
        entry.run(Measured(status="n/a"))
    result = entry.run(Measured({"scratch/b": [1]}, status="n/a", reason="none here"))
    assert (result.status, result.method, result.reason) == ("n/a", "p", "none here")


def _rerun_cell():
    @measure("scratch/rerun", provenance="p")
    def rerun(run):
        return 1.0
    return rerun


def test_a_rerun_measure_replaces_itself_and_a_taken_name_is_refused(forget):
    forget("rerun")
    _rerun_cell()
    _rerun_cell()  # the same function again (a notebook cell that reruns): it replaces itself and its field
    assert MEASURES["rerun"].paths == ("scratch/rerun",) and field_spec("scratch/rerun").extra
    with pytest.raises(MeasureError, match=r"measure 'encryption' is already registered by "
                                           r"fltrust\.trust\.measures\.taxonomy\.encryption; rename the function"):
        @measure("scratch/enc", provenance="p")
        def encryption(run):
            return 0.0


def test_a_field_is_declared_once():
    with pytest.raises(MeasureError, match="'privacy/mia_risk' is already declared by 'information_leakage'"):
        @measure("privacy/mia_risk", provenance="again")
        def leak(run):
            return 0.0
    with pytest.raises(MeasureError, match="in the FactSheet template already"):
        @measure("performance/test_acc_avg", provenance="again")
        def acc(run):
            return 0.0
    with pytest.raises(MeasureError, match="status='guessed'"):
        measure("scratch/x", provenance="p", status="guessed")


def test_every_extended_metric_has_one_source_of_provenance():
    """A metric's provenance comes from the one measure declaring its first input, else the template's table."""
    tree = load_definitions(mode="extended")
    declared = {}
    for entry in registered_measures():
        for path in entry.paths:
            declared.setdefault(path, []).append(entry.name)
    template = _template_keys()
    for path in tree.metric_paths():
        first = tree.get_metric(path).inputs[0]
        pillar, _, name = path.split("/")
        if first in declared:
            assert len(declared[first]) == 1, path
        else:
            assert first in FIELD_BY_PATH, path  # a template field, filled by the base observer
            assert f"{pillar}/{name}" in template, path


def _template_keys():
    class View:
        def field(self, path):
            return None

    return set(template_provenance(View(), {}))


def test_a_declared_measure_reads_its_key_of_metrics_trust_declared(forget):
    from types import SimpleNamespace

    from fltrust.trust.measures.registry import declared_measure

    function = declared_measure("scratch/owner_review", what="owner review")
    forget("owner_review")
    entry = _declared("owner_review")
    assert function.__name__ == "owner_review" and "owner review" in function.__doc__
    assert field_spec("scratch/owner_review").source == "metrics.trust.declared.owner_review"
    given = entry.run(SimpleNamespace(declared={"owner_review": "quarterly"}))
    assert (dict(given.values), given.status, given.reason) == ({"scratch/owner_review": "quarterly"}, "declared", None)
    absent = entry.run(SimpleNamespace(declared={"owner_review": ""}))
    assert absent.reason == "not declared: scores 0"

    number = declared_measure("scratch/review_share", "number", what="share reviewed", missing="none stated")
    forget("review_share")
    zero = _declared("review_share").run(SimpleNamespace(declared={"review_share": 0.0}))
    assert zero.values == {"scratch/review_share": 0.0} and zero.reason is None
    none = _declared("review_share").run(SimpleNamespace(declared={}))
    assert math.isnan(none.values["scratch/review_share"]) and none.reason == "none stated"
    assert number.__qualname__ == "review_share"
