"""Filling a FactSheet before training, from what an experiment states, its model and its data.

:func:`populate_pre_training` writes the fields known before the first round (paper Algorithm 1
steps 3-5; :mod:`fltrust.trust.observer` calls it at the start of a run) from the run's
:class:`~fltrust.trust.inputs.TrustInputs` (an experiment builds them from its configuration:
:func:`fltrust.experiment.trust_inputs`). The vocabularies the
scoring engine knows are :data:`STRATEGY_NAMES` (aggregation algorithm, trust spec 3.6; docs/references.md#trust-3-6)
and :data:`TRAINING_MODEL_MAP` (algorithmic transparency, trust spec 3.4; docs/references.md#trust-3-4).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fltrust.trust.factsheet.io import set_field

if TYPE_CHECKING:
    from torch import nn

    from fltrust.settings import TrustSettings
    from fltrust.trust.inputs import TrustInputs

log = logging.getLogger("fltrust")

STRATEGY_NAMES = {
    "fedavg": "FedAvg",
    "fedprox": "FedProx",
    "ditto": "Ditto",
    "qfedavg": "q-FedAvg",
    "fedmedian": "FedMedian",
    "median": "Median",
    "krum": "Krum",
    "multikrum": "MultiKrum",
    "trimmedmean": "TrimmedMean",
    "bulyan": "Bulyan",
}
"""``strategy.name`` -> the aggregation-algorithm vocabulary of the papers (trust spec 3.6).
q-FedAvg and FedMedian are not in the prototype's benchmark map; the scoring reports them. The
robust aggregators are in the extended definitions' map (nebula's values, spec 10; docs/references.md#trust-10). A
strategy not listed here is written under its own name."""

TRAINING_MODEL_MAP = {
    "convnet2": "CNN",
    "femnist_cnn": "CNN",
    "cifar_cnn": "CNN",
    "nsl_kdd_mlp": "MLPClassifier",
    "nbaiot_mlp_50_50": "MLPClassifier",
    "nbaiot_mlp_100_80_70_50": "MLPClassifier",
}
"""``model.name`` -> the algorithmic-transparency vocabulary (trust spec 3.4).

