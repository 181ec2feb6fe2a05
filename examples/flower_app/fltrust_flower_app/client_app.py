"""ClientApp: ordinary Flower training code plus fltrust's ClientReport (4 lines)."""

from __future__ import annotations

from flwr.app import ArrayRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from fltrust.flower import ClientReport
from fltrust.flower.adapter import partition_query_reply
from fltrust_flower_app.task import build_model, experiment_config, load_partition, num_batches, num_classes, train

app = ClientApp()


@app.train()
def train_fn(msg: Message, context: Context) -> Message:
    partition_id = int(context.node_config["partition-id"])
    cfg = experiment_config(context.run_config, int(context.node_config["num-partitions"]))
    x, y, x_val, y_val = load_partition(cfg, partition_id)
    model = build_model(cfg)
    received = msg.content["arrays"]
    model.load_state_dict(received.to_torch_state_dict())

    # fltrust: the received model on the validation set, before training (the fairness paper's reward)
    report = ClientReport.for_model(model, x_val, y_val, partition_id=partition_id,
                                    num_classes=num_classes(cfg),
                                    loss_scaling=cfg.training.loss_scaling)
    report.reward(received)

    server_round = int(msg.content["config"]["server-round"])
    loss = train(model, x, y, epochs=cfg.training.local_epochs, batch_size=cfg.training.batch_size,
                 lr=cfg.training.learning_rate, seed=cfg.effective_seed() * 100_003 + server_round * 1_009 + partition_id)

    # fltrust: accuracy after training, confusion matrix, sample and batch counts, time, bytes
    metrics = report.finish(model.state_dict(), num_examples=len(y), num_batches=num_batches(len(y), cfg.training.batch_size),
                            train_loss=loss)
    return Message(RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics}), reply_to=msg)


@app.query()
def query_fn(msg: Message, context: Context) -> Message:
    """Tell the server which partition this SuperNode holds (fltrust.flower.discover_partitions)."""
    return partition_query_reply(msg, context)
