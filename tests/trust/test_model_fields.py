"""fltrust.trust.model_fields: CLEVER and SHAP on a seeded sample of the test split."""

from __future__ import annotations

import logging
import math

import torch

from fltrust.settings import TrustSettings
from fltrust.trust.factsheet import get_field, new_factsheet
from fltrust.trust.model_fields import MODEL_FIELDS, ModelFields


def test_the_sample_is_a_seeded_permutation_of_the_test_rows() -> None:
    x = torch.zeros(50, 3)
    first, again = ModelFields(TrustSettings(), x, seed=3), ModelFields(TrustSettings(), x, seed=3)
    other = ModelFields(TrustSettings(), x, seed=4)
    assert sorted(first.sample_index().tolist()) == list(range(50))
    assert first.sample_index().tolist() == again.sample_index().tolist()
    assert first.sample_index().tolist() != other.sample_index().tolist()


def test_no_samples_no_model_fields() -> None:
    fs = new_factsheet()
    ModelFields(TrustSettings(clever_samples=0, shap_samples=0), torch.zeros(4, 3)).fill(fs, torch.nn.Linear(3, 2), 2)
    assert all(math.isnan(get_field(fs, path)) for path in MODEL_FIELDS)


def test_too_few_test_rows_for_shap_is_a_warning_not_a_value(caplog) -> None:
    # 4 rows cannot hold the SHAP background plus one explained sample
    settings = TrustSettings(clever_samples=0, shap_samples=5, shap_background=4)
    fs = new_factsheet()
    with caplog.at_level(logging.WARNING, logger="fltrust"):
        ModelFields(settings, torch.zeros(4, 3)).fill(fs, torch.nn.Linear(3, 2), 2)
    assert math.isnan(get_field(fs, "performance/test_feature_importance_cv"))
    assert "too few for 4 SHAP background samples" in caplog.text
