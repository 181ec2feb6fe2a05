"""The in-process FL engine: one round loop for every strategy, fed to engine-neutral observers.

Round k (1..T), as the fairness authors' Flower runs executed it (fairness spec 1, docs/references.md#fairness-1):

1. sample ``m`` clients uniformly without replacement (seeded per round);
2. evaluate the received model theta_k on the server's auxiliary set D (``aux_loss_before``);
3. every sampled client: reward = accuracy of theta_k on its validation set, local update
   (strategy), performance = accuracy of the resulting model (Ditto: personal) on the validation set;
4. aggregate (the privacy mechanism's :meth:`~fltrust.algorithms.privacy.PrivacyMechanism.aggregate`:
   the strategy's rule, or server-side DP around it) -> theta_{k+1};
5. evaluate theta_{k+1} on D (``aux_loss`` / ``aux_accuracy``);
6. build a :class:`~fltrust.core.records.RoundRecord` and hand it to the run's
   :class:`~fltrust.runs.RunRecorder` (observers, persistence), then checkpoint.

Step 3 runs for all sampled clients at once where ``training.vectorize`` allows (default
``auto``): they train side by side as one stacked model and the per-client evaluations are batched
(:mod:`fltrust.engines.vectorized`; same seeds, batch orders and optimiser math as one client after
another, results equal to float32 rounding). Round 0 records the initial model's evaluation on D.
All randomness derives from the run seed, the round and the client id, so a run is deterministic
on CPU and resumes exactly.

The engine knows nothing about metrics: :mod:`fltrust.experiment` builds the federation, the
model and the observers and hands them to an engine (this one, or :mod:`fltrust.flower`). Both
engines subclass :class:`fltrust.engines.base.EngineBase` (the experiment's set-up, sampling, auxiliary
evaluation, epsilon accounting, summary) and train :class:`fltrust.engines.client.SimulatedClient`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from fltrust.algorithms.strategies import ClientResult
from fltrust.core.evaluation import get_params
from fltrust.core.records import Params, RoundRecord, RunInfo
from fltrust.engines.base import EngineBase, RunSettings, progress_bar
from fltrust.engines.client import FailingClient, SimulatedClient
from fltrust.engines.vectorized import ClientGroup, VectorTrainer, vectorize_reason
from fltrust.runs import RunFolderError, RunRecorder, read_checkpoint, write_checkpoint

log = logging.getLogger("fltrust")


class Engine(EngineBase):
    """Runs one prepared experiment in this process (fltrust's own round loop).

    Parameters are :class:`~fltrust.engines.base.EngineBase`'s.
    """

    name = "inprocess"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.vector = self._vector_trainer()

    def _vector_trainer(self) -> VectorTrainer | None:
        """Side-by-side training of a round's clients (``training.vectorize``), where it applies."""
        mode = self.training.vectorize
        if mode == "off":
            return None
        reason = vectorize_reason(self.training, self.privacy, self.model, self.per_round)
        if reason is not None:
            if mode == "on":
                raise ValueError(f"training.vectorize=on, but vectorised training does not apply: {reason}")
            log.info("training the sampled clients one after another: %s", reason)
            return None
        return VectorTrainer(self.model, self.training, self.fed.bundle.num_classes, self.device)

    # -- one round ------------------------------------------------------------------------
    def run_round(self, round_: int, global_params: Params, aux_before: tuple[float, float]) -> RoundRecord:
        """Execute training round ``round_`` >= 1 from ``global_params``.

        Parameters
        ----------
        round_ : int
            The round number, 1 to ``training.rounds``; seeds the sampling and the clients.
        global_params : Params
            The global model the round starts from.
        aux_before : tuple of (float, float)
            (loss, accuracy) of ``global_params`` on the auxiliary set, measured at the end of
            the previous round.

        Returns
        -------
        RoundRecord
            The round, with the client models and both global models still attached.
        """
        ids = self.sample_clients(round_)
        ids, faults = self.inject_faults(round_, ids, global_params)  # drop-outs, failures (fltrust.faults)
        if not len(ids):
            return self.empty_round(round_, global_params, aux_before, faults)
        global_params = self.privacy.broadcast(global_params, round_)  # NbAFL: clipped (and maybe noised)
        model_bytes = int(sum(p.nbytes for p in global_params))
        start = time.perf_counter()
        clients = [SimulatedClient(self, int(cid), round_) for cid in ids]
        val_x, val_y = [c.x_val for c in clients], [c.y_val for c in clients]
        rewards = self.evaluate_on(global_params, val_x, val_y)  # batched across the round's clients
        # with a group the clients train side by side (fltrust.engines.vectorized)
        group = ClientGroup(self.vector, clients) if self.vector is not None else None
        updates = self.strategy.local_updates(clients, global_params, group=group)
        trained = [u.eval_params or u.params for u in updates]
        performances = self.evaluate_on(trained, val_x, val_y, each=True)
        ids, clients, rewards, updates, performances = self.after_local_updates(  # update-level attack, time-outs
            round_, global_params, ids, clients, rewards, updates, performances, faults)
        if not len(ids):
            return self.empty_round(round_, global_params, aux_before, faults)
        per_client_time = (time.perf_counter() - start) / len(clients)
        results = [ClientResult(c.client_id, u.params, c.num_samples, c.num_batches, u.extra)
                   for c, u in zip(clients, updates)]
        rows = {
            "num_samples": [c.num_samples for c in clients],
            "num_batches": [c.num_batches for c in clients],
            "val_samples": [len(c.y_val) for c in clients],
            "reward_accuracy": [r.accuracy for r in rewards],
            "reward_loss": [r.loss for r in rewards],
            "accuracy": [p.accuracy for p in performances],
            "loss": [p.loss for p in performances],
            "train_loss": [u.train_loss for u in updates],
            "train_time_s": [per_client_time] * len(clients),
            "bytes_received": [model_bytes] * len(clients),
            "bytes_sent": [int(sum(p.nbytes for p in u.params)) for u in updates],
        }
        if self.attack_plan.active:  # 1 = malicious
            rows["malicious"] = [float(self.attack_plan.is_malicious(c)) for c in ids]
        new_params = self.privacy.aggregate(self.strategy, global_params, results, aux_before[0], round_)
        server = self._server_metrics(round_, aux_before, self.evaluate_aux(new_params))
        # the mechanism's own figures (NbAFL: how much noise this round added, against the model's size)
        server.update(self.privacy.round_metrics(global_params, new_params, [c.num_samples for c in clients]))
        server.update(self.round_extras(ids, faults.counters()))
        return RoundRecord(
            round=round_, client_ids=ids, client_metrics={k: np.asarray(v, dtype=float) for k, v in rows.items()},
            client_confusion=np.stack([p.confusion for p in performances]), server_metrics=server,
            client_params=[r.params for r in results], global_params_before=global_params,
            global_params_after=new_params,
        )

    # -- the whole run --------------------------------------------------------------------
    def run(self, recorder: RunRecorder, info: RunInfo, *, resume: bool = True,
            extra_summary: dict[str, Any] | None = None, dataset_extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run every round through ``recorder``; returns the summary fields of the finished run.

        Raises :class:`~fltrust.runs.RunDiverged` (from the recorder) when training blows up, and
        lets ``KeyboardInterrupt`` through after the last finished round was checkpointed.

        Parameters
        ----------
        recorder : RunRecorder
            The run folder's recorder: runs the observers, writes the rounds and the summary.
        info : RunInfo
            What the observers learn at the start (run id, clients, class counts, ...).
        resume : bool
            Continue after the last round of the folder's ``checkpoint.pt`` when it belongs to
            this run (:func:`checkpoint_identity`); otherwise start at round 0 (default True).
        extra_summary : dict, optional
            Further fields for ``summary.json`` (override the engine's own of the same name).
        dataset_extra : dict, optional
            Further entries for ``dataset.json``; its ``"fingerprint"`` goes into the checkpoint's
            identity.

        Returns
        -------
        dict of str to Any
            The summary fields the engine wrote: ``seconds_per_round``, ``device``, the final aux
            loss and accuracy, ``epsilon``, ``extra_summary`` and the attack / reliability blocks.
        """
        folder = recorder.folder
        start_time = time.perf_counter()
        identity = checkpoint_identity(self.settings, info, (dataset_extra or {}).get("fingerprint"))
        state = _load_checkpoint(folder.checkpoint, identity) if resume and folder.checkpoint.is_file() else None
        if state is not None and recorder.resume(info, state):  # the records are read back from rounds.jsonl
            global_params = state["global_params"]
            self.strategy.load_state_dict(state["strategy"])
            self.privacy.load_state_dict(state["dp_history"])
            elapsed_before = state["wall_time_s"]
            log.info("resuming %s after round %d", info.run_id, recorder.records[-1].round)
        else:
            self.start_run(recorder, info, dataset_extra)
            global_params = get_params(self.model)
            loss0, acc0 = self.evaluate_aux(global_params)
            recorder.record_round(RoundRecord(round=0, client_ids=np.zeros(0, dtype=np.int64),
                                              server_metrics={"aux_loss": loss0, "aux_accuracy": acc0},
                                              global_params_after=global_params))
            elapsed_before = 0.0
        last = recorder.records[-1]
        aux_before = (last.server_metrics["aux_loss"], last.server_metrics["aux_accuracy"])
        first = last.round + 1
        progress = progress_bar(self.settings, self.training.rounds, first)
        try:
            for round_ in range(first, self.training.rounds + 1):
                record = self.run_round(round_, global_params, aux_before)
                recorder.record_round(record)
                global_params = record.global_params_after
                aux_before = (record.server_metrics["aux_loss"], record.server_metrics["aux_accuracy"])
                if self.settings.checkpoint:
                    write_checkpoint(folder.checkpoint, {  # "dp_history": the mechanism's accounting state
                        "format": CHECKPOINT_FORMAT, "identity": identity, "global_params": global_params,
                        "strategy": self.strategy.state_dict(), "dp_history": self.privacy.state_dict(),
                        "wall_time_s": elapsed_before + time.perf_counter() - start_time,
                        **recorder.state_dict(),
                    })
                progress.update(1)
                progress.set_postfix(aux_acc=f"{aux_before[1]:.3f}")
                log.info("round %d: aux loss %.4f acc %.4f", round_, *aux_before)
        finally:
            progress.close()
        wall = elapsed_before + time.perf_counter() - start_time
        return self.finish_run(recorder, global_params, wall, aux_before, extra_summary=extra_summary)

    # -- attacks and injected failures (fltrust.attacks, fltrust.faults) -------------------------
    def inject_faults(self, round_: int, ids: np.ndarray, global_params: Params):
        """Drop-outs and failures of the sampled clients (:mod:`fltrust.faults`).

        Dropped clients never train. A failed client starts its strategy's ``local_update`` and
        raises :class:`~fltrust.faults.InjectedFailure` inside its training; the engine catches
        it and goes on. Returns the ids that train to the end (on time or late) and the plan.

        Parameters
        ----------
        round_ : int
            The round number (seeds the plan).
        ids : numpy.ndarray
            The sampled client ids.
        global_params : Params
            The model the failing clients start training from.

        Returns
        -------
        tuple of (numpy.ndarray, fltrust.faults.FaultPlan)
            The ids that train to the end, and the round's plan (inactive when
            ``reliability.*`` injects nothing; then ``ids`` come back unchanged).
        """
        from fltrust.faults import InjectedFailure, plan_round

        plan = plan_round(self.seed, round_, ids, self.reliability)
        if not plan.active:
            return ids, plan
        for cid in plan.failed:
            client = FailingClient(self, int(cid), round_)
            try:
                self.strategy.local_update(client, global_params)
            except InjectedFailure as exc:
                log.info("round %d: %s", round_, exc)
            else:  # pragma: no cover - every strategy trains in local_update
                raise RuntimeError(f"{type(self.strategy).__name__}.local_update never trained client {cid}")
        return plan.trained, plan

    def after_local_updates(self, round_: int, global_params: Params, ids: np.ndarray, clients: list, rewards: list,
                            updates: list, performances: list, faults) -> tuple:
        """After local training, before aggregation: the update-level attack rewrites what the
        malicious clients send (``theta + s (w - theta)``; their performance stays that of the
        model they trained), and the updates that arrive after the deadline are discarded.
        Returns the filtered ``(ids, clients, rewards, updates, performances)``.

        Parameters
        ----------
        round_ : int
            The round number.
        global_params : Params
            The model the clients received (theta of the update-level attack).
        ids : numpy.ndarray
            The ids of the clients that trained, in the order of the lists below.
        clients : list
            The clients' handles.
        rewards : list of EvalResult
            Each client's evaluation of ``global_params`` on its validation set.
        updates : list of LocalResult
            The clients' local updates (the attack rewrites ``params`` in place).
        performances : list of EvalResult
            Each client's evaluation of its trained model on its validation set.
        faults : fltrust.faults.FaultPlan
            The round's plan from :meth:`inject_faults`.

        Returns
        -------
        tuple
            ``(ids, clients, rewards, updates, performances)`` of the updates that arrived.
        """
        plan = self.attack_plan
        if plan.factor is not None:  # update-level attack: theta + s (w - theta) from the malicious clients
            for client, update in zip(clients, updates):
                update.params = plan.sent_params(client.client_id, global_params, update.params)
        if not faults.active:
            return ids, clients, rewards, updates, performances
        pick = [i for i, k in enumerate(faults.arrived(ids)) if k]
        kept = ([values[i] for i in pick] for values in (clients, rewards, updates, performances))
        return (np.asarray([ids[i] for i in pick], dtype=np.int64), *kept)

    def _server_metrics(self, round_: int, before: tuple[float, float], after: tuple[float, float]) -> dict[str, float]:
        """The aux loss and accuracy before and after the round, and the epsilon spent (when accounted)."""
        return {"aux_loss_before": before[0], "aux_accuracy_before": before[1], "aux_loss": after[0],
                "aux_accuracy": after[1], **self._epsilon_metric(round_)}

    def empty_round(self, round_: int, global_params: Params, aux_before: tuple[float, float], faults) -> RoundRecord:
        """A round in which no update arrived: the global model is kept (and the round says so).

        Parameters
        ----------
        round_ : int
            The round number.
        global_params : Params
            The global model, kept as the round's result (copied).
        aux_before : tuple of (float, float)
            (loss, accuracy) of ``global_params`` on the auxiliary set, reported as before and after.
        faults : fltrust.faults.FaultPlan
            The round's plan (its counters go into ``server_metrics``).

        Returns
        -------
        RoundRecord
            A record without clients.
        """
        log.warning("round %d: no client update arrived; the global model is kept", round_)
        server = self._server_metrics(round_, aux_before, aux_before)
        server.update(self.round_extras(np.zeros(0, dtype=np.int64), faults.counters()))
        return RoundRecord(round=round_, client_ids=np.zeros(0, dtype=np.int64), client_metrics={},
                           client_confusion=None, server_metrics=server, client_params=[],
                           global_params_before=global_params, global_params_after=[p.copy() for p in global_params])



CHECKPOINT_FORMAT = 2
"""Layout of ``checkpoint.pt``: plain data only (tensors, dicts, lists, numbers, strings), read with
``torch.load(weights_only=True)``. Checkpoints of format 1 pickled numpy arrays and are not resumed."""


def checkpoint_identity(run: RunSettings, info: RunInfo, data_fingerprint: str | None) -> dict[str, Any]:
    """Everything that makes a run, stored in its checkpoint and compared before resuming: the
    run id (name, config hash, seed, repeat), the config hash, seed and repeat, and the data
    fingerprint. A checkpoint copied from another seed, repeat, config or data is not resumed.

    Parameters
    ----------
    run : RunSettings
        The run's settings (its ``identity``: config hash, seed, repeat).
    info : RunInfo
        The run's info (its ``run_id``).
    data_fingerprint : str or None
        The fingerprint of the data the run trains on (``None`` when unknown).

    Returns
    -------
    dict of str to Any
        ``run_id``, ``config_hash``, ``seed``, ``repeat`` and ``data_fingerprint``.
    """
    return {"run_id": info.run_id, "config_hash": run.identity["config_hash"], "seed": int(run.identity["seed"]),
            "repeat": int(run.identity["repeat"]), "data_fingerprint": data_fingerprint}


def _load_checkpoint(path, identity: dict[str, Any]) -> dict | None:
    """The checkpoint at ``path`` if it is plain data and belongs to this run; otherwise None, with
    one warning naming the file and why the run starts from round 0."""
    try:
        state = read_checkpoint(path)
    except RunFolderError as exc:
        log.warning("%s; starting the run from round 0", exc)
        return None
    if state.get("format") != CHECKPOINT_FORMAT or not isinstance(state.get("identity"), dict):
        log.warning("checkpoint %s has another layout (an older fltrust); starting the run from round 0", path)
        return None
    theirs = state["identity"]
    differs = [key for key in identity if theirs.get(key) != identity[key]]
    if differs:
        what = ", ".join(f"{key} {theirs.get(key)!r} instead of {identity[key]!r}" for key in differs)
        log.warning("checkpoint %s belongs to another run (%s); starting the run from round 0", path, what[:300])
        return None
    return state

