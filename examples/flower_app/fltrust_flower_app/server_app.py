"""ServerApp: Flower's FedAvg, instrumented by fltrust (one call), printing F_T and the trust score per round."""

from __future__ import annotations

import logging

from flwr.app import ArrayRecord, ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

import fltrust.flower as ft
from fltrust_flower_app.task import Net, load_server_data

app = ServerApp()


def say(line: str) -> None:
    """Print and log a line (a deployment streams the ServerApp's Flower log to `flwr run --stream`)."""
    print(line, flush=True)
    logging.getLogger("flwr").info(line)


@app.main()
def main(grid: Grid, context: Context) -> None:
    rc = context.run_config
    aux, test = load_server_data(rc)
    strategy = ft.instrument(
        FedAvg(fraction_train=float(rc["fraction-train"]), fraction_evaluate=0.0, min_train_nodes=1,
               min_available_nodes=int(rc["min-nodes"])),
        model=Net(), aux=aux, test=test, out_dir=str(rc["out-dir"]), name=str(rc["run-name"]),
        dataset_name="synthetic intrusion table",
        dataset_description=f"{int(rc['synthetic-samples'])} generated rows, 40 features, 2 classes, "
                            f"{rc['partition']} partition (seed {int(rc['seed'])})",
        preprocessing="none: generated features, standard normal with a shift of attack rows",
        fairness=ft.FairnessSettings.for_app(mode=str(rc["fairness-mode"])),
        trust=ft.TrustSettings(mode=str(rc["trust-mode"])), seed=int(rc["seed"]), context=context,
    )
    result = strategy.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()),
                            train_config=ConfigRecord({"lr": float(rc["learning-rate"]),
                                                       "local-epochs": int(rc["local-epochs"])}),
                            num_rounds=int(rc["num-server-rounds"]))
    for rnd, values in sorted(result.evaluate_metrics_serverapp.items()):
        if rnd > 0:
            say(f"round {rnd}: F_T = {values['fltrust.F_T']:.4f}, trust score so far = "
                f"{values['fltrust.trust_score']:.4f}, aux accuracy {values['fltrust.aux_accuracy']:.4f}")
    say(f"fltrust: run folder {strategy.run_folder} (python -m fltrust audit <folder> checks it)")
