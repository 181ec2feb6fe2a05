"""What a run's FactSheet says was run, for an app without an ExperimentConfig.

For anyone's app the trust observer (:class:`fltrust.trust.observer.TrustObserver`) fills the
pre-training fields from ``RunInfo.app`` (:class:`~fltrust.core.records.AppFacts`: the app's
model class, strategy and its parameters, dataset name and description) with
:func:`describe_app`; for an fltrust experiment :func:`fltrust.trust.factsheet.populate_pre_training`
fills them from its configuration. The model's parameter counts and its family
(:func:`model_family`) come from the model itself, the client count and the rounds from the
``RunInfo``. Fields the app does not state stay empty; nothing is invented.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from fltrust.core.records import RunInfo
from fltrust.settings import TrustSettings
from fltrust.trust.factsheet import STRATEGY_NAMES, set_field

__all__ = ["describe_app", "model_family"]

log = logging.getLogger("fltrust")


def model_family(model: torch.nn.Module) -> str:
    """Return the algorithmic-transparency name of a torch model (``configuration/training_model``).

    ``"CNN"`` when it has a convolution, ``"MLPClassifier"`` when its only parametrised layers
    are linear ones (scikit-learn's name for a multilayer perceptron, as
    :data:`~fltrust.trust.factsheet.TRAINING_MODEL_MAP` uses), else its class name (which the
    packaged definitions do not rate: it scores 0, with a warning in the report).

    Parameters
    ----------
    model : torch.nn.Module
        The model a run trains.

    Returns
    -------
    str
        ``"CNN"``, ``"MLPClassifier"`` or the model's class name.

    Examples
    --------
    >>> model_family(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)))
    'MLPClassifier'
    >>> model_family(torch.nn.Conv2d(1, 2, 3))
    'CNN'
    """
    modules = list(model.modules())
    if any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in modules):
        return "CNN"
    parametrised = [m for m in modules if any(True for _ in m.parameters(recurse=False))]
    if parametrised and all(isinstance(m, torch.nn.Linear) for m in parametrised):
        return "MLPClassifier"
    return type(model).__name__


def describe_app(fs: dict[str, Any], info: RunInfo, model: torch.nn.Module, settings: TrustSettings) -> dict[str, Any]:
    """Fill the pre-training FactSheet fields of an app that has no ExperimentConfig.

    Everything comes from the app: ``info.app`` (:class:`~fltrust.core.records.AppFacts`: the
    names of the model class, strategy and dataset, the dataset's description, the learning rate
    and local epochs when the app states them), the model (parameter counts, its family) and the
    run (clients, rounds). Fields the app does not state stay empty, so that
    :func:`~fltrust.trust.factsheet.missing_fields` reports them; nothing is invented.

    Parameters
    ----------
    fs : dict
        FactSheet to fill (modified in place and returned).
    info : RunInfo
        The run's start information (without ``info.app`` only the model's and the run's
        fields are filled, with a warning).
    model : torch.nn.Module
        The app's model (its trainable parameters are counted).
    settings : TrustSettings

    Returns
    -------
    dict
        ``fs``.
    """
    from fltrust.core.params import count_parameters

    n_params, n_tensors = count_parameters(model)
    set_field(fs, "participants/client_num", int(info.num_clients))
    set_field(fs, "participants/client_selector", settings.client_selector)
    set_field(fs, "configuration/training_model", model_family(model))
    set_field(fs, "configuration/trainable_param_num", n_tensors)
    set_field(fs, "configuration/trainable_param_count", n_params)
    set_field(fs, "configuration/total_round_num", int(info.num_rounds))
    app = info.app
    if app is None:
        log.warning("trust: RunInfo has neither config (an fltrust experiment) nor app (AppFacts); the FactSheet's "
                    "project, data and strategy fields stay empty and are reported missing")
        return fs
    strategy = STRATEGY_NAMES.get(app.strategy.lower(), app.strategy)
    set_field(fs, "project/overview", f"{app.name}: {app.model} ({n_params:,} trainable parameters) trained with "
                                      f"{app.strategy} on {app.dataset_name}")
    set_field(fs, "data/provenance", f"{app.dataset_name}: {app.dataset_description}".rstrip(": "))
    set_field(fs, "data/preprocessing", app.preprocessing)
    set_field(fs, "configuration/optimization_algorithm", strategy)
    set_field(fs, "configuration/personalization", "ditto" in app.strategy.lower())
    set_field(fs, "configuration/differential_privacy", "differentialprivacy" in app.strategy.lower())
    if app.learning_rate is not None:
        set_field(fs, "configuration/learning_rate", float(app.learning_rate))
    if app.local_epochs is not None:
        set_field(fs, "configuration/local_update_steps", int(app.local_epochs))
    return fs

