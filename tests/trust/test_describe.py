"""fltrust.trust.describe: the FactSheet's description of an app without an ExperimentConfig."""

from __future__ import annotations

import logging

import numpy as np
import torch

from fltrust.core.records import AppFacts, RunInfo
from fltrust.settings import TrustSettings
from fltrust.trust.describe import describe_app, model_family
from fltrust.trust.factsheet import get_field, missing_fields, new_factsheet


def _info(app: AppFacts | None) -> RunInfo:
    return RunInfo("app-1", 5, 7, 0, np.zeros(5), np.zeros((5, 0)), app=app)


def test_model_family_names_what_the_definitions_rate() -> None:
    # a convolution anywhere makes a CNN; linear layers only an MLP; anything else its class name
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(), torch.nn.Linear(8, 2))
    mlp = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    normed = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    assert [model_family(m) for m in (cnn, mlp, normed)] == ["CNN", "MLPClassifier", "Sequential"]


def test_describe_app_takes_the_strategy_flags_from_its_name() -> None:
    model = torch.nn.Linear(3, 2)  # 3 * 2 weights + 2 biases = 8 parameters in 2 tensors
    app = AppFacts(name="a", model="Linear", strategy="DittoDifferentialPrivacy", dataset_name="d", local_epochs=2)
    fs = describe_app(new_factsheet(), _info(app), model, TrustSettings())
    assert get_field(fs, "configuration/trainable_param_count") == 8
    assert get_field(fs, "configuration/trainable_param_num") == 2
    assert get_field(fs, "configuration/personalization") is True
    assert get_field(fs, "configuration/differential_privacy") is True
    assert get_field(fs, "configuration/local_update_steps") == 2
    assert get_field(fs, "data/provenance") == "d"  # no description: no trailing ": "


def test_describe_app_without_app_facts_fills_only_the_model_and_run(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="fltrust"):
        fs = describe_app(new_factsheet(), _info(None), torch.nn.Linear(3, 2), TrustSettings())
    assert get_field(fs, "participants/client_num") == 5 and get_field(fs, "configuration/total_round_num") == 7
    assert get_field(fs, "configuration/training_model") == "MLPClassifier"
    assert {"project/overview", "data/provenance", "configuration/optimization_algorithm"} <= set(missing_fields(fs))
    assert "neither config" in caplog.text
