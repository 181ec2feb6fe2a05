"""Both papers' metrics on anyone's Flower app: :func:`instrument` on the server, :func:`client_report` on the clients.

Server (``@app.main()`` of a ServerApp), around the app's own Message-API strategy::

    strategy = instrument(FedAvg(fraction_train=0.5), model=Net(), aux=aux_loader, test=test_loader,
                          out_dir="runs", name="quickstart", dataset_name="CIFAR-10")
    result = strategy.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()), num_rounds=3)

Client (``@app.train()`` of a ClientApp), after loading the received model and before training::

    report = client_report(model, trainloader, valloader, context=context)
    ...                                    # the app's own training
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": MetricRecord(metrics)})
    return Message(report.attach(content), reply_to=msg)

What happens:

- :func:`instrument` checks the app's facts (one error before round 1 naming the missing
  argument), and returns an :class:`InstrumentedStrategy`. Its ``start`` (Flower's
  ``Strategy.start``, same arguments and result) counts the connected SuperNodes, creates a new
  run folder ``<out_dir>/<name>-<YYYYmmdd-HHMMSS>-<8 hex>`` (never reused: reruns never
  overwrite), holds its lock (:func:`fltrust.runs.locked`) for the run, and records every round
  with a :class:`~fltrust.runs.RunRecorder`: ``rounds.jsonl``, ``factsheet.json``, the trust
  report, ``final_model.pt`` and ``summary.json``; ``fltrust audit <folder>`` checks them.
- Per round the :class:`~fltrust.metrics.fairness.FairnessObserver` computes FedSV on the aux set
  and every registered fairness notion (f_j, f_g, f_r, f_o and any other of
  :data:`fltrust.metrics.fairness.registry.NOTIONS`) and F_T; the :class:`~fltrust.trust.observer.TrustObserver`
  scores the FactSheet so far. Both are stored with the round and returned to Flower with the app's own
  ``evaluate_fn`` metrics (``fltrust.F_T``, ``fltrust.f_j``, ..., ``fltrust.trust_score``, ``fltrust.aux_accuracy``
  in ``result.evaluate_metrics_serverapp[round]`` and Flower's log: :data:`RETURNED_KEYS`).
- Each client's report travels in the reply as a separate ``ConfigRecord`` under ``"fltrust"``:
  the received model's accuracy on the client's validation set before training (the fairness
  paper's reward), the trained model's accuracy, loss and confusion matrix, sample and batch
  counts, the training label counts (the server needs none up front), time and bytes. The
  wrapped strategy removes it before the app's strategy aggregates, so none of it reaches
  Flower's metric aggregation or log. Client ids are the SuperNodes' ``partition-id`` (node
  config) or, without one, their position among the node ids at the start: no extra handler.

The FactSheet describes the app (:class:`~fltrust.core.records.AppFacts`): the model's class
and parameter count, the dataset name and description you pass, the strategy's class and public
attributes, and the clients and rounds of the run. How the app's data and model are read (DataLoaders
or ``(x, y)``, the training labels, the model's device and classes): :mod:`fltrust.flower.tensors`.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy
from torch import nn

from fltrust.core.evaluation import evaluate, set_params
from fltrust.core.observers import ObserverSet
from fltrust.core.records import AppFacts, Params, RunInfo
from fltrust.flower.adapter import ObservedStrategy
from fltrust.flower.client import ClientReport
from fltrust.flower.records import (
    CLIENT_ID_KEY,
    CONFUSION_KEY,
    FLTRUST_KEY,
    LABEL_COUNTS_KEY,
    arrays_to_params,
    cast_like,
    confusion_from_metric,
)
from fltrust.flower.sinks import ClientRow
from fltrust.flower.tensors import as_tensors, model_device, model_num_classes, read_labels
from fltrust.metrics.fairness.registry import GENERAL_FAIRNESS, NotionKeys
from fltrust.names import EXTENDED_TRUST_MODE
from fltrust.settings import FairnessSettings, TrustSettings

log = logging.getLogger("fltrust")

EVAL_BATCH_SIZE = 256
"""Samples per forward pass when fltrust evaluates a model (the loss is the per-sample mean)."""

RETURNED_KEYS = NotionKeys(before=("aux_loss", "aux_accuracy", GENERAL_FAIRNESS), after=("trust_score",), general=False)
"""fltrust's values in the round's returned MetricRecord, each prefixed ``fltrust.``: the aux loss and
accuracy, F_T, every registered fairness notion (a live view of the notion table), the trust score."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LR_KEYS = ("lr", "learning-rate", "learning_rate")
_EPOCH_KEYS = ("local-epochs", "local_epochs", "epochs")


