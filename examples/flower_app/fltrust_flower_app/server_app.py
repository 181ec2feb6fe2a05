"""ServerApp: Flower's FedAvg, wrapped by fltrust's ObservedStrategy, writing a standard run folder."""

from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path

import torch
from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from fltrust.config import config_yaml
from fltrust.core.evaluation import set_params
from fltrust.experiment import prepare_experiment, run_id_for
from fltrust.fl.engine import system_figures
from fltrust.fl.training import LocalTrainer
from fltrust.flower import ObservedStrategy, aux_evaluate_fn, discover_partitions
from fltrust.runs import RunFolder, RunRecorder, locked
from fltrust_flower_app.task import RoundPrinter, experiment_config

app = ServerApp()
flwr_log = logging.getLogger("flwr")


def say(line: str) -> None:
    print(line, flush=True)
    flwr_log.info(line)


@app.main()
def main(grid: Grid, context: Context) -> None:
    rc = context.run_config
    # which SuperNode holds which partition (each answers a `query` message with its partition-id)
    partitions = discover_partitions(grid, expected=int(rc["min-nodes"]))
    num_clients = len(partitions)
    cfg = experiment_config(rc, num_clients)
    random.seed(cfg.effective_seed())  # Flower's FedAvg samples with the `random` module

    # fltrust: data (the server's auxiliary and test sets), model, and the observers of both papers
    experiment = prepare_experiment(cfg, device=torch.device("cpu"))
    trust = next(o for o in experiment.observers.observers if o.name == "trust")
    experiment.observers.observers.append(RoundPrinter(trust, log=say))
    fed, model = experiment.federation, experiment.model
    run_id = run_id_for(cfg, fed.bundle)
    folder = RunFolder(Path(str(rc["out-dir"])).expanduser().resolve() / run_id)
    for observer in experiment.observers.observers:
        if hasattr(observer, "run_folder"):
            observer.run_folder = folder.path
    trainer = LocalTrainer(model, cfg.training, fed.bundle.num_classes, experiment.device)

    def evaluate_aux(params):
        result = trainer.evaluate(params, fed.x_aux, fed.y_aux)
        return result.loss, result.accuracy

    with locked(folder, wait_s=10):
        recorder = RunRecorder(folder, experiment.observers)
        recorder.start(experiment.run_info(run_id), config_yaml(cfg),
                       {"dataset": fed.bundle.summary(), "partition": fed.partition})
        say(f"fltrust: {num_clients} SuperNodes, {cfg.clients_per_round()} per round; run folder {folder.path}")
        strategy = ObservedStrategy(
            FedAvg(fraction_train=float(rc["fraction-train"]), fraction_evaluate=0.0, min_train_nodes=1,
                   min_available_nodes=num_clients, weighted_by_key="num-batches"),
            recorder,
            node_partitions=partitions,
        )
        start = time.perf_counter()
        strategy.start(grid, ArrayRecord(model.state_dict()), num_rounds=cfg.training.rounds,
                       evaluate_fn=aux_evaluate_fn(evaluate_aux))
        final = strategy.builder.last_record.global_params_after
        set_params(model, final)
        wall = time.perf_counter() - start
        last = recorder.records[-1].server_metrics
        recorder.finish(final, model.state_dict(), wall, system_figures(model, recorder.records, final),
                        {"engine": "flower (examples/flower_app)", "seconds_per_round": wall / cfg.training.rounds,
                         "final_aux_loss": last["aux_loss"], "final_aux_accuracy": last["aux_accuracy"],
                         "synthetic": fed.bundle.synthetic})
    summary = json.loads(folder.summary.read_text())
    score = summary["observers"].get("trust", {}).get("trust_score")
    f_t = recorder.records[-1].observations.get("fairness", {}).get("F_T")
    say(f"fltrust: final F_T {f_t}, trust score {score}; run folder {folder.path}")
