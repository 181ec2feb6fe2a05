"""The in-process FL engine: one round loop for every strategy, fed to engine-neutral observers.

Round k (1..T), as the fairness authors' Flower runs executed it (fairness spec 1):

1. sample ``m`` clients uniformly without replacement (seeded per round);
2. evaluate the received model theta_k on the server's auxiliary set D (``aux_loss_before``);
3. every sampled client: reward = accuracy of theta_k on its validation set, local update
   (strategy), performance = accuracy of the resulting model (Ditto: personal) on the validation set;
4. aggregate (strategy; server-side DP noise if configured) -> theta_{k+1};
5. evaluate theta_{k+1} on D (``aux_loss`` / ``aux_accuracy``);
6. build a :class:`~fltrust.fl.records.RoundRecord`, hand it to the observers, persist it, checkpoint.

Round 0 records the initial model's evaluation on D. All randomness derives from the run seed,
the round and the client id, so a run is deterministic on CPU and resumes exactly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fltrust.config import ExperimentConfig, save_config
from fltrust.data import load_dataset
from fltrust.data.base import DatasetBundle
from fltrust.fl.evaluation import get_params, set_params
from fltrust.fl.observers import ObserverSet, RoundObserver
from fltrust.fl.privacy import calibrate_noise, epsilon_from_history, merge_history, server_dp_aggregate
from fltrust.fl.records import Params, RoundRecord, RunInfo, RunSummary
from fltrust.fl.strategies import ClientResult, build_strategy
from fltrust.fl.training import LocalDP, LocalTrainer, num_batches
from fltrust.models import build_model, count_parameters
from fltrust.partition import build_client_splits
from fltrust.runs import RunFolder, RunRecord, atomic_torch_save, atomic_write_json, load_run

log = logging.getLogger("fltrust")


def resolve_device(name: str) -> torch.device:
    """``cpu``, ``cuda`` or ``auto`` (cuda when available); a clear error if cuda is missing."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("run.device='cuda' but no CUDA device is visible; use --device cpu")
    return torch.device(name)


