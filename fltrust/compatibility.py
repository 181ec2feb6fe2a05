"""Whether a configuration's parts fit the registered components: model, dataset and attack.

:mod:`fltrust.config` checks every section on its own terms (names, ranges, the rules across
sections) and knows no component; the checks that need a model's forward pass or a dataset's input
shape live here, one layer above the models and datasets. :func:`check_compatible` runs them all;
:func:`fltrust.experiment.prepare_experiment` and the command line call it before any run folder is
made, so a mismatch is one :class:`~fltrust.config.ConfigError` naming the fields.
"""

from __future__ import annotations

import math

from fltrust.config import ConfigError, ExperimentConfig
from fltrust.config.checks import at_most
from fltrust.data.specs import input_spec
from fltrust.models import MODELS, model_fits

__all__ = ["SYNTHETIC_MAX_BYTES", "check_compatible"]

SYNTHETIC_MAX_BYTES = 2 * 1024**3
"""Largest synthetic stand-in (float32 features of the train split plus its test quarter)."""


def check_compatible(cfg: ExperimentConfig) -> None:
    """Check ``cfg`` against the dataset's input shape and classes and the registered models.

    - ``model.name`` takes ``data.name``'s inputs (:func:`fltrust.models.model_fits`);
    - ``data.synthetic_samples`` fits :data:`SYNTHETIC_MAX_BYTES` for a synthetic stand-in;
    - ``attack.target_label`` is one of the dataset's labels.

    Parameters
    ----------
    cfg : ExperimentConfig
        A configuration (its sections already checked on their own).

    Raises
    ------
    ConfigError
        Naming the fields, the values and what would fit.

    Examples
    --------
    >>> check_compatible(ExperimentConfig.from_dict({"data": {"name": "synthetic_nsl_kdd"}}))
    >>> check_compatible(ExperimentConfig.from_dict({"model": {"name": "cifar_cnn"}}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fltrust.config.checks.ConfigError: model.name='cifar_cnn' does not fit data.name='synthetic_nsl_kdd' ...
    """
    shape, num_classes = input_spec(cfg.data.name)
    _check_model(cfg.model.name, cfg.data.name, shape, num_classes)
    if cfg.data.name.startswith("synthetic_"):
        limit = SYNTHETIC_MAX_BYTES // (5 * math.prod(shape))  # 4 bytes per value, 1.25 x for the test quarter
        at_most("data", "synthetic_samples", cfg.data.synthetic_samples, limit,
                f"{SYNTHETIC_MAX_BYTES // 1024**3} GiB of float32 features for "
                f"{cfg.data.name.removeprefix('synthetic_')} inputs")
    label = cfg.attack.target_label
    if cfg.attack.kind != "none" and label is not None and label >= num_classes:
        raise ConfigError(f"attack.target_label={label} is not a label of {cfg.data.name!r} "
                          f"(labels 0..{num_classes - 1})")


def _check_model(model: str, dataset: str, shape: tuple[int, ...], num_classes: int) -> None:
    if model not in MODELS or model_fits(model, shape, num_classes):
        return
    fitting = [name for name in sorted(MODELS) if model_fits(name, shape, num_classes)]
    kind = "images " + "x".join(map(str, shape)) if len(shape) > 1 else f"{shape[0]} tabular features"
    raise ConfigError(f"model.name={model!r} does not fit data.name={dataset!r} (inputs are {kind}); "
                      f"choose one of {fitting}")
