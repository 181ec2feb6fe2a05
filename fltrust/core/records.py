"""Plain per-round records: the only thing metrics ever see of an FL engine.

Any engine (the in-process loop in :mod:`fltrust.engines.inprocess`, a Flower simulation, a user's own
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

``rejected`` lists the replies the server left out of the round because their report failed
its checks (:mod:`fltrust.flower.validation`), one entry each:
``{"node": node id, "client_id": the id claimed (an int) or None, "reasons": [{"field": ...,
"reason": ...}, ...]}``. Rejected clients are not in ``client_ids``; no per-client value of
theirs is kept. Empty (and absent from the JSON line) when nothing was rejected.

.. py:data:: Params
   :no-index-entry:

   ``list[numpy.ndarray]``: a model's parameters (and buffers) in ``state_dict`` order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from fltrust.core.io import to_plain

Params: TypeAlias = list[np.ndarray]
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
        when DP is on). The run recorder adds two strings: ``model_hash`` and ``chain_hash``
        (:mod:`fltrust.runs.chain`).
    client_params : list of Params
        Models the clients sent back this round, aligned with ``client_ids`` (for Ditto: the
        global-track models). Transient: not persisted in the run record.
    global_params_before : Params or None
        The model sent to the clients this round (theta_k). Transient.
    global_params_after : Params or None
        The aggregated model (theta_{k+1}). Transient.
    observations : dict
        Values that observers returned for this round, keyed by observer name. Persisted.
    rejected : list of dict
        Replies left out of the round because their report failed the server's checks (module
        docstring); persisted when not empty.
    """

    round: int
    client_ids: np.ndarray
    client_metrics: dict[str, np.ndarray] = field(default_factory=dict)
    client_confusion: np.ndarray | None = None
    server_metrics: dict[str, Any] = field(default_factory=dict)  # floats, and the recorder's two hashes
    client_params: list[Params] = field(default_factory=list, repr=False)
    global_params_before: Params | None = field(default=None, repr=False)
    global_params_after: Params | None = field(default=None, repr=False)
    observations: dict[str, Any] = field(default_factory=dict)
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def client_value(self, key: str, client_id: int) -> float:
        """Value of ``client_metrics[key]`` for one participating client.

        Parameters
        ----------
        key : str
            A client metric, e.g. ``"accuracy"`` or ``"num_samples"``.
        client_id : int
            The client, one of :attr:`client_ids`.

        Returns
        -------
        float

        Raises
        ------
        KeyError
            If the round has no metric ``key``, or the client did not take part in the round.
        """
        positions = np.flatnonzero(self.client_ids == client_id)
        if positions.size == 0:
            raise KeyError(f"client {client_id} did not take part in round {self.round} "
                           f"(participants: {self.client_ids.tolist()})")
        return float(self.client_metrics[key][int(positions[0])])

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form (transient model parameters are dropped; ``rejected`` only when not empty)."""
        data = {
            "round": int(self.round),
            "client_ids": [int(c) for c in self.client_ids],
            "client_metrics": {k: np.asarray(v).tolist() for k, v in self.client_metrics.items()},
            "client_confusion": None
            if self.client_confusion is None
            else np.asarray(self.client_confusion).astype(int).tolist(),
            "server_metrics": {k: to_plain(v) for k, v in self.server_metrics.items()},
            "observations": to_plain(self.observations),
        }
        if self.rejected:
            data["rejected"] = to_plain(self.rejected)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoundRecord:
        """Inverse of :meth:`to_json` (without model parameters)."""
        confusion = data.get("client_confusion")
        return cls(
            round=int(data["round"]),
            client_ids=np.asarray(data["client_ids"], dtype=np.int64),
            client_metrics={k: np.asarray(v, dtype=float) for k, v in data["client_metrics"].items()},
            client_confusion=None if confusion is None else np.asarray(confusion, dtype=np.int64),
            server_metrics=dict(data.get("server_metrics", {})),
            observations=dict(data.get("observations", {})),
            rejected=list(data.get("rejected", [])),
        )


@dataclass(frozen=True)
class AppFacts:
    """What an app without an fltrust ExperimentConfig says about itself (a Flower app).

    :func:`fltrust.flower.instrument` fills it from the app's own objects; the FederatedTrust
    FactSheet describes the app from it (:func:`fltrust.trust.observer.describe_app`).

    Attributes
    ----------
    name : str
        The run's name.
    model : str
        The model's class name (``type(model).__name__``).
    strategy : str
        The strategy's class name.
    strategy_params : dict
        The strategy's public scalar attributes (``fraction_train``, ``min_available_nodes``, ...).
    dataset_name, dataset_description : str
        As the app states them.
    preprocessing : str
        How the app preprocesses its data, as it states it ("" = not stated, reported missing).
    learning_rate : float or None
        Client learning rate, when the app states it.
    local_epochs : int or None
        Local epochs per round, when the app states it.
    """

    name: str
    model: str
    strategy: str
    strategy_params: dict[str, Any] = field(default_factory=dict)
    dataset_name: str = ""
    dataset_description: str = ""
    preprocessing: str = ""
    learning_rate: float | None = None
    local_epochs: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON and YAML ready)."""
        return to_plain({f: getattr(self, f) for f in self.__dataclass_fields__})


