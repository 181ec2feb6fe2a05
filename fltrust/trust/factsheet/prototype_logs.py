"""The prototype's ``populate_factsheet`` on FederatedScope output files (trust spec 4, 5.1 and 8.1).

The FactSheet, the files and the golden vectors: docs/references.md#trust-4, #trust-5-1, #trust-8-1.

:func:`populate_from_prototype_logs` fills a FactSheet from the files a FederatedTrust run of the
authors' prototype leaves behind: FederatedScope's ``config.yaml``, ``eval_results.log``
(:func:`read_eval_results_final`), ``system_metrics.log`` (:func:`read_system_metrics`) and the
prototype's ``statistics.json``. It reproduces HEAD b67a59c field by field (golden vector B of trust
spec 8.1); fltrust's own runs fill their FactSheets with :mod:`fltrust.trust.factsheet.populate`
and the trust observer instead.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from fltrust.trust.factsheet.io import _read_json, set_field
from fltrust.trust.factsheet.schema import FactsheetError

PROTOTYPE_MODEL_MAP = {"convnet2": "CNN"}
"""The prototype's ``configs/model_map.json``."""


def _read_lines(path: str | Path, what: str, parse: Callable[[str], Any], errors: Any, form: str) -> list[Any]:
    """Parse each non-blank line of a log file; a line that does not parse raises, naming it."""
    path = Path(path)
    if not path.is_file():
        raise FactsheetError(f"{what} {str(path)!r} does not exist")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(parse(line))
        except errors as exc:
            raise FactsheetError(f"{path}: line {number} is not {form} ({exc})") from exc
    return rows


def read_eval_results_final(path: str | Path) -> dict[str, Any]:
    """``Results_raw`` of the server's ``'Round': 'Final'`` line of a FederatedScope eval log.

    Each line of ``eval_results.log`` is a Python dict literal (parsed with
    :func:`ast.literal_eval`); the last server line with ``Round == 'Final'`` wins, as in the
    prototype's ``read_eval_results_log``.

    Parameters
    ----------
    path : str or Path
        The log file.

    Returns
    -------
    dict
        ``{"client_summarized_avg": {...}, "client_summarized_fairness": {...}, ...}``.
    """
    final = None
    entries = _read_lines(path, "evaluation log", ast.literal_eval, (ValueError, SyntaxError), "a Python dict literal")
    for entry in entries:
        if isinstance(entry, dict) and "Server" in str(entry.get("Role", "")) and entry.get("Round") == "Final":
            final = entry.get("Results_raw")
    if not isinstance(final, dict):
        raise FactsheetError(f"{Path(path)}: no server line with 'Round': 'Final' and a 'Results_raw' dict")
    return final


