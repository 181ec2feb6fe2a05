"""Plain per-round records: the only thing metrics ever see of an FL engine.

Any engine (the in-process loop in :mod:`fltrust.fl.engine`, a Flower simulation, a user's own
loop) builds one :class:`RoundRecord` per round and hands it to the observers
(:class:`fltrust.core.observers.RoundObserver`). Metrics never import an engine.

Round numbering follows Flower: round 0 is the initial model (no clients), rounds 1..T train.

Per-client arrays in ``client_metrics`` are aligned with ``client_ids`` (sorted ascending).
Standard keys written by the in-process engine (other engines should use the same names):

=====================  =====================================================================
key                    meaning
=====================  =====================================================================
``num_samples``        local training samples
``num_batches``        local training mini-batches per epoch, ceil(num_samples / batch_size)
``val_samples``        local validation samples
``reward_accuracy``    accuracy of the *received* global model on the client's validation set,
                       measured before local training (the fairness paper's reward r_{n,k})
``reward_loss``        loss of the received global model on the validation set
``accuracy``           accuracy after local training on the validation set (Ditto: the
                       personal model) -- the fairness paper's performance x_{n,k}
``loss``               matching validation loss
``train_loss``         mean training loss of the last local epoch
``train_time_s``       wall time of local training and evaluation
``bytes_received``     bytes of the model the client received
``bytes_sent``         bytes of the update the client sent
=====================  =====================================================================

Losses follow the *evaluation convention* of the run (``training.loss_scaling``): either the
per-sample mean (``"mean"``) or the fairness authors' sum of per-batch means divided by the
number of samples (``"per_batch_sum"``, about mean / batch_size).

``client_confusion`` holds each client's validation confusion matrix, shape
``(m, K, K)``, rows = true label, columns = predicted label (the model that produced
``accuracy``). Every group statistic the papers use can be computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fltrust.core.io import to_plain

Params = list[np.ndarray]
"""A model's parameters (and buffers) as a list of numpy arrays in ``state_dict`` order."""


@dataclass
class RoundRecord:
    """Everything observable about one federated round.

    Attributes
    ----------
    round : int
        Server round (0 = initial model, no training).
    client_ids : np.ndarray
        Participating client ids, int64, sorted ascending.
    client_metrics : dict of str to np.ndarray
        Per-client values aligned with ``client_ids`` (see the module docstring for keys).
    client_confusion : np.ndarray or None
        ``(m, K, K)`` validation confusion matrices of the participating clients.
    server_metrics : dict of str to float
        Server-side values. Standard keys: ``aux_loss_before`` / ``aux_accuracy_before``
        (received global model theta_k on the auxiliary set D), ``aux_loss`` /
        ``aux_accuracy`` (aggregated model theta_{k+1} on D), ``epsilon`` (privacy spent so far,
        when DP is on).
    client_params : list of Params
        Models the clients sent back this round, aligned with ``client_ids`` (for Ditto: the
        global-track models). Transient: not persisted in the run record.
    global_params_before : Params or None
        The model sent to the clients this round (theta_k). Transient.
    global_params_after : Params or None
        The aggregated model (theta_{k+1}). Transient.
    observations : dict
        Values that observers returned for this round, keyed by observer name. Persisted.
    """

    round: int
    client_ids: np.ndarray
    client_metrics: dict[str, np.ndarray] = field(default_factory=dict)
    client_confusion: np.ndarray | None = None
    server_metrics: dict[str, float] = field(default_factory=dict)
    client_params: list[Params] = field(default_factory=list, repr=False)
    global_params_before: Params | None = field(default=None, repr=False)
    global_params_after: Params | None = field(default=None, repr=False)
    observations: dict[str, Any] = field(default_factory=dict)

    def client_value(self, key: str, client_id: int) -> float:
        """Value of ``client_metrics[key]`` for one participating client."""
        position = int(np.flatnonzero(self.client_ids == client_id)[0])
        return float(self.client_metrics[key][position])

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form (transient model parameters are dropped)."""
        return {
            "round": int(self.round),
            "client_ids": [int(c) for c in self.client_ids],
            "client_metrics": {k: np.asarray(v).tolist() for k, v in self.client_metrics.items()},
            "client_confusion": None
            if self.client_confusion is None
            else np.asarray(self.client_confusion).astype(int).tolist(),
            "server_metrics": {k: to_plain(v) for k, v in self.server_metrics.items()},
            "observations": to_plain(self.observations),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RoundRecord":
        """Inverse of :meth:`to_json` (without model parameters)."""
        confusion = data.get("client_confusion")
        return cls(
            round=int(data["round"]),
            client_ids=np.asarray(data["client_ids"], dtype=np.int64),
            client_metrics={k: np.asarray(v, dtype=float) for k, v in data["client_metrics"].items()},
            client_confusion=None if confusion is None else np.asarray(confusion, dtype=np.int64),
            server_metrics=dict(data.get("server_metrics", {})),
            observations=dict(data.get("observations", {})),
        )


@dataclass
class RunInfo:
    """What observers learn when a run starts (before round 0).

    Attributes
    ----------
    run_id : str
        Stable id of the run (config hash, seed, repeat).
    num_clients : int
        Number of registered clients C.
    num_rounds : int
        Number of training rounds T.
    num_classes : int
        Number of label values K.
    client_num_samples : np.ndarray
        Training samples per client, length C.
    client_class_counts : np.ndarray
        ``(C, K)`` training label counts per client.
    config : dict
        The resolved experiment configuration (``ExperimentConfig.to_dict()``).
    dataset : dict
        ``DatasetBundle.summary()`` of the data used.
    """

    run_id: str
    num_clients: int
    num_rounds: int
    num_classes: int
    client_num_samples: np.ndarray
    client_class_counts: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)
    dataset: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunSummary:
    """What observers learn when a run ends.

    Attributes
    ----------
    info : RunInfo
        The run's start information.
    rounds : list of RoundRecord
        Every round's record (round 0 first); model parameters are not kept.
    final_params : Params
        The final global model.
    wall_time_s : float
        Total run time.
    system : dict
        System figures: ``model_num_params``, ``model_num_tensors``, ``model_bytes``,
        ``bytes_up_total``, ``bytes_down_total``, ``train_time_s_total``.
    """

    info: RunInfo
    rounds: list[RoundRecord]
    final_params: Params
    wall_time_s: float
    system: dict[str, Any] = field(default_factory=dict)