def _fail(argument: str, message: str) -> ValueError:
    return ValueError(f"fltrust.flower.instrument: {argument}= {message}")


# --------------------------------------------------------------------------------------------
# client side
# --------------------------------------------------------------------------------------------
def client_report(model: nn.Module, train: Any, val: Any, *, context: Any = None,
                  batch_keys: tuple[str, str] | None = None) -> ClientReport:
    """Start fltrust's report of one client's round (call it before training).

    It evaluates ``model`` as received (load the server's arrays first) on ``val``: the fairness
    paper's reward. After training, ``report.attach(content)`` evaluates the trained model and
    adds the report to the reply (``content["fltrust"]``, a ConfigRecord the server's
    :class:`InstrumentedStrategy` reads and removes). Evaluation runs on the model's device.

    Parameters
    ----------
    model : nn.Module
        The client's model, loaded with the received arrays; trained in place afterwards (or
        pass the trained one to ``attach(content, model=...)``).
    train : DataLoader or (x, y)
        The client's training data: its label counts and sizes are reported (the labels are read
        from a TensorDataset, torchvision or Hugging Face dataset directly; another DataLoader is
        iterated once).
    val : DataLoader or (x, y)
        The client's validation data (reward, accuracy, confusion matrix).
    context : flwr.app.Context or None
        The ClientApp's context: its node config's ``partition-id`` becomes the client id
        (without it the server numbers the SuperNodes itself).
    batch_keys : (str, str) or None
        Keys of inputs and labels in dict batches (see :func:`as_tensors`).

    Returns
    -------
    ClientReport
        With the reward measured; call :meth:`ClientReport.attach` on the reply's content.
    """
    x_val, y_val = as_tensors(val, what="client_report val", batch_keys=batch_keys)
    node_config = dict(getattr(context, "node_config", None) or {})
    counts = np.bincount(read_labels(train, batch_keys, "client_report train").numpy(), minlength=1)
    num_classes = max(model_num_classes(model, x_val, y_val), len(counts))
    report = ClientReport.for_model(model, x_val, y_val, num_classes=num_classes, batch_size=EVAL_BATCH_SIZE,
                                    partition_id=node_config.get(CLIENT_ID_KEY))
    n = int(counts.sum())
    batches = len(train) if hasattr(train, "dataset") and hasattr(train, "__len__") else None
    report.train_facts = {"num_examples": n, "num_batches": batches, "label_counts": [int(c) for c in counts],
                          "num_partitions": node_config.get("num-partitions")}
    report.model = model
    report.reward(model.state_dict())
    return report


# --------------------------------------------------------------------------------------------
# server side
# --------------------------------------------------------------------------------------------
def _public_params(strategy: Any) -> dict[str, Any]:
    """The strategy's public plain attributes (a wrapped strategy by its class name)."""
    out: dict[str, Any] = {}
    for name, value in sorted(vars(strategy).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, (bool, int, float, str)) or value is None:
            out[name] = value
        elif isinstance(value, Strategy):
            out[name] = type(value).__name__
    return out


def _check_aux(y: torch.Tensor, num_classes: int) -> None:
    """Warn when the aux set cannot judge every class (FedSV on it would be skewed)."""
    counts = np.bincount(y.numpy(), minlength=num_classes)[:num_classes]
    absent = [int(k) for k in np.flatnonzero(counts == 0)]
    share = counts.max() / counts.sum()
    if absent or share > 2.0 / num_classes:
        log.warning("fltrust.flower.instrument: the aux set (%d samples) is skewed: labels %s absent, the largest "
                    "label holds %.0f%%; FedSV rewards clients for the aux set's classes only -- draw it from "
                    "every class", len(y), absent or "none", 100 * share)