def read_system_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Return the JSON lines of a FederatedScope ``system_metrics.log`` (clients, ``sys_avg``, ``sys_std``).

    Parameters
    ----------
    path : str or Path
        The log file.

    Returns
    -------
    list of dict
        One dict per non-blank line, in file order.

    Raises
    ------
    FactsheetError
        The file does not exist, or a line is not JSON (naming the line).
    """
    return _read_lines(path, "system metrics log", json.loads, json.JSONDecodeError, "JSON")


def _require(mapping: dict[str, Any], keys: Sequence[str], where: str) -> Any:
    node: Any = mapping
    for depth, key in enumerate(keys):
        if not isinstance(node, dict) or key not in node:
            raise FactsheetError(f"{where}: missing key {'.'.join(keys[: depth + 1])!r}")
        node = node[key]
    return node


def populate_from_prototype_logs(
    fs: dict[str, Any],
    config_yaml: str | Path,
    eval_results_log: str | Path,
    system_metrics_log: str | Path,
    statistics_json: str | Path,
    trainable_param_names: int | Sequence[str] = 12,
    *,
    fix_b1: bool = False,
    model_map: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the prototype's ``populate_factsheet`` on FederatedScope output files (trust spec 4, 8.1).

    Reproduces HEAD b67a59c field by field (golden vector B of trust spec 8.1); with
    ``fix_b1=True`` CLEVER and feature importance are also taken from the Final
    ``client_summarized_avg`` (vector Bfix).

    Parameters
    ----------
    fs : dict
        FactSheet to fill (modified in place and returned), normally :func:`new_factsheet`.
    config_yaml : str or Path
        FederatedScope run configuration (``config.yaml``).
    eval_results_log : str or Path
        FederatedScope evaluation log (Python dict literal per line).
    system_metrics_log : str or Path
        FederatedScope system metrics (JSON per line).
    statistics_json : str or Path
        The prototype's ``statistics.json`` (class_distribution, entropy_distribution,
        client_selection).
    trainable_param_names : int or sequence of str
        The trainer context's ``trainable_para_names`` (or their number); 12 for ConvNet2.
    fix_b1 : bool
        ``False`` = HEAD: ``test_clever`` and ``test_feature_importance_cv`` stay as they are
        (NaN in the template, bug B1; docs/references.md#trust-b1). ``True`` = read them from the Final summary.
    model_map : dict or None
        ``model.type`` -> transparency vocabulary; ``None`` = :data:`PROTOTYPE_MODEL_MAP`.

    Returns
    -------
    dict
        ``fs``.

    Notes
    -----
    As in HEAD: ``test_loss_avg`` is the summed ``test_loss`` (not ``test_avg_loss``, B12;
    docs/references.md#trust-b12); ``test_acc_cv = cap1(test_acc_std / test_acc)`` from the Final fairness and avg
    summaries; ``selection_cv`` and ``class_imbalance`` are capped CVs of ``statistics.json``
    (the uncapped values go to the ``*_raw`` extra fields); ``avg_entropy`` is the min-max mean of
    the stored client entropies (B4, docs/references.md#trust-b4); the system sizes are the ``sys_avg`` human-readable
    strings. The extra ``configuration/trainable_param_count`` is the clients' ``total_model_size``.
    """
    # imported here: the statistics need scipy, and the scoring engine, which reads the schema of
    # this package, stays cheap to import
    from fltrust.trust.measures.statistics import cap1, class_imbalance, minmax_mean_entropy, selection_cv

    cfg_path = Path(config_yaml)
    if not cfg_path.is_file():
        raise FactsheetError(f"FederatedScope config {str(cfg_path)!r} does not exist")
    cfg = yaml.safe_load(cfg_path.read_text())
    if not isinstance(cfg, dict):
        raise FactsheetError(f"{cfg_path} must hold a YAML mapping")
    final = read_eval_results_final(eval_results_log)
    system = read_system_metrics(system_metrics_log)
    stats = _read_json(statistics_json, "statistics file")
    where = str(cfg_path)

    set_field(fs, "project/overview", _require(cfg, ["expname"], where))
    set_field(fs, "data/provenance", _require(cfg, ["data", "type"], where))
    set_field(fs, "data/preprocessing", _require(cfg, ["data", "transform"], where))
    entropies = list(_require(stats, ["entropy_distribution"], str(statistics_json)).values())
    set_field(fs, "data/avg_entropy", minmax_mean_entropy(entropies))

    set_field(fs, "participants/client_num", _require(cfg, ["federate", "client_num"], where))
    set_field(fs, "participants/sample_client_rate", _require(cfg, ["federate", "sample_client_rate"], where))
    set_field(fs, "participants/client_selector", _require(cfg, ["federate", "sampler"], where))

    set_field(fs, "configuration/optimization_algorithm", _require(cfg, ["federate", "method"], where))
    model_type = _require(cfg, ["model", "type"], where)
    mapping = PROTOTYPE_MODEL_MAP if model_map is None else model_map
    if model_type not in mapping:
        raise FactsheetError(f"model type {model_type!r} of {where} is not in the model map {mapping}; pass model_map")
    set_field(fs, "configuration/training_model", mapping[model_type])
    personalization = cfg.get("personalization") or {}
    personalized = bool(personalization) and personalization.get("local_param", []) != []
    set_field(fs, "configuration/personalization", personalized)
    nbafl = cfg.get("nbafl") or {}
    set_field(fs, "configuration/differential_privacy", bool(nbafl.get("use", False)))
    set_field(fs, "configuration/dp_epsilon", float(nbafl["epsilon"]) if "epsilon" in nbafl else float("nan"))
    n_tensors = trainable_param_names if isinstance(trainable_param_names, int) else len(trainable_param_names)
    set_field(fs, "configuration/trainable_param_num", n_tensors)
    sizes = [row["total_model_size"] for row in system if isinstance(row.get("total_model_size"), (int, float))]
    set_field(fs, "configuration/trainable_param_count", max(sizes) if sizes else float("nan"))
    set_field(fs, "configuration/total_round_num", _require(cfg, ["federate", "total_round_num"], where))
    set_field(fs, "configuration/learning_rate", _require(cfg, ["train", "optimizer", "lr"], where))
    set_field(fs, "configuration/local_update_steps", _require(cfg, ["train", "local_update_steps"], where))

    avg = _require(final, ["client_summarized_avg"], str(eval_results_log))
    fairness = _require(final, ["client_summarized_fairness"], str(eval_results_log))
    set_field(fs, "performance/test_loss_avg", avg["test_loss"])
    set_field(fs, "performance/test_acc_avg", avg["test_acc"])
    if fix_b1:
        set_field(fs, "performance/test_clever", avg["test_clever"])
        set_field(fs, "performance/test_feature_importance_cv", avg["test_feature_importance_cv"])

    acc_cv = fairness["test_acc_std"] / avg["test_acc"]
    set_field(fs, "fairness/test_acc_cv", cap1(acc_cv))
    set_field(fs, "fairness/test_acc_cv_raw", acc_cv)
    rates = list(_require(stats, ["client_selection"], str(statistics_json)).values())
    set_field(fs, "fairness/selection_cv", selection_cv(rates))
    set_field(fs, "fairness/selection_cv_raw", selection_cv(rates, cap=False))
    classes = list(_require(stats, ["class_distribution"], str(statistics_json)).values())
    set_field(fs, "fairness/class_imbalance", class_imbalance(classes, method="present_classes"))
    set_field(fs, "fairness/class_imbalance_raw", class_imbalance(classes, method="present_classes", cap=False))

    sys_avg = next((row for row in system if row.get("id") == "sys_avg"), None)
    if sys_avg is None:
        raise FactsheetError(f"{system_metrics_log}: no line with id 'sys_avg'")
    for field, key in (
        ("avg_time_minutes", "fl_end_time_minutes"),
        ("avg_model_size", "total_model_size"),
        ("avg_upload_bytes", "total_upload_bytes"),
        ("avg_download_bytes", "total_download_bytes"),
    ):
        set_field(fs, f"system/{field}", _require(sys_avg, [f"sys_avg/{key}"], str(system_metrics_log)))
    return fs