@dataclass
class RunInfo:
    """What observers learn when a run starts (before round 0).

    The run's facts travel here, not in the observers' settings: what the run is (``config`` for
    an fltrust experiment, ``app`` for anyone's app), how many clients and rounds, and the
    clients' label counts -- known up front by an fltrust experiment, or recorded as the clients
    report them (:meth:`record_client`; a deployment's server never sees the data).

    Attributes
    ----------
    run_id : str
        Stable id of the run (config hash, seed, repeat; an app's run folder name).
    num_clients : int
        Number of registered clients C.
    num_rounds : int
        Number of training rounds T.
    num_classes : int
        Number of label values K (0 = not known yet: recorded with the clients' label counts).
    client_num_samples : np.ndarray
        Training samples per client, length C (0 for a client that has not reported yet).
    client_class_counts : np.ndarray
        ``(C, K)`` training label counts per client; ``(C, 0)`` when none are known at the start.
    config : dict
        The resolved experiment configuration (``ExperimentConfig.to_dict()``); ``{}`` for an app.
    dataset : dict
        ``DatasetBundle.summary()`` of the data used (an app: its name and description).
    clients_per_round : int or None
        Clients sampled per round when the run fixes it; ``None`` = whatever the rounds show.
    app : AppFacts or None
        What an app without ``config`` says about itself.
    """

    run_id: str
    num_clients: int
    num_rounds: int
    num_classes: int
    client_num_samples: np.ndarray
    client_class_counts: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)
    dataset: dict[str, Any] = field(default_factory=dict)
    clients_per_round: int | None = None
    app: AppFacts | None = None

    def record_client(self, client_id: int, class_counts: Any) -> None:
        """Store one client's training label counts (as it reports them); widens K if needed.

        Parameters
        ----------
        client_id : int
            In ``[0, num_clients)``.
        class_counts : sequence of int
            Training samples per label value 0..K-1.

        Examples
        --------
        >>> info = RunInfo("app", 2, 1, 0, np.zeros(2), np.zeros((2, 0)))
        >>> info.record_client(1, [3, 0, 1])
        >>> info.client_class_counts.tolist(), info.client_num_samples.tolist(), info.num_classes
        ([[0.0, 0.0, 0.0], [3.0, 0.0, 1.0]], [0.0, 4.0], 3)
        """
        counts = np.asarray(class_counts, dtype=float).reshape(-1)
        if not 0 <= int(client_id) < self.num_clients:
            raise ValueError(f"client id {client_id} is outside 0..{self.num_clients - 1} "
                             f"(the run has {self.num_clients} clients)")
        if counts.size == 0 or np.any(counts < 0) or not np.all(np.isfinite(counts)):
            raise ValueError(f"client {client_id}'s label counts {counts.tolist()} must be non-negative numbers")
        table = np.asarray(self.client_class_counts, dtype=float).reshape(self.num_clients, -1)
        width = max(table.shape[1], counts.size)
        if width > table.shape[1]:
            table = np.pad(table, ((0, 0), (0, width - table.shape[1])))
        table[int(client_id)] = np.pad(counts, (0, width - counts.size))
        self.client_class_counts = table
        samples = np.asarray(self.client_num_samples, dtype=float).reshape(-1)
        if samples.size != self.num_clients:
            samples = np.zeros(self.num_clients)
        samples[int(client_id)] = counts.sum()
        self.client_num_samples = samples
        self.num_classes = max(int(self.num_classes), width)


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