class InstrumentedStrategy(ObservedStrategy):
    """A Flower strategy that records both papers' metrics; made by :func:`instrument`.

    Everything Flower sees is the wrapped strategy's (sampling, aggregation, its summary and
    attributes); :meth:`start` adds the run folder, the observers and the per-round values.

    Attributes
    ----------
    run_folder : Path or None
        The run's folder, once :meth:`start` has begun.
    info : RunInfo or None
        What the observers were told (clients, rounds, the app's facts; label counts as they arrive).
    """

    def __init__(self, strategy: Strategy, *, model: nn.Module, aux: tuple[torch.Tensor, torch.Tensor] | None,
                 test: tuple[torch.Tensor, torch.Tensor] | None, out_dir: Path, name: str,
                 fairness: FairnessSettings | None, trust: TrustSettings | None, facts: dict[str, Any],
                 num_clients: int | None, seed: int) -> None:
        super().__init__(strategy, None, keep_extra_metrics=False)
        self.model = model
        self.device = model_device(model)
        self.aux, self.test = aux, test
        self.out_dir, self.name = out_dir, name
        self.fairness, self.trust = fairness, trust
        self.facts = facts
        self.num_clients = num_clients
        self.seed = int(seed)
        self.run_folder: Path | None = None
        self.info: RunInfo | None = None
        self._eval_model = copy.deepcopy(model).to(self.device)
        self._num_classes = facts["num_classes"]
        self._warned_fedsv = False

    # -- replies -------------------------------------------------------------------------------
    def _row(self, message: Message) -> ClientRow:
        """Read the client's fltrust report (and remove it, so the app's strategy never sees it)."""
        content = message.content
        node = int(message.metadata.src_node_id)
        if FLTRUST_KEY not in content.config_records:
            raise ValueError(f"node {node} replied without fltrust's report: in the ClientApp call "
                             "report = fltrust.flower.client_report(model, train, val, context=context) before "
                             "training and return Message(report.attach(content), reply_to=msg)")
        values = dict(content[FLTRUST_KEY])
        del content[FLTRUST_KEY]
        key = getattr(self.strategy, "arrayrecord_key", "arrays")
        record = content.array_records.get(key) or next(iter(content.array_records.values()), None)
        if record is None:
            raise ValueError(f"node {node} replied without an ArrayRecord")
        cid = int(values[CLIENT_ID_KEY]) if CLIENT_ID_KEY in values else self.node_partitions.get(node)
        if cid is None or not 0 <= cid < self.info.num_clients:
            raise ValueError(f"node {node} reports client id {cid}, outside 0..{self.info.num_clients - 1}: "
                             f"{self.info.num_clients} SuperNodes were connected at the start; pass num_clients= "
                             "to fltrust.flower.instrument when more join later")
        self.info.record_client(cid, values.pop(LABEL_COUNTS_KEY))
        params = [cast_like(p, ref) for p, ref in zip(arrays_to_params(record), self.builder.reference)]
        confusion = confusion_from_metric(values[CONFUSION_KEY])
        return ClientRow(cid, node, params, values, confusion)

    # -- server evaluation --------------------------------------------------------------------
    def _aux_metrics(self, arrays: ArrayRecord) -> dict[str, float]:
        if self.aux is None:
            return {}
        set_params(self._eval_model, arrays_to_params(arrays))
        result = evaluate(self._eval_model, *self.aux, num_classes=self._num_classes, batch_size=EVAL_BATCH_SIZE)
        return {"aux_loss": result.loss, "aux_accuracy": result.accuracy}

    def _returned(self, record) -> dict[str, float]:
        values = dict(record.server_metrics)
        values.update(record.observations.get("fairness") or {})
        values.update({k: v for k, v in (record.observations.get("trust") or {}).items() if k == "trust_score"})
        out = {}
        for key in RETURNED_KEYS:
            value = values.get(key)
            if key in values and not isinstance(value, (list, dict, str)):
                out[f"fltrust.{key}"] = float("nan") if value is None else float(value)
        return out

    def _warn_fedsv_cost(self, record) -> None:
        m = len(record.client_ids)
        if self._warned_fedsv or self.fairness is None or self.fairness.shapley != "exact" or m < 8:
            return
        self._warned_fedsv = True
        log.warning("fltrust: exact FedSV evaluates 2^%d - 1 = %d coalition models per round on the aux set; with many "
                    "participants use FairnessSettings(shapley=...) sampling (README, Flower section)", m, 2 ** m - 1)

    # -- the run ------------------------------------------------------------------------------
    def _wait_for_nodes(self, grid: Grid, timeout: float, settle_s: float = 0.5) -> list[int]:
        """The SuperNodes at the start: at least ``num_clients`` (else the strategy's
        ``min_available_nodes``), once their number has not changed for ``settle_s`` seconds."""
        need = self.num_clients or max(1, int(getattr(self.strategy, "min_available_nodes", 1) or 1))
        deadline = time.monotonic() + timeout
        nodes, stable_since = [], time.monotonic()
        while True:
            now_nodes = sorted(int(n) for n in grid.get_node_ids())
            if now_nodes != nodes:
                nodes, stable_since = now_nodes, time.monotonic()
            if len(nodes) >= need and (self.num_clients or time.monotonic() - stable_since >= settle_s):
                return nodes
            if time.monotonic() > deadline:
                raise TimeoutError(f"fltrust: only {len(nodes)} of {need} SuperNodes connected within {timeout:.0f} s")
            time.sleep(0.05)

    def _new_folder(self, description: dict[str, Any]) -> Path:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for attempt in range(100):
            blob = json.dumps([description, time.time_ns(), os.getpid(), attempt], sort_keys=True, default=str)
            path = self.out_dir / f"{self.name}-{stamp}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"
            with contextlib.suppress(FileExistsError):
                path.mkdir()
                return path
        raise RuntimeError(f"fltrust: could not create a new run folder in {self.out_dir}")

    def _observers(self, folder: Path) -> ObserverSet:
        observers = []
        if self.fairness is not None:
            from fltrust.metrics.fairness import FairnessObserver

            observers.append(FairnessObserver(self.fairness, copy.deepcopy(self._eval_model), *self.aux,
                                              batch_size=EVAL_BATCH_SIZE, seed=self.seed))
        if self.trust is not None:
            from fltrust.trust.observer import TrustObserver

            model = copy.deepcopy(self._eval_model)
            extended = None
            if self.trust.mode == EXTENDED_TRUST_MODE:
                from fltrust.trust.extended import ExtendedMetrics

                extended = ExtendedMetrics(self.trust, self.facts["trust_inputs"], model, *self.test)
            observers.append(TrustObserver(self.trust, model, *self.test, run_folder=folder,
                                           seed=self.seed, batch_size=EVAL_BATCH_SIZE, extended=extended))
        return ObserverSet(observers)

    def start(self, grid: Grid, initial_arrays: ArrayRecord, num_rounds: int = 3, timeout: float = 3600,
              train_config: ConfigRecord | None = None, evaluate_config: ConfigRecord | None = None,
              evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None] | None = None):
        """Flower's ``Strategy.start`` (same arguments and result), recording both papers' metrics.

        The app's ``evaluate_fn`` (its own test set, say) runs as in Flower; its metrics are
        returned as they are, next to fltrust's ``fltrust.*`` values, and stored in the round's
        server metrics as ``app.<key>`` (never taken for the aux loss). ``train_config`` keys
        ``lr`` / ``learning-rate`` and ``local-epochs`` / ``epochs`` are the FactSheet's learning
        rate and local epochs when present.

        Parameters
        ----------
        grid : flwr.serverapp.Grid
            Flower's connection to the SuperNodes; the run starts once the expected nodes are
            connected (``num_clients``, else the strategy's ``min_available_nodes``).
        initial_arrays : flwr.app.ArrayRecord
            The initial global model (round 0), in the model's ``state_dict`` order.
        num_rounds : int
            Training rounds (default 3).
        timeout : float
            Seconds to wait for the nodes, at the start and for their replies in each round
            (default 3600).
        train_config, evaluate_config : flwr.app.ConfigRecord, optional
            Sent to the nodes with every training / evaluation message (default: empty).
        evaluate_fn : callable, optional
            The app's own ``evaluate_fn(server_round, arrays) -> MetricRecord | None``, as above
            (default none).

        Returns
        -------
        flwr.serverapp.strategy.Result
            Flower's result; the run folder is :attr:`run_folder`.

        Raises
        ------
        TimeoutError
            If too few SuperNodes connect within ``timeout``.
        """
        from fltrust.runs import RunFolder, RunRecorder, locked

        import yaml

        nodes = self._wait_for_nodes(grid, timeout)
        num_clients = self.num_clients or len(nodes)
        self.node_partitions = {node: i for i, node in enumerate(nodes)}
        config = dict(train_config or {})
        facts = AppFacts(
            name=self.name, model=type(self.model).__name__, strategy=type(self.strategy).__name__,
            strategy_params=_public_params(self.strategy), dataset_name=self.facts["dataset_name"],
            dataset_description=self.facts["dataset_description"], preprocessing=self.facts["preprocessing"],
            learning_rate=next((float(config[k]) for k in _LR_KEYS if k in config), None),
            local_epochs=next((int(config[k]) for k in _EPOCH_KEYS if k in config), None),
        )
        description = {"app": facts.to_dict(), "rounds": int(num_rounds), "clients": int(num_clients),
                       "fairness": None if self.fairness is None else self.fairness.to_dict(),
                       "trust": None if self.trust is None else self.trust.to_dict(), "seed": self.seed}
        folder = RunFolder(self._new_folder(description))
        self.run_folder = folder.path
        dataset = {"name": facts.dataset_name, "description": facts.dataset_description, "synthetic": False}
        self.info = RunInfo(run_id=folder.path.name, num_clients=num_clients, num_rounds=int(num_rounds),
                            num_classes=self._num_classes, client_num_samples=np.zeros(num_clients),
                            client_class_counts=np.zeros((num_clients, 0)), dataset=dataset, app=facts)
        with locked(folder):
            recorder = RunRecorder(folder, self._observers(folder.path))
            self.builder.sink = recorder
            recorder.start(self.info, yaml.safe_dump(description, sort_keys=False), {"dataset": dataset})
            log.info("fltrust: %d SuperNodes; recording %d rounds in %s", num_clients, num_rounds, folder.path)

            def observed(server_round: int, arrays: ArrayRecord) -> MetricRecord:
                result = evaluate_fn(server_round, arrays) if evaluate_fn is not None else None
                own = {k: v for k, v in dict(result or {}).items() if not isinstance(v, (list, str, bytes))}
                server = {**self._aux_metrics(arrays), **{f"app.{k}": v for k, v in own.items()}}
                record = self.end_round(server_round, arrays, server)
                self._warn_fedsv_cost(record)
                return MetricRecord({**dict(result or {}), **self._returned(record)})

            started = time.perf_counter()
            result = Strategy.start(self, grid, initial_arrays, num_rounds=num_rounds, timeout=timeout,
                                    train_config=train_config, evaluate_config=evaluate_config, evaluate_fn=observed)
            wall = time.perf_counter() - started
            final = self.builder.last_record.global_params_after
            names = list(initial_arrays.keys())
            state = {name: torch.from_numpy(np.ascontiguousarray(p)) for name, p in zip(names, final)}
            records = recorder.records
            last = records[-1].server_metrics
            fields = {"engine": "flower app (fltrust.flower.instrument)", "seconds_per_round": wall / max(1, num_rounds),
                      "device": str(self.device), "final_aux_loss": last.get("aux_loss"),
                      "final_aux_accuracy": last.get("aux_accuracy")}
            recorder.finish(final, state, wall, _system(self.model, records, final), fields)
        log.info("fltrust: run recorded in %s (check it with: fltrust audit %s)", folder.path, folder.path)
        return result


