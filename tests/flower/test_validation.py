"""One bad client cannot break or fool an instrumented Flower app: every report is checked at the server.

Each case is a ClientApp in which one client (partition 3 of 4) trains as the others do but sends a
hostile report or model. The run must complete (``summary.json``), the rejection must be in the
round's record (``rejected``: node, claimed id, field) and the log, and **every other number must be
exactly that of the same run in which the bad client's ClientApp raises** (an error reply: not
observed, not aggregated): the rounds' client ids, per-client metrics (timing aside), confusion
matrices, aux losses, model hashes, FedSV and notions, per-round trust scores, the label counts the
server recorded, the traffic totals and the final model, bit for bit. A rejected client is treated
exactly as a failed one.

The first 30 cases are the hostile-input probe's: 22 used to stop the whole ServerApp run, 8 used to
be silently wrong ("before": what the code before these checks did). The probe named 20 of its 22
aborts and 7 of its 8 silent cases; those marked "(added)" complete the count: a model without a
tensor (Flower's FedAvg stopped the run), a model with a NaN (the run recorder's finiteness check
stopped it) and a negative loss (recorded as it was). The 2,000,000-entry label-count list stopped
the probe's run at its end (CLEVER / SHAP on a 2,000,000-class K); with those off, as here, it
completed with K = 2,000,000. More cases follow. LocalGrid, a tiny CNN, 2 rounds: fast.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp.strategy import FedAvg
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import fltrust.flower as ft
from flower_testing import LocalGrid

NODES, ROUNDS, BAD = 4, 2, 3
TIMING = ("train_time_s",)
"""Per-client values that are wall times: they differ between any two runs."""


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, 2, 3), nn.Linear(2 * 6 * 6, 3)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


def load_data(seed: int, n: int = 32) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 1, 8, 8, generator=g) + y.view(-1, 1, 1, 1)
    return DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, generator=g)


Mutation = Callable[[RecordDict], None]


@pytest.fixture(autouse=True)
def _fast(monkeypatch):
    """One torch thread (the runs are tiny) and no trust-report figure (the JSON report stays)."""
    from fltrust.trust import report as trust_report

    write = trust_report.write_report
    monkeypatch.setattr(trust_report, "write_report", lambda report, folder, plot=True: write(report, folder, plot=False))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def client_app(mutate: Mutation | None, *, fail: frozenset[int] = frozenset(), bad_rounds=None) -> ClientApp:
    """4 honest clients; partition ``BAD`` applies ``mutate`` to its reply (in ``bad_rounds``, default all);
    the partitions in ``fail`` raise (the reference run)."""
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        pid = int(context.node_config["partition-id"])
        server_round = int(msg.content["config"]["server-round"])
        if pid in fail and (bad_rounds is None or server_round in bad_rounds):
            raise RuntimeError("this client fails (the reference run)")
        torch.manual_seed(pid)
        model = Net()
        model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        trainloader, valloader = load_data(pid), load_data(100 + pid)
        report = ft.client_report(model, trainloader, valloader, context=context)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in trainloader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        metrics = MetricRecord({"train_loss": loss.item(), "num-examples": len(trainloader.dataset)})
        content = report.attach(RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics}))
        if pid == BAD and mutate is not None and (bad_rounds is None or server_round in bad_rounds):
            mutate(content)
        return Message(content, reply_to=msg)

    return app


def run(tmp: Path, app: ClientApp) -> tuple[Path, ft.InstrumentedStrategy]:
    torch.manual_seed(0)
    strategy = ft.instrument(
        FedAvg(fraction_train=1.0, fraction_evaluate=0.0, min_available_nodes=NODES), model=Net(),
        aux=load_data(1000, 48), test=load_data(1001, 48), out_dir=tmp, name="hostile", dataset_name="blobs",
        trust=ft.TrustSettings(clever_samples=0, shap_samples=0), num_clients=NODES)
    torch.manual_seed(0)
    strategy.start(grid=LocalGrid(app, NODES), initial_arrays=ArrayRecord(Net().state_dict()), num_rounds=ROUNDS)
    return strategy.run_folder, strategy


def observed(folder: Path, strategy: ft.InstrumentedStrategy) -> dict:
    """Every number a bad client must not change (timing and the rejections aside)."""
    from fltrust.runs import load_run

    record = load_run(folder)
    rounds = []
    for r in record.rounds:
        line = r.to_json()
        line.pop("rejected", None)
        for key in TIMING:
            line["client_metrics"].pop(key, None)
        rounds.append(line)
    summary = json.loads((folder / "summary.json").read_text())
    system = {k: v for k, v in summary["system"].items() if k != "train_time_s_total"}
    final = torch.load(folder / "final_model.pt", weights_only=True)
    return {"rounds": rounds, "system": system, "trust": summary["observers"]["trust"]["trust_score"],
            "class_counts": strategy.info.client_class_counts.tolist(),
            "final": {k: v.numpy().tolist() for k, v in final.items()}}


@cache
def reference(tmp_root: str, fail: frozenset[int], bad_rounds: tuple[int, ...] | None) -> dict:
    folder, strategy = run(Path(tmp_root) / f"ref-{sorted(fail)}-{bad_rounds}", client_app(None, fail=fail,
                                                                                          bad_rounds=bad_rounds))
    return observed(folder, strategy)


# -- the cases --------------------------------------------------------------------------------
def report(key, value) -> Mutation:
    def mutate(content):
        content["fltrust"][key] = value
    return mutate


def drop(key) -> Mutation:
    def mutate(content):
        del content["fltrust"][key]
    return mutate


def counts(change) -> Mutation:
    def mutate(content):
        content["fltrust"]["label_counts"] = change(list(content["fltrust"]["label_counts"]))
    return mutate


def confusion(change) -> Mutation:
    def mutate(content):
        content["fltrust"]["confusion"] = change(list(content["fltrust"]["confusion"]))
    return mutate


def arrays(change) -> Mutation:
    def mutate(content):
        state = content["arrays"].to_torch_state_dict()
        content["arrays"] = ArrayRecord(change(state))
    return mutate


def _without_bias(state):
    state.pop("fc.bias")
    return state


def _nan_weight(state):
    state["fc.weight"][0, 0] = float("nan")
    return state


def _flat_weight(state):
    state["fc.weight"] = state["fc.weight"].reshape(-1)
    return state


NAN, INF = float("nan"), float("inf")
# (case, before, mutation, field of the rejection)
PROBE = [
    ("id of another client", "abort", report("partition-id", 0), "partition-id"),
    ("id out of range", "abort", report("partition-id", 7), "partition-id"),
    ("string id", "abort", report("partition-id", "three"), "partition-id"),
    ("float id 0.5", "abort", report("partition-id", 0.5), "partition-id"),
    ("negative label counts", "abort", counts(lambda c: [-1] + c[1:]), "label_counts"),
    ("NaN label counts", "abort", counts(lambda c: [NAN] + [float(v) for v in c[1:]]), "label_counts"),
    ("inf label counts", "abort", counts(lambda c: [INF] + [float(v) for v in c[1:]]), "label_counts"),
    ("empty label counts", "abort", counts(lambda c: []), "label_counts"),
    ("missing label counts", "abort", drop("label_counts"), "label_counts"),
    ("string label counts", "abort", counts(lambda c: json.dumps(c)), "label_counts"),
    ("missing confusion", "abort", drop("confusion"), "confusion"),
    ("short confusion", "abort", confusion(lambda c: c[:4]), "confusion"),
    ("4x4 confusion (3 classes)", "abort", confusion(lambda c: c[:3] + [0] + c[3:6] + [0] + c[6:9] + [0, 0, 0, 0, 0]),
     "confusion"),
    ("NaN confusion", "abort", confusion(lambda c: [NAN] + [float(v) for v in c[1:]]), "confusion"),
    ("negative confusion", "abort", confusion(lambda c: [-1] + c[1:]), "confusion"),
    ("9,000,000-entry confusion", "abort", confusion(lambda c: c + [0] * (9_000_000 - len(c))), "confusion"),
    ("missing accuracy", "abort", drop("accuracy"), "accuracy"),
    ("string accuracy", "abort", report("accuracy", "high"), "accuracy"),
    ("arrays of the wrong shape", "abort", arrays(_flat_weight), "arrays"),
    ("2,000,000-entry label counts", "abort", counts(lambda c: c + [0] * 2_000_000), "label_counts"),
    ("arrays without a tensor (added)", "abort", arrays(_without_bias), "arrays"),
    ("arrays with a NaN (added)", "abort", arrays(_nan_weight), "arrays"),
    ("accuracy NaN", "silent", report("accuracy", NAN), "accuracy"),
    ("accuracy inf", "silent", report("accuracy", INF), "accuracy"),
    ("accuracy 5.0", "silent", report("accuracy", 5.0), "accuracy"),
    ("accuracy -3.0", "silent", report("accuracy", -3.0), "accuracy"),
    ("label counts 1e18", "silent", counts(lambda c: [1e18] + [float(v) for v in c[1:]]), "label_counts"),
    ("bytes_sent 1e18", "silent", report("bytes_sent", 1e18), "bytes_sent"),
    ("train_time_s -100", "silent", report("train_time_s", -100.0), "train_time_s"),
    ("negative loss (added)", "silent", report("loss", -1.0), "loss"),
]
MORE = [
    ("no fltrust report", "abort", lambda content: content.__delitem__("fltrust"), "fltrust"),
    ("reward_accuracy 5.0", "abort", report("reward_accuracy", 5.0), "reward_accuracy"),
    ("num-examples 1e12", "silent", report("num-examples", 10**12), "num-examples"),
    ("num-examples unlike the label counts", "silent", report("num-examples", 1000), "label_counts"),
    ("confusion unlike val_samples", "silent", report("val_samples", 33), "confusion"),
    ("accuracy unlike the confusion matrix", "silent", report("accuracy", 0.125), "accuracy"),
    ("train_time_s beyond the round", "silent", report("train_time_s", 1e6), "train_time_s"),
    ("bool accuracy", "silent", report("accuracy", True), "accuracy"),
    ("renamed tensor", "abort", arrays(lambda s: {("w" if k == "fc.weight" else k): v for k, v in s.items()}), "arrays"),
]
assert len(PROBE) == 30 and sum(before == "abort" for _, before, _, _ in PROBE) == 22


@pytest.mark.parametrize(("case", "before", "mutate", "field"), PROBE + MORE, ids=[c[0] for c in PROBE + MORE])
def test_a_bad_report_is_rejected_and_changes_no_other_number(tmp_path_factory, caplog, case, before, mutate, field):
    root = str(tmp_path_factory.getbasetemp())
    duplicate = case == "id of another client"  # both claimants of client 0 are rejected
    fail = frozenset({0, BAD}) if duplicate else frozenset({BAD})
    expected = reference(root, fail, None)
    caplog.set_level(logging.WARNING, logger="fltrust")

    folder, strategy = run(tmp_path_factory.mktemp("bad"), client_app(mutate))

    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert observed(folder, strategy) == expected
    from fltrust.runs import audit_run, load_run

    assert audit_run(folder).ok
    rounds = load_run(folder).rounds
    times = [t for r in rounds[1:] for t in r.client_metrics["train_time_s"]]
    assert min(times) >= 0 and summary["system"]["train_time_s_total"] == pytest.approx(sum(times), rel=1e-12)
    for r in rounds[1:]:
        bad_node = 1000 + BAD
        [entry] = [e for e in r.rejected if e["node"] == bad_node]
        assert field in [reason["field"] for reason in entry["reasons"]], entry
        assert sorted(e["node"] for e in r.rejected) == sorted(1000 + p for p in fail)
        assert BAD not in r.client_ids
    assert f"round 1: rejected the report of node {1000 + BAD}" in caplog.text and f"{field}:" in caplog.text
    assert len(caplog.text) < 20_000  # a huge list is named by its length, not printed


def test_a_client_is_bound_to_its_id_after_its_first_accepted_round(tmp_path_factory):
    """From round 2 on client 3 claims client 0's id: only the impostor is rejected (0 was accepted in round 1)."""
    root = str(tmp_path_factory.getbasetemp())
    expected = reference(root, frozenset({BAD}), (2,))
    folder, strategy = run(tmp_path_factory.mktemp("bound"), client_app(report("partition-id", 0), bad_rounds=(2,)))
    assert observed(folder, strategy) == expected
    from fltrust.runs import load_run

    rounds = load_run(folder).rounds
    assert rounds[1].rejected == [] and rounds[1].client_ids.tolist() == [0, 1, 2, 3]
    [entry] = rounds[2].rejected
    assert entry["node"] == 1000 + BAD and entry["client_id"] == 0
    assert entry["reasons"][0]["reason"] == f"client 0 is node 1000 (accepted in round 1); node {1000 + BAD} claims it"


