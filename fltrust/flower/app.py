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
import math
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy
from torch import nn

from fltrust.core.evaluation import evaluate, set_params
from fltrust.core.observers import ObserverSet, RoundObserver
from fltrust.core.params import system_figures
from fltrust.core.records import AppFacts, RoundRecord, RunInfo
from fltrust.flower.adapter import ObservedStrategy
from fltrust.flower.client import ClientReport
from fltrust.flower.records import CLIENT_ID_KEY, arrays_to_params
from fltrust.flower.sinks import ClientRow
from fltrust.flower.tensors import as_tensors, model_device, model_num_classes, read_labels
from fltrust.flower.validation import ClientIds, ReportSchema
from fltrust.metrics.fairness.registry import GENERAL_FAIRNESS, NotionKeys
from fltrust.metrics.shapley.federated import resolve_method
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


def _app_folder(frame: Any) -> Path | None:
    """The folder of the module whose code called ``instrument`` (the app's), or None (interactive)."""
    name = (frame.f_globals.get("__file__") if frame is not None else None) or ""
    return Path(name).resolve().parent if name and Path(name).is_file() else None


def _resolve_out_dir(out_dir: str | Path, app_folder: Path | None) -> Path:
    """An absolute ``out_dir``; a relative one is taken in the app's folder (never the process's
    working directory, which under Flower's runtimes is the SuperLink's)."""
    path = Path(out_dir).expanduser()
    if path.is_absolute() or app_folder is None:  # interactive: the working directory is the only folder there is
        return path.resolve()
    from flwr.common.constant import APP_DIR
    from flwr.supercore.utils import get_flwr_home

    installed = (get_flwr_home() / APP_DIR).resolve()
    if app_folder.is_relative_to(installed):
        raise _fail("out_dir", f"{str(out_dir)!r} is relative, and this ServerApp runs from Flower's installed copy "
                               f"of the app ({app_folder}), not from your project: pass an absolute path, e.g. "
                               "flwr run ... --run-config \"out-dir='$PWD/runs'\"")
    return (app_folder / path).resolve()


def _stated(name: str, keys: tuple[str, ...], sources: list[tuple[str, dict[str, Any]]], cast: type) -> Any:
    """The first of ``keys`` in the sources (``train_config`` first, then the run config), cast."""
    for where, values in sources:
        for key in keys:
            if key in values:
                try:
                    return cast(values[key])
                except (TypeError, ValueError):
                    log.warning("fltrust: %s[%r] = %r is not a %s; the FactSheet leaves the %s missing",
                                where, key, values[key], cast.__name__, name)
                    return None
    return None


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