def _system(model: nn.Module, records: list, final: Params) -> dict[str, Any]:
    """The run's system figures (model size, traffic and training time totals)."""
    from fltrust.core.params import count_parameters

    n_params, n_tensors = count_parameters(model)

    def total(key: str) -> float:
        return float(sum(np.sum(r.client_metrics[key]) for r in records if key in r.client_metrics))

    return {"model_num_params": n_params, "model_num_tensors": n_tensors,
            "model_bytes": int(sum(np.asarray(p).nbytes for p in final)), "bytes_up_total": total("bytes_sent"),
            "bytes_down_total": total("bytes_received"), "train_time_s_total": total("train_time_s")}


def _trust_inputs(strategy: Strategy, model: nn.Module, name: str, dataset_name: str, seed: int):
    """What the app states for extended mode's measures: its strategy (and whether it is Byzantine-robust),
    model, dataset and seed; the clients' rows and a sensitive attribute stay with the app (missing)."""
    from fltrust.trust.inputs import TrustInputs
    from fltrust.trust.measures.poisoning import is_byzantine_robust

    inner = strategy
    while isinstance(getattr(inner, "strategy", None), Strategy):  # a wrapper (DP, ...) around the aggregation rule
        inner = inner.strategy
    kind, rule = type(strategy).__name__, type(inner).__name__
    return TrustInputs(name=name, strategy=rule, byzantine_robust=is_byzantine_robust(rule),
                       personalized="ditto" in kind.lower(), model=type(model).__name__,
                       differential_privacy="differentialprivacy" in kind.lower(), data_name=dataset_name,
                       seed=int(seed), batch_size=EVAL_BATCH_SIZE)