def test_the_rejection_names_every_failed_field(tmp_path):
    def mutate(content):
        content["fltrust"]["accuracy"] = 5.0
        content["fltrust"]["bytes_sent"] = -1
        del content["fltrust"]["confusion"]

    folder, _ = run(tmp_path, client_app(mutate, bad_rounds=(1,)))
    from fltrust.runs import load_run

    entry = load_run(folder).rounds[1].rejected[0]
    assert entry["client_id"] == BAD
    assert {r["field"]: r["reason"] for r in entry["reasons"]} == {
        "accuracy": "5.0 must be in [0, 1]", "bytes_sent": f"-1 must be in [0, {8 * model_bytes()}] (8 x the model's bytes)",
        "confusion": "is missing"}


def model_bytes() -> int:
    return sum(t.numpy().nbytes for t in Net().state_dict().values())


def test_a_round_whose_every_report_is_rejected_still_completes(tmp_path):
    """Nothing is aggregated that round: the global model stays, no notion is computed."""
    app = ClientApp()

    @app.train()
    def train(msg, context):
        content = RecordDict({"arrays": msg.content["arrays"], "metrics": MetricRecord({"num-examples": 1})})
        return Message(content, reply_to=msg)

    folder, _ = run(tmp_path, app)
    from fltrust.runs import load_run

    record = load_run(folder)
    assert record.summary["status"] == "complete"
    for r in record.rounds[1:]:
        assert r.client_ids.size == 0 and len(r.rejected) == NODES and r.observations.get("fairness") is None
        assert {e["reasons"][0]["field"] for e in r.rejected} == {"fltrust"}
        assert "client_report(model, train, val, context=context)" in r.rejected[0]["reasons"][0]["reason"]
    assert record.rounds[1].server_metrics["model_hash"] == record.rounds[0].server_metrics["model_hash"]


