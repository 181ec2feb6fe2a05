"""ClientApp: ordinary Flower training code; fltrust adds two lines (marked)."""

from __future__ import annotations

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

import fltrust.flower as ft
from fltrust_flower_app.task import Net, load_data, train

app = ClientApp()


@app.train()
def train_fn(msg: Message, context: Context) -> Message:
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    trainloader, valloader = load_data(int(context.node_config["partition-id"]),
                                       int(context.node_config["num-partitions"]), context.run_config)
    report = ft.client_report(model, trainloader, valloader, context=context)  # fltrust: the reward, before training
    loss = train(model, trainloader, int(context.run_config["local-epochs"]), float(msg.content["config"]["lr"]))
    metrics = MetricRecord({"train_loss": loss, "num-examples": len(trainloader.dataset)})
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics})
    return Message(report.attach(content), reply_to=msg)  # fltrust: accuracy, confusion, counts after training
