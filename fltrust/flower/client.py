"""Client-side helper: what a ClientApp reports so that the server can compute both papers' metrics.

For anyone's app the one call is :func:`fltrust.flower.client_report` (a report from the model
and the client's DataLoaders), then ``report.attach(content)``. By hand, inside any Flower
``@app.train()`` function::

    report = ClientReport.for_model(model, x_val, y_val, partition_id=pid, num_classes=10)
    report.reward(received)                       # received model on the validation set, BEFORE training
    trained, train_loss = my_training(received)   # your own training code
    metrics = report.finish(trained, num_examples=len(x_train), num_batches=ceil(len(x_train) / B),
                            train_loss=train_loss)
    return Message(RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics}), reply_to=msg)

``metrics`` is a Flower ``MetricRecord`` with the keys of :mod:`fltrust.flower.records`
(``num-examples`` doubles as Flower's FedAvg weight). For the legacy API (``NumPyClient.fit``
returns a dict of scalars) use :meth:`ClientReport.finish_legacy`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from fltrust.core.evaluation import EvalResult
from fltrust.core.records import Params
from fltrust.flower.records import (
    CLIENT_ID_KEY,
    CONFUSION_KEY,
    FLTRUST_KEY,
    LABEL_COUNTS_KEY,
    arrays_to_params,
    confusion_to_metric,
)


def _as_params(params: Any) -> Params:
    """Params from a list of arrays, a Flower ArrayRecord or a torch ``state_dict``."""
    if hasattr(params, "to_numpy_ndarrays"):
        return arrays_to_params(params)
    if isinstance(params, Mapping):  # a state_dict
        return [v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v) for v in params.values()]
    return [np.asarray(p) for p in params]


class ClientReport:
    """Measures one client's round: reward before training, performance after, counts and timing.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(params) -> EvalResult`` on the client's validation set (loss, accuracy,
        confusion matrix); :meth:`for_model` builds it from a torch model.
    partition_id : int or None
        The client id (``context.node_config["partition-id"]``), in ``[0, C)``; ``None`` = the
        server numbers the SuperNodes (:class:`fltrust.flower.InstrumentedStrategy`).
    """

    def __init__(self, evaluate: Callable[[Params], EvalResult], *, partition_id: int | None) -> None:
        self.evaluate = evaluate
        self.partition_id = None if partition_id is None else int(partition_id)
        self.reward_result: EvalResult | None = None
        self.bytes_received = 0
        self._start: float | None = None
        self.model: Any = None
        self.train_facts: dict[str, Any] = {}

    @classmethod
    def for_model(cls, model, x_val, y_val, *, partition_id: int | None, num_classes: int, batch_size: int = 1024,
                  loss_scaling: str = "mean") -> ClientReport:
        """A report that evaluates ``model``'s architecture on ``(x_val, y_val)`` (torch tensors).

        The evaluation runs on the model's device (the validation tensors are moved there once),
        so a CUDA model is evaluated on CUDA.

        Parameters
        ----------
        model : torch.nn.Module
            The client's model; each evaluation loads the parameters to evaluate into it.
        x_val, y_val : torch.Tensor
            The client's validation inputs and integer labels.
        partition_id : int or None
            The client id, as in :class:`ClientReport`.
        num_classes : int
            C, the size of the confusion matrix.
        batch_size : int
            Evaluation mini-batch (default 1024; with ``loss_scaling="per_batch_sum"`` use the
            training batch size, as that convention depends on it).
        loss_scaling : {"mean", "per_batch_sum"}
            The loss convention of :func:`fltrust.core.evaluation.evaluate` (default ``"mean"``).

        Returns
        -------
        ClientReport
        """
        from fltrust.core.evaluation import evaluate, set_params
        from fltrust.flower.tensors import model_device

        on_device: dict[Any, tuple[Any, Any]] = {}

        def run(params: Params) -> EvalResult:
            set_params(model, params)
            device = model_device(model)
            if device not in on_device:
                on_device.clear()
                on_device[device] = (x_val.to(device), y_val.to(device))
            x, y = on_device[device]
            return evaluate(model, x, y, num_classes=num_classes, batch_size=batch_size, loss_scaling=loss_scaling)

        return cls(run, partition_id=partition_id)

    def reward(self, received: Any) -> EvalResult:
        """Evaluate the received global model (before any training) and start the clock."""
        self._start = time.perf_counter()
        params = _as_params(received)
        self.bytes_received = int(sum(np.asarray(p).nbytes for p in params))
        self.reward_result = self.evaluate(params)
        return self.reward_result

    def _values(self, trained: Any, *, num_examples: int, num_batches: int | None, train_loss: float,
                performance: Any | None, extra: Mapping[str, float] | None, legacy: bool = False) -> dict[str, Any]:
        if self.reward_result is None or self._start is None:
            raise RuntimeError("call ClientReport.reward(received) before training, then finish(...)")
        sent = _as_params(trained)
        result = self.evaluate(sent if performance is None else _as_params(performance))
        elapsed = time.perf_counter() - self._start
        values: dict[str, Any] = {} if self.partition_id is None else {CLIENT_ID_KEY: self.partition_id}
        values.update({
            "num-examples": int(num_examples),
            "val_samples": int(result.num_samples),
            "reward_accuracy": float(self.reward_result.accuracy),
            "reward_loss": float(self.reward_result.loss),
            "accuracy": float(result.accuracy),
            "loss": float(result.loss),
            "train_loss": float(train_loss),
            "train_time_s": float(elapsed),
            "bytes_received": self.bytes_received,
            "bytes_sent": int(sum(np.asarray(p).nbytes for p in sent)),
        })
        if num_batches is not None:
            values["num-batches"] = int(num_batches)
        values.update({k: float(v) for k, v in (extra or {}).items()})
        values[CONFUSION_KEY] = confusion_to_metric(result.confusion, legacy=legacy)
        return values

    def finish(self, trained: Any, *, num_examples: int, num_batches: int, train_loss: float,
               performance: Any | None = None, extra: Mapping[str, float] | None = None):
        """Evaluate the model after training and return everything as a Flower ``MetricRecord``.

        Parameters
        ----------
        trained : list of arrays, ArrayRecord or state_dict
            The model the client sends back.
        num_examples, num_batches : int
            Local training samples and mini-batches per epoch.
        train_loss : float
            Mean training loss of the last local epoch.
        performance : optional
            The model whose validation accuracy is the client's performance when it is not the
            one sent (Ditto's personal model).
        extra : mapping, optional
            More scalar metrics to send (e.g. a strategy's loss key).

        Returns
        -------
        flwr.app.MetricRecord
            The keys of :mod:`fltrust.flower.records`, the confusion matrix as a flat list.

        Raises
        ------
        RuntimeError
            If :meth:`reward` was not called first.
        """
        from flwr.app import MetricRecord

        return MetricRecord(self._values(trained, num_examples=num_examples, num_batches=num_batches,
                                         train_loss=train_loss, performance=performance, extra=extra))

    def finish_legacy(self, trained: Any, **kwargs: Any) -> dict[str, Any]:
        """:meth:`finish` for the legacy API: a dict of scalars (the confusion matrix as JSON).

        Parameters
        ----------
        trained : list of arrays, ArrayRecord or state_dict
            The model the client sends back.
        **kwargs
            :meth:`finish`'s keywords: ``num_examples``, ``num_batches`` and ``train_loss``
            (required), ``performance`` and ``extra`` (optional).

        Returns
        -------
        dict of str to Any
            The fit metrics for ``NumPyClient.fit`` (``partition-id`` included when known).
        """
        return self._values(trained, performance=kwargs.pop("performance", None), extra=kwargs.pop("extra", None),
                            legacy=True, **kwargs)

    def attach(self, content: Any, *, model: Any = None, train_loss: float | None = None):
        """Evaluate the trained model and add the report to the reply's ``content``.

        For a report made by :func:`fltrust.flower.client_report`. The report goes in a
        ``ConfigRecord`` under ``"fltrust"``, beside the app's own ``"arrays"`` and
        ``"metrics"``; the server reads and removes it before the app's strategy aggregates.

        Parameters
        ----------
        content : flwr.app.RecordDict
            The reply's content (modified in place and returned).
        model : nn.Module or None
            The trained model (default: the one given to ``client_report``, trained in place).
        train_loss : float or None
            The last epoch's training loss; default: the ``train_loss`` of the content's
            MetricRecord when it has one, else NaN.

        Returns
        -------
        flwr.app.RecordDict
            ``content``, for ``Message(report.attach(content), reply_to=msg)``.
        """
        from flwr.app import ConfigRecord

        model = self.model if model is None else model
        if model is None or not self.train_facts:
            raise RuntimeError("ClientReport.attach is for reports made by fltrust.flower.client_report(model, train, "
                               "val); by hand use finish(...)")
        if train_loss is None:
            found = [r["train_loss"] for r in content.metric_records.values() if "train_loss" in r]
            train_loss = float(found[0]) if found else float("nan")
        facts = self.train_facts
        values = self._values(model.state_dict(), num_examples=facts["num_examples"],
                              num_batches=facts["num_batches"], train_loss=train_loss, performance=None, extra=None)
        values[LABEL_COUNTS_KEY] = list(facts["label_counts"])
        if facts.get("num_partitions") is not None:
            values["num-partitions"] = int(facts["num_partitions"])
        content[FLTRUST_KEY] = ConfigRecord(values)
        return content
