"""fltrust.flower.local: a ServerApp on ClientApps called in this process, as a runtime would call them."""

from __future__ import annotations

import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from fltrust.flower import LocalGrid, run_local


def counting_app() -> ClientApp:
    """A ClientApp whose query reply says its partition, how often it was called and the run config's x."""
    app = ClientApp()

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        if msg.content["config"]["fail"]:
            raise ValueError("boom")
        calls = int(context.state["n"]["calls"]) + 1 if "n" in context.state else 1
        context.state["n"] = MetricRecord({"calls": calls})
        msg.content["config"]["fail"] = True  # must not reach the server's copy
        return Message(RecordDict({"m": MetricRecord({"p": context.node_config["partition-id"], "calls": calls,
                                                      "x": context.run_config.get("x", -1)})}), reply_to=msg)

    return app


def ask(grid: Grid, *, fail: bool = False) -> list[Message]:
    asked = [Message(RecordDict({"config": ConfigRecord({"fail": fail})}), dst_node_id=node, message_type="query")
             for node in grid.get_node_ids()]
    replies = list(grid.send_and_receive(asked))
    assert [m.content["config"]["fail"] for m in asked] == [fail] * len(asked)  # each client got its own copy
    return replies


def test_each_node_keeps_its_context_across_messages():
    grid = LocalGrid(counting_app(), 3, run_config={"x": 7})
    ask(grid)
    replies = ask(grid)

    assert grid.get_node_ids() == [1000, 1001, 1002]
    assert [(r.content["m"]["p"], r.content["m"]["calls"], r.content["m"]["x"]) for r in replies] == [
        (0, 2, 7), (1, 2, 7), (2, 2, 7)]
    assert grid.contexts[1002].node_config == {"partition-id": 2, "num-partitions": 3}
    assert len(grid.sent) == 6


def test_a_failing_client_app_gives_an_error_reply():
    [reply] = ask(LocalGrid(counting_app(), 1), fail=True)

    assert reply.has_error() and reply.error.reason == "ValueError: boom"


def test_run_local_runs_the_server_app_to_the_end():
    server = ServerApp()
    seen: list[int] = []

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        seen.extend(int(r.content["m"]["x"]) for r in ask(grid))
        seen.append(int(context.run_config["x"]))

    grid = run_local(server, counting_app(), 2, run_config={"x": 5})

    assert seen == [5, 5, 5] and {m.metadata.message_type for m in grid.sent} == {"query"}