@dataclass
class Federation:
    """Data of a prepared experiment, already on the run's device."""

    bundle: DatasetBundle
    x_train: torch.Tensor
    y_train: torch.Tensor
    train_index: list[torch.Tensor]
    val_index: list[torch.Tensor]
    x_aux: torch.Tensor
    y_aux: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    class_counts: np.ndarray
    column_order: list[np.ndarray] | None = None  # NSL-KDD per-partition one-hot order (faithful bug)
    partition: dict[str, Any] = field(default_factory=dict)

    @property
    def num_clients(self) -> int:
        return len(self.train_index)

    def client_tensors(self, cid: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x_train, y_train, x_val, y_val) of one client."""
        tr, va = self.train_index[cid], self.val_index[cid]
        x_tr, x_va = self.x_train[tr], self.x_train[va]
        if self.column_order is not None:
            order = torch.as_tensor(self.column_order[cid], device=x_tr.device)
            x_tr, x_va = x_tr[:, order], x_va[:, order]
        return x_tr, self.y_train[tr], x_va, self.y_train[va]


def prepare_federation(cfg: ExperimentConfig, device: torch.device) -> Federation:
    """Load the dataset, partition it, select the auxiliary set and move everything to ``device``."""
    seed = cfg.effective_seed()
    bundle = load_dataset(cfg.data, seed=seed)
    splits = build_client_splits(bundle.train.y, bundle.train.groups, cfg.partition, seed,
                                 num_classes=bundle.num_classes, n_test=len(bundle.test))
    aux = splits.aux
    column_order = None
    x_aux_np = bundle.test.x[aux]
    if cfg.data.onehot_order == "per_partition":
        if cfg.data.name != "nsl_kdd":
            raise ValueError("data.onehot_order='per_partition' only applies to data.name='nsl_kdd'")
        from fltrust.data.nsl_kdd import per_partition_column_order

        column_order = [
            per_partition_column_order(bundle.train, np.concatenate([tr, va]))
            for tr, va in zip(splits.train, splits.val)
        ]
        x_aux_np = x_aux_np[:, per_partition_column_order(bundle.test, aux)]

    def to(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, device=device)

    return Federation(
        bundle=bundle,
        x_train=to(bundle.train.x),
        y_train=to(bundle.train.y),
        train_index=[to(np.asarray(i, dtype=np.int64)) for i in splits.train],
        val_index=[to(np.asarray(i, dtype=np.int64)) for i in splits.val],
        x_aux=to(x_aux_np),
        y_aux=to(bundle.test.y[aux]),
        x_test=to(bundle.test.x),
        y_test=to(bundle.test.y),
        class_counts=splits.class_counts,
        column_order=column_order,
        partition=splits.summary(),
    )


class _Client:
    """ClientHandle bound to one client's data (see :class:`fltrust.fl.strategies.ClientHandle`)."""

    def __init__(self, engine: "Engine", cid: int, round_: int) -> None:
        self.engine, self.client_id, self.round = engine, cid, round_
        self.x, self.y, self.x_val, self.y_val = engine.fed.client_tensors(cid)
        self.num_samples = len(self.y)
        self.num_batches = num_batches(self.num_samples, engine.cfg.training.batch_size)

    def seed(self, offset: int = 0) -> int:
        return int(np.random.default_rng([self.engine.seed, self.round, self.client_id, offset]).integers(2**31))

    def train(self, params: Params, *, seed_offset: int = 0, private: bool = True, **kwargs: Any) -> tuple[Params, float]:
        engine = self.engine
        if engine.local_dp is not None and private:
            new, loss, history = engine.trainer.train_private(
                params, self.x, self.y, epochs=kwargs["epochs"], seed=self.seed(), dp=engine.local_dp
            )
            key = str(self.client_id)
            engine.dp_history[key] = merge_history(engine.dp_history.get(key, []), history)
            return new, loss
        return engine.trainer.train(params, self.x, self.y, seed=self.seed(seed_offset), **kwargs)

    def train_loss_of(self, params: Params) -> float:
        return self.engine.trainer.evaluate(params, self.x, self.y).loss


