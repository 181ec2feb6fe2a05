"""Client-side helper: what a ClientApp reports so that the server can compute both papers' metrics.

Use it inside any Flower ``@app.train()`` function::

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
from fltrust.flower.records import CLIENT_ID_KEY, CONFUSION_KEY, arrays_to_params, confusion_to_metric


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
    partition_id : int
        The client id (``context.node_config["partition-id"]``), in ``[0, C)``.
    """

    def __init__(self, evaluate: Callable[[Params], EvalResult], *, partition_id: int) -> None:
        self.evaluate = evaluate
        self.partition_id = int(partition_id)
        self.reward_result: EvalResult | None = None
        self.bytes_received = 0
        self._start: float | None = None

    @classmethod
    def for_model(cls, model, x_val, y_val, *, partition_id: int, num_classes: int, batch_size: int = 1024,
                  loss_scaling: str = "mean") -> "ClientReport":
        """A report that evaluates ``model``'s architecture on ``(x_val, y_val)`` (torch tensors)."""
        from fltrust.core.evaluation import evaluate, set_params

        def run(params: Params) -> EvalResult:
            set_params(model, params)
            return evaluate(model, x_val, y_val, num_classes=num_classes, batch_size=batch_size,
                            loss_scaling=loss_scaling)

        return cls(run, partition_id=partition_id)

    def reward(self, received: Any) -> EvalResult:
        """Evaluate the received global model (before any training) and start the clock."""
        self._start = time.perf_counter()
        params = _as_params(received)
        self.bytes_received = int(sum(np.asarray(p).nbytes for p in params))
        self.reward_result = self.evaluate(params)
        return self.reward_result

    def _values(self, trained: Any, *, num_examples: int, num_batches: int, train_loss: float,
                performance: Any | None, extra: Mapping[str, float] | None) -> tuple[dict[str, Any], np.ndarray]:
        if self.reward_result is None or self._start is None:
            raise RuntimeError("call ClientReport.reward(received) before training, then finish(...)")
        sent = _as_params(trained)
        result = self.evaluate(sent if performance is None else _as_params(performance))
        elapsed = time.perf_counter() - self._start
        values: dict[str, Any] = {
            CLIENT_ID_KEY: self.partition_id,
            "num-examples": int(num_examples),
            "num-batches": int(num_batches),
            "val_samples": int(result.num_samples),
            "reward_accuracy": float(self.reward_result.accuracy),
            "reward_loss": float(self.reward_result.loss),
            "accuracy": float(result.accuracy),
            "loss": float(result.loss),
            "train_loss": float(train_loss),
            "train_time_s": float(elapsed),
            "bytes_received": self.bytes_received,
            "bytes_sent": int(sum(np.asarray(p).nbytes for p in sent)),
        }
        values.update({k: float(v) for k, v in (extra or {}).items()})
        return values, result.confusion

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
        """
        from flwr.app import MetricRecord

        values, confusion = self._values(trained, num_examples=num_examples, num_batches=num_batches,
                                         train_loss=train_loss, performance=performance, extra=extra)
        values[CONFUSION_KEY] = confusion_to_metric(confusion)
        return MetricRecord(values)

    def finish_legacy(self, trained: Any, **kwargs: Any) -> dict[str, Any]:
        """:meth:`finish` for the legacy API: a dict of scalars (the confusion matrix as JSON)."""
        values, confusion = self._values(trained, performance=kwargs.pop("performance", None),
                                         extra=kwargs.pop("extra", None), **kwargs)
        values[CONFUSION_KEY] = confusion_to_metric(confusion, legacy=True)
        return values
