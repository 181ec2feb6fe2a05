"""Which SuperNode is which client: the server's partition query and the ClientApp's answer.

:func:`discover_partitions` sends one ``query`` message per connected SuperNode and maps node ids
to partition ids (fltrust's client ids); :func:`partition_query_reply` is the ClientApp's
``@app.query()`` answer it expects.
"""

from __future__ import annotations

import time

from flwr.app import ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp import Grid

from fltrust.flower.records import CLIENT_ID_KEY

__all__ = ["discover_partitions", "partition_query_reply"]


def discover_partitions(grid: Grid, *, expected: int | None = None, timeout: float = 600.0) -> dict[int, int]:
    """Ask every connected SuperNode for its ``partition-id``: returns node id -> partition id.

    Waits (up to ``timeout`` seconds) until ``expected`` nodes are connected (default: at least
    one), then sends one ``query`` message per node; the ClientApp answers with a MetricRecord
    holding ``partition-id`` (fltrust's ClientApps do; see :func:`partition_query_reply`).

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The connection to the SuperNodes.
    expected : int, optional
        How many SuperNodes to wait for (default: at least one).
    timeout : float
        Seconds for waiting and answering together (default 600).

    Returns
    -------
    dict of int to int
        Node id -> partition id.

    Raises
    ------
    TimeoutError
        If fewer than ``expected`` nodes connect, or some do not answer, in time.
    RuntimeError
        If a node answers with an error, or two nodes claim the same partition id.
    """
    deadline = time.monotonic() + timeout
    need = 1 if expected is None else int(expected)
    while len(nodes := sorted(int(n) for n in grid.get_node_ids())) < need:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(nodes)} of {need} SuperNodes connected within {timeout:.0f} s")
        time.sleep(0.05)
    messages = [Message(RecordDict({"config": ConfigRecord({"fltrust": "partition-id"})}), dst_node_id=n,
                        message_type=MessageType.QUERY) for n in nodes]
    replies = list(grid.send_and_receive(messages, timeout=max(1.0, deadline - time.monotonic())))
    mapping: dict[int, int] = {}
    for reply in replies:
        if reply.has_error():
            raise RuntimeError(f"node {reply.metadata.src_node_id} could not report its partition-id: {reply.error.reason}")
        metrics = next(iter(reply.content.metric_records.values()))
        mapping[int(reply.metadata.src_node_id)] = int(metrics[CLIENT_ID_KEY])
    if len(mapping) < len(nodes):
        raise TimeoutError(f"{len(nodes) - len(mapping)} of {len(nodes)} SuperNodes did not answer the partition query")
    duplicates = sorted({p for p in mapping.values() if list(mapping.values()).count(p) > 1})
    if duplicates:
        raise RuntimeError(f"several SuperNodes claim partition-id(s) {duplicates}; give each one its own")
    return mapping


def partition_query_reply(message: Message, context) -> Message:
    """The ``@app.query()`` answer :func:`discover_partitions` expects (register it in a ClientApp).

    Parameters
    ----------
    message : flwr.app.Message
        The query message being answered.
    context : flwr.app.Context
        The ClientApp's context; its node config must hold ``partition-id`` (and may hold
        ``num-partitions``, which is reported too).

    Returns
    -------
    flwr.app.Message
        The reply, with a MetricRecord ``"metrics"`` holding those values.
    """
    config = context.node_config
    values = {CLIENT_ID_KEY: int(config[CLIENT_ID_KEY])}
    if "num-partitions" in config:
        values["num-partitions"] = int(config["num-partitions"])
    return Message(RecordDict({"metrics": MetricRecord(values)}), reply_to=message)