class _NotStarted:
    """The round sink before :meth:`InstrumentedStrategy.start` opens the run folder and its recorder."""

    def record_round(self, record: RoundRecord) -> Any:
        raise RuntimeError("fltrust: a round ended before InstrumentedStrategy.start opened the run folder")


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

    report_in_metrics = False  # the report is the "fltrust" ConfigRecord: a reply without one is rejected

    def __init__(self, strategy: Strategy, *, model: nn.Module, aux: tuple[torch.Tensor, torch.Tensor] | None,
                 test: tuple[torch.Tensor, torch.Tensor] | None, out_dir: Path, name: str,
                 fairness: FairnessSettings | None, trust: TrustSettings | None, facts: dict[str, Any],
                 num_clients: int | None, seed: int, run_config: dict[str, Any] | None = None) -> None:
        super().__init__(strategy, _NotStarted(), keep_extra_metrics=False)  # the run's recorder, from start()
        self.model = model
        self.device = model_device(model)
        self.aux, self.test = aux, test
        self.out_dir, self.name = out_dir, name
        self.fairness, self.trust = fairness, trust
        self.facts = facts
        self.num_clients = num_clients
        self.seed = int(seed)
        self.run_config = dict(run_config or {})
        self.run_folder: Path | None = None
        self.info: RunInfo | None = None
        self._eval_model = copy.deepcopy(model).to(self.device)
        self._num_classes = facts["num_classes"]
        self._eval_seconds: float | None = None  # one evaluation of the model on the aux set
        self._told_fedsv_cost = self._warned_exact = self._warned_signed = False

    # -- replies -------------------------------------------------------------------------------
    def _accepted(self, server_round: int, rows: list[ClientRow], checked: list) -> None:
        """Record the accepted clients' training label counts (rejected ones never reach RunInfo) and
        say what the round's FedSV will cost, before it runs."""
        info = self.info
        assert info is not None, "start() sets the run's RunInfo before the first reply"
        for row, report in zip(rows, checked):
            info.record_client(row.client_id, report.label_counts)
        self._fedsv_cost(server_round, len(rows))

    # -- server evaluation --------------------------------------------------------------------
    def _aux_metrics(self, arrays: ArrayRecord) -> dict[str, float]:
        if self.aux is None:
            return {}
        set_params(self._eval_model, arrays_to_params(arrays))
        started = time.perf_counter()
        result = evaluate(self._eval_model, *self.aux, num_classes=self._num_classes, batch_size=EVAL_BATCH_SIZE)
        if self._eval_seconds is None:
            self._eval_seconds = time.perf_counter() - started
        return {"aux_loss": result.loss, "aux_accuracy": result.accuracy}

    def _returned(self, record) -> dict[str, float]:
        values = dict(record.server_metrics)
        values.update(record.observations.get("fairness") or {})
        values.update({k: v for k, v in (record.observations.get("trust") or {}).items() if k == "trust_score"})
        return {f"fltrust.{key}": float("nan") if values[key] is None else float(values[key])
                for key in RETURNED_KEYS if key in values and not isinstance(values[key], (list, dict, str))}

    def _fedsv_cost(self, server_round: int, m: int) -> None:
        """Before a round's FedSV: its method and cost, coalition models x one aux evaluation (measured
        at round 0). Once per run as an info line; a warning the first time exact FedSV runs on
        more participants than ``shapley="auto"`` would take exactly."""
        settings = self.fairness
        if settings is None or m == 0 or (self._told_fedsv_cost and self._warned_exact):
            return
        method = resolve_method(settings.shapley, m, auto_exact_players=settings.shapley_auto_exact_players)
        if method == "exact" and m > settings.exact_max_players:
            method = "monte_carlo"  # what the observer runs, with its own warning
        first = m + 1 + settings.shapley_sampler_permutations * (m - 2)  # the sampler's first walks, at most
        most = {"exact": 2 ** m - 1, "monte_carlo": 1 + settings.shapley_permutations * (m - 1),
                "permutation": max(first, settings.shapley_max_coalitions or 2 ** m - 1)
                if settings.shapley_target_error > 0 else first}[method]
        models = f"{most:,}" if method == "exact" else f"up to {min(most, 2 ** m - 1):,}"
        each = self._eval_seconds if self._eval_seconds is not None else float("nan")
        line = (f"fltrust: round {server_round}: FedSV of {m} participants, {method}: {models} coalition models "
                f"x {each:.3f} s per aux-set evaluation = about {min(most, 2 ** m - 1) * each:,.0f} s per round")
        if method == "exact" and m > settings.shapley_auto_exact_players and not self._warned_exact:
            self._warned_exact = self._told_fedsv_cost = True
            log.warning("%s; FairnessSettings.for_app() (shapley='auto') samples above %d participants "
                        "(README, Flower section)", line, settings.shapley_auto_exact_players)
        elif not self._told_fedsv_cost:
            self._told_fedsv_cost = True
            log.info("%s", line)

    def _warn_signed_fedsv(self, record) -> None:
        """Once per run: faithful f_j / f_r below 1/m because signed cumulative FedSV entered Jain's index."""
        fairness = record.observations.get("fairness") or {}
        if self._warned_signed or self.fairness is None or self.fairness.nonpositive_policy != "raw" or not fairness:
            return
        m = len(fairness.get("s") or [])
        nonpositive = sum(1 for v in fairness.get("s") or [] if v is not None and v <= 0)
        low = {k: fairness.get(k) for k in ("f_j", "f_r")
               if fairness.get(k) is not None and math.isfinite(fairness[k]) and fairness[k] < 1 / m}
        if not nonpositive or not low:
            return
        self._warned_signed = True
        shown = " and ".join(f"{k} = {v:.3f}" for k, v in low.items())
        log.warning("fltrust: round %d: %s below 1/m = %.3f, the least Jain's index of %d non-negative values, because "
                    "%d of the %d participants' cumulative FedSV are <= 0 and mode='faithful' uses them signed, as "
                    "the authors' code does: these numbers reproduce the authors' computation, not a fairness "
                    "judgement of your app; FairnessSettings.for_app() (mode='corrected', the default of "
                    "instrument) leaves such participants out of f_j and f_r", record.round, shown, 1 / m, m,
                    nonpositive, m)

    # -- the run ------------------------------------------------------------------------------
    def _wait_for_nodes(self, grid: Grid, timeout: float, settle_s: float = 0.5) -> list[int]:
        """The SuperNodes at the start: at least ``num_clients`` (else the strategy's
        ``min_available_nodes``), once their number has not changed for ``settle_s`` seconds."""
        need = self.num_clients or max(1, int(getattr(self.strategy, "min_available_nodes", 1) or 1))
        deadline = time.monotonic() + timeout
        nodes: list[int] = []
        stable_since = time.monotonic()
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
        observers: list[RoundObserver] = []
        if self.fairness is not None:
            from fltrust.metrics.fairness import FairnessObserver

            assert self.aux is not None, "instrument() requires aux= with fairness="
            observers.append(FairnessObserver(self.fairness, copy.deepcopy(self._eval_model), *self.aux,
                                              batch_size=EVAL_BATCH_SIZE, seed=self.seed))
        if self.trust is not None:
            from fltrust.trust.observer import TrustObserver

            assert self.test is not None, "instrument() requires test= with trust="
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
        server metrics as ``app.<key>`` (never taken for the aux loss). The keys ``lr`` /
        ``learning-rate`` / ``learning_rate`` and ``local-epochs`` / ``local_epochs`` /
        ``epochs`` of ``train_config``, else of the run config (``instrument(context=...)``), are
        the FactSheet's learning rate and local epochs.

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
        self.schema = ReportSchema(num_classes=self._num_classes, num_clients=num_clients, label_counts=True)
        self.client_ids = ClientIds()
        sources = [("train_config", dict(train_config or {})), ("run_config", self.run_config)]
        facts = AppFacts(
            name=self.name, model=type(self.model).__name__, strategy=type(self.strategy).__name__,
            strategy_params=_public_params(self.strategy), dataset_name=self.facts["dataset_name"],
            dataset_description=self.facts["dataset_description"], preprocessing=self.facts["preprocessing"],
            learning_rate=_stated("learning rate", _LR_KEYS, sources, float),
            local_epochs=_stated("local epochs", _EPOCH_KEYS, sources, int),
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
                self._warn_signed_fedsv(record)
                return MetricRecord({**dict(result or {}), **self._returned(record)})

            started = time.perf_counter()
            result = Strategy.start(self, grid, initial_arrays, num_rounds=num_rounds, timeout=timeout,
                                    train_config=train_config, evaluate_config=evaluate_config, evaluate_fn=observed)
            wall = time.perf_counter() - started
            final = self.builder.final_params
            if final is None:
                raise RuntimeError(f"fltrust: Flower's Strategy.start ran no round (num_rounds={num_rounds}); nothing to record")
            names = list(initial_arrays.keys())
            state = {name: torch.from_numpy(np.ascontiguousarray(p)) for name, p in zip(names, final)}
            records = recorder.records
            last = records[-1].server_metrics
            fields = {"engine": "flower app (fltrust.flower.instrument)", "seconds_per_round": wall / max(1, num_rounds),
                      "device": str(self.device), "final_aux_loss": last.get("aux_loss"),
                      "final_aux_accuracy": last.get("aux_accuracy")}
            recorder.finish(final, state, wall, system_figures(self.model, records, final), fields)
        log.info("fltrust: run recorded in %s (check it with: fltrust audit %s)", folder.path, folder.path)
        return result


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
    fairness: FairnessSettings | None = FairnessSettings.for_app(),
    trust: TrustSettings | None = TrustSettings(),
    batch_keys: tuple[str, str] | None = None,
    num_clients: int | None = None,
    seed: int = 0,
    context: Any = None,
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
        Folder of run folders; each run gets a new ``<name>-<time>-<hash>`` folder in it. A
        relative path is taken in the folder of the app's module that calls ``instrument``
        (``app.py``'s folder), not in the working directory, which under ``flwr run`` is the
        SuperLink's; when that module is Flower's installed copy of the app (``flwr run``), a
        relative path is an error: pass an absolute one.
    name : str
        The run's name (letters, digits, ``.``, ``_``, ``-``).
    dataset_name : str
        The app's dataset, as the FactSheet names it (``data/provenance``).
    dataset_description, preprocessing : str
        What the data is and how the app preprocesses it (FactSheet; empty = reported missing).
    fairness : FairnessSettings or None
        Federated Fairness Analytics settings; ``None`` switches the fairness metrics off.
        Default :meth:`FairnessSettings.for_app() <fltrust.settings.FairnessSettings.for_app>`:
        the corrected notions, FedSV exact up to 6 participants and sampled above until its
        standard errors are within 5 % of the round's value range or 300 coalition models are
        spent. ``FairnessSettings.for_app(mode="faithful")`` gives the authors' computation;
        a plain ``FairnessSettings(...)`` starts from the papers' defaults (faithful, exact).
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
    context : flwr.app.Context or None
        The ServerApp's context: its ``run_config`` (``flwr run``'s ``[tool.flwr.app.config]``)
        gives the FactSheet's learning rate and local epochs when ``train_config`` does not
        (``lr``, ``local-epochs``, ... as in :meth:`InstrumentedStrategy.start`).

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
    out = _resolve_out_dir(out_dir, _app_folder(sys._getframe(1)))
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
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            row = int(torch.nonzero(~torch.isfinite(x.reshape(len(x), -1)).all(dim=1))[0])
            raise _fail(argument, f"holds NaN/inf in its inputs at row {row} (of {len(x)}); training would be "
                                  "blamed for it: clean or drop those rows")
        tensors[argument] = (x.to(model_device(model)), y.to(model_device(model)))
    probe = tensors.get("aux", tensors.get("test"))
    if probe is None:
        raise _fail("fairness", "and trust= are both None: there is nothing to record")
    try:
        num_classes = model_num_classes(model, *probe)
    except Exception as exc:  # noqa: BLE001 - the model cannot take the data
        raise _fail("model", f"cannot evaluate the {'aux' if 'aux' in tensors else 'test'} data "
                             f"({type(exc).__name__}: {exc}); pass data shaped as the model's input") from None
    for argument, (_, y) in tensors.items():
        outside = torch.nonzero((y < 0) | (y >= num_classes))
        if len(outside):
            row = int(outside[0])
            raise _fail(argument, f"holds label {int(y[row])} at row {row}, outside the model's classes 0..{num_classes - 1} "
                                  "(an inf label, or another label set); pass the labels the model predicts")
    if "aux" in tensors:
        _check_aux(tensors["aux"][1].cpu(), num_classes)
    facts = {"dataset_name": dataset_name, "dataset_description": dataset_description,
             "preprocessing": preprocessing, "num_classes": num_classes,
             "trust_inputs": _trust_inputs(strategy, model, name, dataset_name, seed)}
    return InstrumentedStrategy(strategy, model=model, aux=tensors.get("aux"), test=tensors.get("test"),
                                out_dir=out, name=name, fairness=fairness, trust=trust, facts=facts,
                                num_clients=num_clients, seed=seed,
                                run_config=dict(getattr(context, "run_config", None) or {}))


__all__ = ["InstrumentedStrategy", "as_tensors", "client_report", "instrument"]