The prototype's ``model_map.json`` only knows ``{"convnet2": "CNN"}``. The fully connected models
are mapped to ``"MLPClassifier"``, scikit-learn's name for a multilayer perceptron in the same
map; it has the same transparency value (1) as ``"CNN"`` and ``"Sequential"``."""


_PREPROCESSING = {
    "cifar10": "pixels ToTensor + Normalize(mean 0.5, std 0.5 per channel), values in [-1, 1]",
    "femnist": "LEAF pixels 28x28 scaled to [0, 1], no further normalisation",
    "nsl_kdd": (
        "38 continuous features min-max scaled; one-hot encoding of protocol_type, service and flag; "
        "label normal -> 0, attack -> 1"
    ),
    "n_baiot": (
        "115 numeric traffic features standardised (z-score) with the training split's column mean and std; "
        "label benign -> 0, attack -> 1"
    ),
}



def _source_files(source: dict[str, Any]) -> list[str]:
    """File names recorded by a loader in ``DatasetBundle.source`` (keys ending in ``files``)."""
    names: list[str] = []
    for key, value in source.items():
        if not key.endswith("files") or not isinstance(value, (list, tuple)):
            continue
        for item in value:
            if isinstance(item, dict):
                item = item.get("path") or item.get("name") or item.get("file")
            if item:
                names.append(Path(str(item)).name)
    return names


def describe_provenance(inputs: TrustInputs, dataset_summary: dict[str, Any] | None = None) -> str:
    """``data/provenance``: dataset name, the files read and whether the samples are synthetic.

    Parameters
    ----------
    inputs : TrustInputs
        What the run states (its dataset name and files).
    dataset_summary : dict or None
        ``DatasetBundle.summary()`` of the loaded data; ``None`` = describe from the config only.

    Returns
    -------
    str
        For example ``"nsl_kdd (real data; files: KDDTrain+.txt, KDDTest+.txt)"``.
    """
    summary = dataset_summary or {}
    name = summary.get("name") or inputs.data_name
    synthetic = bool(summary.get("synthetic", str(name).startswith("synthetic_")))
    files = _source_files(summary.get("source") or {})
    if not files:
        files = [Path(f).name for f in inputs.data_files]
    kind = "SYNTHETIC stand-in, generated samples" if synthetic else "real data"
    return f"{name} ({kind}" + (f"; files: {', '.join(files)})" if files else ")")


def describe_preprocessing(inputs: TrustInputs, dataset_summary: dict[str, Any] | None = None) -> str:
    """``data/preprocessing``: how the features were scaled and encoded.

    A loader may record its own description under ``source["preprocessing"]``; otherwise the
    description of the dataset family is used, completed with the loader options recorded in
    ``source`` (``scaling``, ``onehot_order``, ``balance``). Synthetic data had no preprocessing:
    the description names the generator instead.

    Parameters
    ----------
    inputs : TrustInputs
        What the run states (its dataset name and loader options).
    dataset_summary : dict or None
        ``DatasetBundle.summary()``.

    Returns
    -------
    str
    """
    summary = dataset_summary or {}
    source = summary.get("source") or {}
    if isinstance(source.get("preprocessing"), str) and source["preprocessing"].strip():
        return source["preprocessing"]
    name = str(summary.get("name") or inputs.data_name)
    family = name.removeprefix("synthetic_")
    if name.startswith("synthetic_") or summary.get("synthetic"):
        generator = source.get("generator", name)
        seed = f", seed {source['seed']}" if "seed" in source else ""
        return f"none: samples generated by {generator}{seed} in the {family} feature layout"
    text = _PREPROCESSING.get(family, f"features as produced by the {family} loader")
    if family == "nsl_kdd":
        options = {"scaling": source.get("scaling"),
                   "onehot_order": source.get("onehot_order", inputs.loader_options.get("onehot_order"))}
        text += "; " + ", ".join(f"{k}={v}" for k, v in options.items() if v is not None)
    if family == "n_baiot":
        balance = source.get("balance", inputs.loader_options.get("balance", False))
        text += f"; per-client 50/50 benign/attack balancing: {'yes' if balance else 'no'}"
    return text


def populate_pre_training(
    fs: dict[str, Any], inputs: TrustInputs, model: nn.Module, dataset_summary: dict[str, Any] | None = None, *,
    settings: TrustSettings | None = None,
) -> dict[str, Any]:
    """Fill the fields known before training from what the run states and the model (Alg. 1 steps 3-5).

    User-supplied fields (``project/purpose``, ``project/background``, ``project/organisations``)
    are copied from ``inputs`` when given and otherwise left empty, so that
    :func:`missing_fields` reports them; nothing is invented.

    Parameters
    ----------
    fs : dict
        FactSheet to fill (modified in place and returned).
    inputs : TrustInputs
        What the run states (an experiment's: :func:`fltrust.experiment.trust_inputs`); its
        ``num_clients``, ``clients_per_round`` and ``rounds`` must be known.
    model : torch.nn.Module
        The model template (its trainable parameters are counted).
    dataset_summary : dict or None
        ``DatasetBundle.summary()`` of the data (provenance and preprocessing).
    settings : TrustSettings or None
        The observer's settings (``client_selector``); ``None`` = the default settings.

    Returns
    -------
    dict
        ``fs``.
    """
    from fltrust.core.params import count_parameters
    from fltrust.settings import TrustOptions

    set_field(fs, "project/overview", inputs.overview.strip() or inputs.name)
    set_field(fs, "project/purpose", inputs.purpose)
    set_field(fs, "project/background", inputs.background)
    set_field(fs, "project/organisations", list(inputs.organisations))

    set_field(fs, "data/provenance", describe_provenance(inputs, dataset_summary))
    set_field(fs, "data/preprocessing", describe_preprocessing(inputs, dataset_summary))

    num_clients = inputs.num_clients
    set_field(fs, "participants/client_num", num_clients)
    set_field(fs, "participants/sample_client_rate", inputs.clients_per_round / num_clients)
    selector = settings.client_selector if settings is not None else TrustOptions.client_selector
    set_field(fs, "participants/client_selector", selector)

    set_field(fs, "configuration/optimization_algorithm", STRATEGY_NAMES.get(inputs.strategy, inputs.strategy))
    model_type = TRAINING_MODEL_MAP.get(inputs.model)
    if model_type is None:
        log.warning("model %r is not in TRAINING_MODEL_MAP; writing its registry name", inputs.model)
        model_type = inputs.model
    set_field(fs, "configuration/training_model", model_type)
    set_field(fs, "configuration/personalization", inputs.personalized)
    set_field(fs, "configuration/differential_privacy", inputs.differential_privacy)
    set_field(fs, "configuration/dp_epsilon", float(inputs.dp_epsilon) if inputs.differential_privacy else float("nan"))
    n_params, n_tensors = count_parameters(model)
    set_field(fs, "configuration/trainable_param_num", n_tensors)
    set_field(fs, "configuration/trainable_param_count", n_params)
    set_field(fs, "configuration/total_round_num", inputs.rounds)
    set_field(fs, "configuration/learning_rate", inputs.learning_rate)
    set_field(fs, "configuration/local_update_steps", inputs.local_epochs)
    return fs