def instrument(
    strategy: Strategy,
    *,
    model: nn.Module,
    aux: Any = None,
    test: Any = None,
    out_dir: str | Path | None = None,
    name: str | None = None,
    dataset_name: str | None = None,
    dataset_description: str = "",
    preprocessing: str = "",
    fairness: FairnessSettings | None = FairnessSettings(),
    trust: TrustSettings | None = TrustSettings(),
    batch_keys: tuple[str, str] | None = None,
    num_clients: int | None = None,
    seed: int = 0,
) -> InstrumentedStrategy:
    """Wrap a Flower strategy so that it records both papers' metrics every round.

    Parameters
    ----------
    strategy : flwr.serverapp.strategy.Strategy
        The app's Message-API strategy (FedAvg, FedProx, ... or its own); it decides everything.
    model : nn.Module
        A model of the app's architecture (its class name and parameter count go in the
        FactSheet; fltrust evaluates copies of it, on its device).
    aux : DataLoader or (x, y)
        The server's auxiliary set D on which FedSV values the clients' updates (fairness);
        required unless ``fairness=None``. A small labelled sample drawn from every class.
    test : DataLoader or (x, y)
        Test data for FederatedTrust's CLEVER and SHAP samples; required unless ``trust=None``.
    out_dir : str or Path
        Folder of run folders; each run gets a new ``<name>-<time>-<hash>`` folder in it.
    name : str
        The run's name (letters, digits, ``.``, ``_``, ``-``).
    dataset_name : str
        The app's dataset, as the FactSheet names it (``data/provenance``).
    dataset_description, preprocessing : str
        What the data is and how the app preprocesses it (FactSheet; empty = reported missing).
    fairness : FairnessSettings or None
        Federated Fairness Analytics settings; ``None`` switches the fairness metrics off.
    trust : TrustSettings or None
        FederatedTrust settings; ``None`` switches FederatedTrust off. ``mode="extended"`` scores
        the 36-metric taxonomy and sustainability from the app's strategy, its models and the
        ``test`` data; what stays with the clients (their training rows for membership
        inference, a sensitive attribute) is reported missing.
    batch_keys : (str, str) or None
        Keys of inputs and labels when ``aux`` / ``test`` yield dict batches (:func:`as_tensors`).
    num_clients : int or None
        Registered clients C; default: the SuperNodes connected when :meth:`~InstrumentedStrategy.start`
        begins (it waits for the strategy's ``min_available_nodes``).
    seed : int
        Seed of fltrust's sampling (Monte Carlo FedSV, CLEVER/SHAP samples).

    Returns
    -------
    InstrumentedStrategy
        Call its ``start(grid=..., initial_arrays=..., num_rounds=...)`` as Flower's.

    Raises
    ------
    ValueError
        A missing or unusable fact, named with its argument (before any round runs).
    """
    if not isinstance(strategy, Strategy):
        hint = (" (a legacy flwr.server.strategy.Strategy: use fltrust.flower.ObservedLegacyStrategy)"
                if hasattr(strategy, "aggregate_fit") else "")
        raise _fail("strategy", f"must be a Message-API strategy (flwr.serverapp.strategy.Strategy), got "
                                f"{type(strategy).__name__}{hint}")
    if not isinstance(model, nn.Module):
        raise _fail("model", f"must be a torch.nn.Module of the app's architecture, got {type(model).__name__}")
    if out_dir is None:
        raise _fail("out_dir", "is required: the folder in which each run gets its own run folder")
    if not name or not isinstance(name, str) or not _NAME.match(name):
        raise _fail("name", f"is required: letters, digits, '.', '_' or '-' (it starts the run folder's name), got {name!r}")
    if not dataset_name or not isinstance(dataset_name, str):
        raise _fail("dataset_name", "is required: the name of the app's dataset (the FactSheet's data/provenance)")
    if fairness is not None and not isinstance(fairness, FairnessSettings):
        raise _fail("fairness", f"must be FairnessSettings(...) or None, got {type(fairness).__name__}")
    if trust is not None and not isinstance(trust, TrustSettings):
        raise _fail("trust", f"must be TrustSettings(...) or None, got {type(trust).__name__}")
    if num_clients is not None and (not isinstance(num_clients, int) or num_clients < 1):
        raise _fail("num_clients", f"must be a positive integer or None, got {num_clients!r}")
    tensors = {}
    for argument, data, needed, why in (
        ("aux", aux, fairness is not None, "for FedSV (the server's auxiliary set D)"),
        ("test", test, trust is not None, "for FederatedTrust (its CLEVER and SHAP samples)"),
    ):
        if data is None:
            if needed:
                raise _fail(argument, f"is required {why}: pass a DataLoader or (x, y) tensors")
            continue
        try:
            x, y = as_tensors(data, what=f"fltrust.flower.instrument: {argument}=", batch_keys=batch_keys)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        tensors[argument] = (x.to(model_device(model)), y.to(model_device(model)))
    probe = tensors.get("aux", tensors.get("test"))
    if probe is None:
        raise _fail("fairness", "and trust= are both None: there is nothing to record")
    try:
        num_classes = model_num_classes(model, *probe)
    except Exception as exc:  # noqa: BLE001 - the model cannot take the data
        raise _fail("model", f"cannot evaluate the {'aux' if 'aux' in tensors else 'test'} data "
                             f"({type(exc).__name__}: {exc}); pass data shaped as the model's input") from None
    if "aux" in tensors:
        _check_aux(tensors["aux"][1].cpu(), num_classes)
    facts = {"dataset_name": dataset_name, "dataset_description": dataset_description,
             "preprocessing": preprocessing, "num_classes": num_classes,
             "trust_inputs": _trust_inputs(strategy, model, name, dataset_name, seed)}
    return InstrumentedStrategy(strategy, model=model, aux=tensors.get("aux"), test=tensors.get("test"),
                                out_dir=Path(out_dir).expanduser().resolve(), name=name, fairness=fairness,
                                trust=trust, facts=facts, num_clients=num_clients, seed=seed)


__all__ = ["InstrumentedStrategy", "as_tensors", "client_report", "instrument"]