class Engine:
    """Runs one configured experiment in this process."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        *,
        observers: Sequence[RoundObserver] = (),
        device: torch.device | None = None,
        federation: Federation | None = None,
    ) -> None:
        self.cfg = cfg
        self.seed = cfg.effective_seed()
        if cfg.run.torch_threads is not None:
            torch.set_num_threads(cfg.run.torch_threads)
        # Tiny feature values (NSL-KDD's fixed min-max table) drive Adam's moments into float
        # denormals, which are ~10x slower on CPUs; flushing them to zero changes nothing visible.
        torch.set_flush_denormal(True)
        self.device = device or resolve_device(cfg.run.device)
        self.fed = federation or prepare_federation(cfg, self.device)
        torch.manual_seed(self.seed)
        self.model = build_model(cfg.model.name, self.fed.bundle.input_shape, self.fed.bundle.num_classes)
        if cfg.privacy.mode == "local":
            from opacus.validators import ModuleValidator

            self.model = ModuleValidator.fix(self.model)  # BatchNorm -> GroupNorm for DP-SGD
        self.model = self.model.to(self.device)
        self.trainer = LocalTrainer(self.model, cfg.training, self.fed.bundle.num_classes, self.device)
        self.strategy = build_strategy(cfg)
        self.observers = ObserverSet(list(self._paper_observers()) + list(observers))
        self.per_round = cfg.clients_per_round()
        self.local_dp = self._local_dp()
        self.server_noise = self._server_noise()
        self.dp_history: dict[str, list[list[float]]] = {}

    # -- set-up ---------------------------------------------------------------------------
    def _paper_observers(self) -> list[RoundObserver]:
        """Observers the config switches on (fairness analytics, FederatedTrust)."""
        out: list[RoundObserver] = []
        metrics = self.cfg.metrics
        if metrics.fairness.enabled:
            from fltrust.metrics.fairness import FairnessObserver

            out.append(FairnessObserver.from_config(self.cfg, self.model, self.fed.x_aux, self.fed.y_aux,
                                                    num_clients=self.fed.num_clients))
        if metrics.trust.enabled:
            from fltrust.trust.observer import TrustObserver

            out.append(TrustObserver(self.cfg, self.model, self.fed.x_test, self.fed.y_test, run_folder=None))
        return out

    def _local_dp(self) -> LocalDP | None:
        p = self.cfg.privacy
        if p.mode != "local":
            return None
        sizes = [len(i) for i in self.fed.train_index]
        rate = min(1.0, self.cfg.training.batch_size / max(1, min(sizes)))
        steps = int(np.ceil(1 / rate)) * self.cfg.training.local_epochs * self.cfg.training.rounds
        noise = calibrate_noise(p.target_epsilon, p.delta, rate, steps)
        log.info("local DP: noise multiplier %.4f for epsilon %.3g", noise, p.target_epsilon)
        return LocalDP(noise_multiplier=noise, max_grad_norm=p.max_grad_norm)

    def _server_noise(self) -> float | None:
        p = self.cfg.privacy
        if p.mode != "server":
            return None
        if p.noise_multiplier is not None:
            return p.noise_multiplier
        rate = self.per_round / self.fed.num_clients
        return calibrate_noise(p.target_epsilon, p.delta, rate, self.cfg.training.rounds)

    def run_info(self, run_id: str) -> RunInfo:
        counts = self.fed.class_counts
        return RunInfo(
            run_id=run_id,
            num_clients=self.fed.num_clients,
            num_rounds=self.cfg.training.rounds,
            num_classes=self.fed.bundle.num_classes,
            client_num_samples=np.array([len(i) for i in self.fed.train_index]),
            client_class_counts=counts,
            config=self.cfg.to_dict(),
            dataset=self.fed.bundle.summary(),
        )

    # -- privacy --------------------------------------------------------------------------
    def epsilon_spent(self, rounds_done: int) -> float | None:
        p = self.cfg.privacy
        if p.mode == "local":
            eps = [epsilon_from_history(h, p.delta) for h in self.dp_history.values()]
            return max(eps) if eps else 0.0
        if p.mode == "server":
            rate = self.per_round / self.fed.num_clients
            return epsilon_from_history([[self.server_noise, rate, rounds_done]], p.delta)
        return None

    # -- one round ------------------------------------------------------------------------
    def sample_clients(self, round_: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, round_, 11])
        return np.sort(rng.choice(self.fed.num_clients, size=self.per_round, replace=False)).astype(np.int64)

    def evaluate_aux(self, params: Params) -> tuple[float, float]:
        result = self.trainer.evaluate(params, self.fed.x_aux, self.fed.y_aux)
        return result.loss, result.accuracy

    def run_round(self, round_: int, global_params: Params, aux_before: tuple[float, float]) -> tuple[RoundRecord, Params]:
        """Execute training round ``round_`` >= 1 from ``global_params``."""
        ids = self.sample_clients(round_)
        model_bytes = int(sum(p.nbytes for p in global_params))
        rows: dict[str, list[float]] = {k: [] for k in (
            "num_samples", "num_batches", "val_samples", "reward_accuracy", "reward_loss", "accuracy",
            "loss", "train_loss", "train_time_s", "bytes_received", "bytes_sent")}
        confusion, results = [], []
        for cid in ids:
            start = time.perf_counter()
            client = _Client(self, int(cid), round_)
            reward = self.trainer.evaluate(global_params, client.x_val, client.y_val)
            local = self.strategy.local_update(client, global_params)
            performance = self.trainer.evaluate(local.eval_params or local.params, client.x_val, client.y_val)
            elapsed = time.perf_counter() - start
            results.append(ClientResult(int(cid), local.params, client.num_samples, client.num_batches, local.extra))
            for key, value in (
                ("num_samples", client.num_samples), ("num_batches", client.num_batches),
                ("val_samples", len(client.y_val)), ("reward_accuracy", reward.accuracy),
                ("reward_loss", reward.loss), ("accuracy", performance.accuracy), ("loss", performance.loss),
                ("train_loss", local.train_loss), ("train_time_s", elapsed), ("bytes_received", model_bytes),
                ("bytes_sent", int(sum(p.nbytes for p in local.params))),
            ):
                rows[key].append(value)
            confusion.append(performance.confusion)
        if self.server_noise is not None:
            new_params, _ = server_dp_aggregate(
                global_params, [r.params for r in results], clipping_norm=self.cfg.privacy.clipping_norm,
                noise_multiplier=self.server_noise, rng=np.random.default_rng([self.seed, round_, 13]))
        else:
            new_params = self.strategy.aggregate(global_params, results, aux_before[0])
        aux_loss, aux_acc = self.evaluate_aux(new_params)
        server = {"aux_loss_before": aux_before[0], "aux_accuracy_before": aux_before[1],
                  "aux_loss": aux_loss, "aux_accuracy": aux_acc}
        eps = self.epsilon_spent(round_)
        if eps is not None:
            server["epsilon"] = eps
        record = RoundRecord(
            round=round_, client_ids=ids, client_metrics={k: np.asarray(v, dtype=float) for k, v in rows.items()},
            client_confusion=np.stack(confusion), server_metrics=server, client_params=[r.params for r in results],
            global_params_before=global_params, global_params_after=new_params,
        )
        return record, new_params

    # -- the whole run --------------------------------------------------------------------
    def run(self, out_dir: str | Path | None = None, *, resume: bool = True, force: bool = False) -> RunRecord:
        """Run all rounds, writing the run folder; returns the reloaded :class:`RunRecord`."""
        cfg = self.cfg
        run_id = cfg.run_id()
        folder = RunFolder(Path(out_dir or cfg.run.out_dir) / run_id)
        if folder.is_complete() and not force:
            log.info("run %s is complete; skipping (force=True reruns it)", run_id)
            return load_run(folder.path)
        folder.path.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(folder.log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        previous_level = log.level
        log.setLevel(logging.INFO)  # the run's log file gets every round; the console keeps its level
        log.addHandler(handler)
        try:
            return self._run(folder, run_id, resume and not force)
        finally:
            log.removeHandler(handler)
            log.setLevel(previous_level)
            handler.close()

    def _run(self, folder: RunFolder, run_id: str, resume: bool) -> RunRecord:
        cfg = self.cfg
        for obs in self.observers.observers:
            if hasattr(obs, "run_folder"):
                obs.run_folder = folder.path
        start_time = time.perf_counter()
        info = self.run_info(run_id)
        self.observers.run_start(info)
        records: list[RoundRecord] = []
        state = torch.load(folder.checkpoint, weights_only=False) if resume and folder.checkpoint.is_file() else None
        if state is not None and state.get("config_hash") != cfg.config_hash():
            log.warning("checkpoint of %s belongs to another config; restarting", run_id)
            state = None
        if state is not None:
            global_params = state["global_params"]
            records = [RoundRecord.from_json(r) for r in state["records"]]
            self.strategy.load_state_dict(state["strategy"])
            self.observers.load_state_dict(state["observers"])
            self.dp_history = state["dp_history"]
            elapsed_before = state["wall_time_s"]
            log.info("resuming %s after round %d", run_id, records[-1].round)
        else:
            save_config(cfg, folder.config)
            atomic_write_json(folder.dataset, {"dataset": self.fed.bundle.summary(), "partition": self.fed.partition})
            global_params = get_params(self.model)
            loss0, acc0 = self.evaluate_aux(global_params)
            record0 = RoundRecord(round=0, client_ids=np.zeros(0, dtype=np.int64),
                                  server_metrics={"aux_loss": loss0, "aux_accuracy": acc0},
                                  global_params_after=global_params)
            self.observers.round_end(record0)
            records.append(_strip(record0))
            elapsed_before = 0.0
        aux_before = (records[-1].server_metrics["aux_loss"], records[-1].server_metrics["aux_accuracy"])
        first = records[-1].round + 1
        progress = _progress(cfg, first)
        for round_ in range(first, cfg.training.rounds + 1):
            record, global_params = self.run_round(round_, global_params, aux_before)
            self.observers.round_end(record)
            records.append(_strip(record))
            aux_before = (record.server_metrics["aux_loss"], record.server_metrics["aux_accuracy"])
            folder.write_rounds(records)
            if cfg.run.checkpoint:
                atomic_torch_save(folder.checkpoint, {
                    "config_hash": cfg.config_hash(), "global_params": global_params,
                    "records": [r.to_json() for r in records], "strategy": self.strategy.state_dict(),
                    "observers": self.observers.state_dict(), "dp_history": self.dp_history,
                    "wall_time_s": elapsed_before + time.perf_counter() - start_time,
                })
            progress.update(1)
            progress.set_postfix(aux_acc=f"{aux_before[1]:.3f}")
            log.info("round %d: aux loss %.4f acc %.4f", round_, *aux_before)
        progress.close()
        folder.write_rounds(records)
        wall = elapsed_before + time.perf_counter() - start_time
        summary = RunSummary(info=info, rounds=records, final_params=global_params, wall_time_s=wall,
                             system=self._system(records, global_params))
        set_params(self.model, global_params)
        atomic_torch_save(folder.final_model, self.model.state_dict())
        observed = self.observers.run_end(summary)
        atomic_write_json(folder.summary, {
            "status": "complete", "run_id": run_id, "wall_time_s": wall,
            "seconds_per_round": wall / max(1, cfg.training.rounds), "device": str(self.device),
            "synthetic": self.fed.bundle.synthetic, "final_aux_loss": aux_before[0],
            "final_aux_accuracy": aux_before[1], "epsilon": self.epsilon_spent(cfg.training.rounds),
            "system": summary.system, "observers": observed, "deviations": cfg.run.deviations,
        })
        folder.checkpoint.unlink(missing_ok=True)
        return load_run(folder.path)

    def _system(self, records: list[RoundRecord], params: Params) -> dict[str, Any]:
        n_params, n_tensors = count_parameters(self.model)
        def total(key: str) -> float:
            return float(sum(r.client_metrics[key].sum() for r in records if key in r.client_metrics))
        return {"model_num_params": n_params, "model_num_tensors": n_tensors,
                "model_bytes": int(sum(p.nbytes for p in params)), "bytes_up_total": total("bytes_sent"),
                "bytes_down_total": total("bytes_received"), "train_time_s_total": total("train_time_s")}


def _strip(record: RoundRecord) -> RoundRecord:
    """Copy of a record without model parameters (what is kept in memory and on disk)."""
    return RoundRecord(record.round, record.client_ids, record.client_metrics, record.client_confusion,
                       record.server_metrics, observations=record.observations)


def _progress(cfg: ExperimentConfig, first: int):
    from tqdm.auto import tqdm

    return tqdm(total=cfg.training.rounds, initial=first - 1, desc=cfg.run.name, unit="round",
                disable=not cfg.run.progress, leave=False)


def run_experiment(
    cfg: ExperimentConfig,
    *,
    observers: Sequence[RoundObserver] = (),
    out_dir: str | Path | None = None,
    device: str | None = None,
    resume: bool = True,
    force: bool = False,
) -> RunRecord:
    """Run (or resume, or skip if complete) one experiment and return its reloaded record.

    Examples
    --------
    >>> from fltrust.config import ExperimentConfig
    >>> cfg = ExperimentConfig.from_dict({"data": {"name": "synthetic_nsl_kdd", "synthetic_samples": 400},
    ...     "partition": {"num_clients": 4}, "training": {"rounds": 2}, "run": {"progress": False}})
    >>> record = run_experiment(cfg, out_dir=getfixture("tmp_path"))  # doctest: +SKIP
    """
    if device is not None:
        cfg = cfg.with_overrides({"run.device": device})
    return Engine(cfg, observers=observers).run(out_dir, resume=resume, force=force)
