"""Conversions between Flower records and fltrust's plain data, and the metric names both sides use.

A client's training reply carries one ``ArrayRecord`` (its model, ``state_dict`` order) and one
``MetricRecord`` with the per-client values of a :class:`~fltrust.core.records.RoundRecord`:

=====================  =========================================================================
MetricRecord key       RoundRecord ``client_metrics`` key / meaning
=====================  =========================================================================
``partition-id``       the client id (Flower's node-config key; ``client_ids``)
``num-examples``       ``num_samples`` (Flower's standard weighting key)
``num-batches``        ``num_batches``, mini-batches per local epoch
``val_samples``        ``val_samples``
``reward_accuracy``    ``reward_accuracy``: received model on the validation set, before training
``reward_loss``        ``reward_loss``
``accuracy``           ``accuracy``: model after training (Ditto: personal) on the validation set
``loss``               ``loss``
``train_loss``         ``train_loss``
``train_time_s``       ``train_time_s``
``bytes_received``     ``bytes_received``
``bytes_sent``         ``bytes_sent``
``malicious``          ``malicious`` (runs with an ``attack``): 1 when the client is malicious
``confusion``          ``client_confusion`` row: the K x K validation confusion matrix, flattened
                       row-major (a JSON string in the legacy API, whose metrics hold scalars only)
``label_counts``       the client's training label counts (``RunInfo.record_client``; in the
                       ``"fltrust"`` ConfigRecord of :meth:`ClientReport.attach` only)
=====================  =========================================================================

:meth:`ClientReport.finish` returns these keys as the reply's ``MetricRecord`` (fltrust's own
Flower engine, whose strategies aggregate by ``num-batches``); :meth:`ClientReport.attach` puts
them in a separate ``ConfigRecord`` under :data:`FLTRUST_KEY`, so that an app's strategy and
Flower's log see only the app's own metrics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fltrust.algorithms.aggregation import cast_like
from fltrust.core.records import Params
from fltrust.names import CLIENT_METRIC_KEYS

CLIENT_ID_KEY = "partition-id"
CONFUSION_KEY = "confusion"
LABEL_COUNTS_KEY = "label_counts"
"""The client's training label counts (``RunInfo.record_client``), in fltrust's report."""
FLTRUST_KEY = "fltrust"
"""RecordDict key of the ConfigRecord in which :meth:`ClientReport.attach` sends the report (the
server removes it before the app's strategy aggregates, so it never reaches Flower's metrics)."""
RENAMED = {"num-examples": "num_samples", "num-batches": "num_batches"}
"""MetricRecord keys whose RoundRecord name differs."""
BOOKKEEPING_KEYS = frozenset({CLIENT_ID_KEY, "num-partitions", CONFUSION_KEY, LABEL_COUNTS_KEY})


def params_to_arrays(params: Params, names: Sequence[str] | None = None):
    """A Flower ``ArrayRecord`` holding ``params`` (keys ``names``, default ``"0"``, ``"1"``, ...).

    Parameters
    ----------
    params : Params
        The arrays, in order (copied to contiguous memory where needed).
    names : sequence of str, optional
        One key per array, e.g. the model's ``state_dict`` keys (default: the positions).

    Returns
    -------
    flwr.app.ArrayRecord

    Raises
    ------
    ValueError
        If ``names`` and ``params`` differ in length.
    """
    from flwr.app import Array, ArrayRecord

    names = [str(i) for i in range(len(params))] if names is None else list(names)
    if len(names) != len(params):
        raise ValueError(f"{len(names)} names for {len(params)} arrays")
    return ArrayRecord({name: Array(np.ascontiguousarray(p)) for name, p in zip(names, params)})


def arrays_to_params(record, like: Params | None = None) -> Params:
    """The arrays of a Flower ``ArrayRecord`` (record order) as fresh numpy arrays.

    With ``like`` (the reference model), every array is cast back to the reference dtype
    (integers rounded): Flower's aggregations return float64 for integer buffers (BatchNorm's
    ``num_batches_tracked``) and QFedAvg returns float64 for float32 models.

    Parameters
    ----------
    record : flwr.app.ArrayRecord
        The record to read.
    like : Params, optional
        The reference model (default none: the record's dtypes are kept).

    Returns
    -------
    Params

    Raises
    ------
    ValueError
        If ``like`` holds another number of arrays than the record.
    """
    params = [np.array(array.numpy(), copy=True) for array in record.values()]
    if like is None:
        return params
    if len(like) != len(params):
        raise ValueError(f"the record holds {len(params)} arrays, the model {len(like)}")
    return [cast_like(p, ref) for p, ref in zip(params, like)]


def confusion_from_metric(value: Any) -> np.ndarray:
    """A K x K confusion matrix from its flattened MetricRecord (or legacy JSON string) form."""
    if isinstance(value, (str, bytes)):
        value = json.loads(value)
    flat = np.asarray(value, dtype=float).reshape(-1)
    k = int(round(np.sqrt(flat.size)))
    if k * k != flat.size:
        raise ValueError(f"a confusion matrix needs K*K entries, got {flat.size}")
    return np.rint(flat).astype(np.int64).reshape(k, k)


def confusion_to_metric(confusion: np.ndarray, *, legacy: bool = False) -> list[int] | str:
    """Flatten a K x K confusion matrix for a MetricRecord (legacy API: a JSON string).

    Parameters
    ----------
    confusion : numpy.ndarray
        The K x K matrix (rows true, columns predicted).
    legacy : bool
        Return a JSON string, as the legacy API's scalar-only metrics need (default False).

    Returns
    -------
    list of int or str
        The entries row-major; :func:`confusion_from_metric` reads either form back.

    Examples
    --------
    >>> confusion_to_metric(np.array([[3, 1], [0, 2]]))
    [3, 1, 0, 2]
    >>> confusion_to_metric(np.array([[3, 1], [0, 2]]), legacy=True)
    '[3, 1, 0, 2]'
    """
    flat = [int(v) for v in np.asarray(confusion).reshape(-1)]
    return json.dumps(flat) if legacy else flat


def client_values(metrics: Mapping[str, Any], *, keep_extra: bool = True) -> dict[str, float]:
    """RoundRecord ``client_metrics`` entries of one client's MetricRecord (scalars only).

    Renames Flower's keys (``num-examples`` -> ``num_samples``, ``num-batches`` ->
    ``num_batches``), drops bookkeeping (client id, confusion) and, unless ``keep_extra``, every
    key that is not a standard RoundRecord key.

    Parameters
    ----------
    metrics : mapping
        One client's reply metrics.
    keep_extra : bool
        Keep scalar keys beyond :data:`fltrust.names.CLIENT_METRIC_KEYS` (default True).

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> m = {"partition-id": 3, "num-examples": 120, "accuracy": 0.5, "qffl_loss": 0.7, "confusion": [1, 0, 0, 1]}
    >>> client_values(m)
    {'num_samples': 120.0, 'accuracy': 0.5, 'qffl_loss': 0.7}
    >>> client_values(m, keep_extra=False)
    {'num_samples': 120.0, 'accuracy': 0.5}
    """
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if key in BOOKKEEPING_KEYS or isinstance(value, (list, tuple, str, bytes)):
            continue
        name = RENAMED.get(key, key)
        if keep_extra or name in CLIENT_METRIC_KEYS:
            out[name] = float(value)
    return out