def test_check_reply_on_its_own():
    from fltrust.flower.validation import ReportRejected, ReportSchema, RoundFacts, check_reply

    model = Net()
    names = tuple(model.state_dict())
    reference_params = [t.numpy() for t in model.state_dict().values()]
    facts = RoundFacts(names, reference_params, elapsed_s=10.0)
    schema = ReportSchema(num_classes=3, num_clients=4, label_counts=True)
    good = {"partition-id": 2, "num-examples": 6, "val_samples": 4, "reward_accuracy": 0.25, "reward_loss": 1.0,
            "accuracy": 0.5, "loss": 0.9, "train_loss": NAN, "train_time_s": 2.0, "bytes_received": 100,
            "bytes_sent": 100, "confusion": [1, 1, 0, 0, 1, 0, 0, 1, 0], "label_counts": [1, 2, 3]}
    checked = check_reply(good, ArrayRecord(model.state_dict()), schema, facts)
    assert checked.client_id == 2 and checked.label_counts.tolist() == [1, 2, 3]
    assert checked.confusion.tolist() == [[1, 1, 0], [0, 1, 0], [0, 1, 0]] and np.isnan(checked.values["train_loss"])
    assert checked.values["num-examples"] == 6 and isinstance(checked.values["num-examples"], int)
    with pytest.raises(ReportRejected) as info:
        check_reply({**good, "partition-id": 3.0, "reward_accuracy": 0.3, "num-batches": 7},
                    ArrayRecord(model.state_dict()), schema, facts)
    assert info.value.client_id == 3
    assert str(info.value) == ("num-batches: 7 must be in [1, 6] (num-examples); "
                               "reward_accuracy: 0.3 is no share of the 4 validation samples")
