"""Auditing, co-versioning, registry / visualisation coverage and declarations (fltrust.trust.measures.governance)."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.runs import chain_hash, params_hash
from fltrust.trust.measures.governance import (
    REGISTRY_ITEMS,
    DeclarationError,
    co_versioning_coverage,
    coverage,
    validate_declarations,
    verify_model_chain,
)


def _chain(models):
    hashes = [params_hash([np.full(2, float(v))]) for v in models]
    chained, previous = [], ""
    for h in hashes:
        previous = chain_hash(previous, h)
        chained.append(previous)
    return hashes, chained


def test_a_recorded_chain_verifies_with_its_final_model():
    hashes, chained = _chain([0, 1, 2])
    audit = verify_model_chain(hashes, chained, final_model_hash=params_hash([np.full(2, 2.0)]))
    assert audit.verified and audit.rounds == 3 and audit.head == chained[-1]
    assert "final model" in audit.detail


def test_tampering_breaks_the_chain():
    hashes, chained = _chain([0, 1, 2])
    edited = list(hashes)
    edited[1] = params_hash([np.full(2, 9.0)])  # a round's model replaced after the run
    assert not verify_model_chain(edited, chained).verified
    assert not verify_model_chain(hashes[:-1] + [hashes[0]], chained).verified
    other_final = params_hash([np.full(2, 7.0)])
    assert "final model" in verify_model_chain(hashes, chained, final_model_hash=other_final).detail
    missing = verify_model_chain([hashes[0], None], [chained[0], None])
    assert not missing.verified and "no model hash" in missing.detail
    assert not verify_model_chain([], []).verified


def test_co_versioning_by_hand():
    entries = [
        {"global_before": "g0", "global_after": "g1", "local": ["a", "b"], "num_participants": 2},  # complete
        {"global_before": "g1", "global_after": "g2", "local": ["c"], "num_participants": 2},  # a local missing
        {"global_before": "gX", "global_after": "g3", "local": ["d", "e"], "num_participants": 2},  # inconsistent
        {"global_before": "g3", "global_after": "g4", "local": ["f", "g"], "num_participants": 2},  # complete
    ]
    assert co_versioning_coverage(entries, "g0") == pytest.approx(0.5)
    assert co_versioning_coverage(entries[:1], "other") == 0.0
    assert np.isnan(co_versioning_coverage([]))


def test_coverage_and_declarations():
    items = {name: True for name in REGISTRY_ITEMS[:-1]}
    assert coverage(items, REGISTRY_ITEMS) == pytest.approx(6 / 7)
    assert validate_declarations({"encryption": "SecAgg+", "model_replacement": "Automatic"}) == {
        "encryption": "secagg+", "model_replacement": "automatic"}
    with pytest.raises(DeclarationError, match="unknown key"):
        validate_declarations({"coverage": 1})
    with pytest.raises(DeclarationError, match=r"\[0, 1\]"):
        validate_declarations({"testing_coverage": 1.5})
    with pytest.raises(DeclarationError, match="choose one of"):
        validate_declarations({"anonymisation": "encrypted"})
