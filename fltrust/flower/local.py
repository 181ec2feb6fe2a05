"""A Flower ServerApp on ClientApps called in this process: no Ray, no network.

:class:`LocalGrid` is a Flower ``Grid`` whose SuperNodes are calls of a ``ClientApp`` in this
process, as Flower's runtimes make them (one ``Context`` per node, kept across rounds, node config
``partition-id`` / ``num-partitions``); :func:`run_local` runs a ``ServerApp`` on one. For tests,
benchmarks and trying an app in seconds; Flower's Simulation Runtime (``flwr run``,
``flwr.simulation.run_simulation``) and a deployment run the same two apps.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable
from typing import Any

from flwr.app import Context, Error, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

__all__ = ["LocalGrid", "run_local"]

FIRST_NODE_ID = 1000
"""Node id of partition 0; partition ``p`` is node ``FIRST_NODE_ID + p``."""


class LocalGrid(Grid):
    """A Grid whose SuperNodes are calls of ``client_app`` in this process (node ids 1000 + partition).

    Each message is deep-copied before delivery (a runtime serialises it: the client gets its own
    copy); an exception of the ClientApp becomes an error reply, as a runtime makes it; one
    message is delivered at a time (Flower's legacy server sends from several threads). ``sent``
    lists every message sent, for inspection (it grows with the run); ``contexts`` maps node id to
    the node's ``Context``.

    Parameters
    ----------
    client_app : flwr.clientapp.ClientApp
        The app every node runs.
    num_nodes : int
        Number of SuperNodes (partitions ``0 .. num_nodes - 1``).
    run_config : dict, optional
        The run config every node's ``Context`` carries (``flwr run``'s ``[tool.flwr.app.config]``).

    Examples
    --------
    >>> from flwr.app import MetricRecord
    >>> client = ClientApp()
    >>> @client.query()
    ... def where(msg, context):
    ...     return Message(RecordDict({"m": MetricRecord({"p": context.node_config["partition-id"]})}), reply_to=msg)
    >>> grid = LocalGrid(client, 3)
    >>> asked = [Message(RecordDict(), dst_node_id=node, message_type="query") for node in grid.get_node_ids()]
    >>> [reply.content["m"]["p"] for reply in grid.send_and_receive(asked)]
    [0, 1, 2]
    """

    def __init__(self, client_app: ClientApp, num_nodes: int, run_config: dict[str, Any] | None = None) -> None:
        # what a runtime sets for the ServerApp process (run_simulation does the same)
        from flwr.common.constant import SUPERLINK_NODE_ID
        from flwr.supercore.task_identity import TaskIdentity

        self.app = client_app
        self.contexts = {
            FIRST_NODE_ID + p: Context(run_id=1, node_id=FIRST_NODE_ID + p, state=RecordDict(),
                                       node_config={"partition-id": p, "num-partitions": num_nodes},
                                       run_config=dict(run_config or {}))
            for p in range(num_nodes)
        }
        self.sent: list[Message] = []
        self._lock = threading.Lock()
        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, SUPERLINK_NODE_ID

    def set_run(self, run: Any) -> None:
        """Nothing to set: the grid has one run (id 1)."""

    @property
    def run(self):
        """The run (an empty ``flwr.supercore.run.Run`` with id 1)."""
        from flwr.supercore.run import Run

        return Run.create_empty(run_id=1)

    def create_message(self, *args: Any, **kwargs: Any) -> Message:
        """Not supported (deprecated in Flower): build a ``Message`` directly.

        Parameters
        ----------
        *args, **kwargs
            Those of ``flwr.serverapp.Grid.create_message``.
        """
        raise NotImplementedError

    def get_node_ids(self) -> list[int]:
        """The SuperNodes' ids (1000 + partition)."""
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        """Not supported: use :meth:`send_and_receive`."""
        raise NotImplementedError

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        """Not supported: use :meth:`send_and_receive`."""
        raise NotImplementedError

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> list[Message]:
        """Deliver each message to its node's ClientApp; return the replies in order.

        Parameters
        ----------
        messages : iterable of flwr.app.Message
            Messages whose ``dst_node_id`` is one of :meth:`get_node_ids`.
        timeout : float or None
            Ignored (the calls run to completion).

        Returns
        -------
        list of flwr.app.Message
            One reply per message (an error reply where the ClientApp raised).
        """
        with self._lock:
            replies = []
            for message in messages:
                self.sent.append(message)
                delivered = Message(copy.deepcopy(message.content), dst_node_id=message.metadata.dst_node_id,
                                    message_type=message.metadata.message_type)
                try:
                    reply = self.app(message=delivered, context=self.contexts[message.metadata.dst_node_id])
                except Exception as exc:  # noqa: BLE001 - a runtime turns a ClientApp failure into an error reply
                    reply = Message(Error(code=0, reason=f"{type(exc).__name__}: {exc}"), reply_to=delivered)
                replies.append(reply)
            return replies


def run_local(server_app: ServerApp, client_app: ClientApp, num_nodes: int, *,
              run_config: dict[str, Any] | None = None) -> LocalGrid:
    """Run ``server_app`` to the end on a :class:`LocalGrid` of ``client_app``.

    Parameters
    ----------
    server_app : flwr.serverapp.ServerApp
        The server (its ``main`` or ``server_fn``).
    client_app : flwr.clientapp.ClientApp
        The app every node runs.
    num_nodes : int
        Number of SuperNodes.
    run_config : dict, optional
        The run config of the server's and every node's ``Context``.

    Returns
    -------
    LocalGrid
        The grid, with the nodes' contexts and the messages sent.
    """
    grid = LocalGrid(client_app, num_nodes, run_config)
    server_app(grid=grid, context=Context(run_id=1, node_id=0, node_config={}, state=RecordDict(),
                                          run_config=dict(run_config or {})))
    return grid
