"""The Flower engine's local Ray cluster listens on loopback only.

Ray on Linux otherwise binds its GCS, raylet, object manager, agents, workers and the driver on
every interface, and anyone who reaches one of them can submit code. The check runs a one-round
Flower-engine run on the real Simulation Runtime and lists, from inside the run, the listening
sockets of this process and all its descendants (Ray's daemons and ClientApp actors).
"""

from __future__ import annotations

import pytest

from flower_testing import tiny_config
from fltrust.core.observers import BaseObserver
from fltrust.experiment import run_experiment

pytestmark = pytest.mark.slow

psutil = pytest.importorskip("psutil")

LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


class ListeningSockets(BaseObserver):
    """At the end of round 1 (Ray up, actors trained): every listening socket of the run's process tree."""

    name = "sockets"

    def __init__(self):
        self.seen: list[tuple[str, str, int]] = []

    def on_round_end(self, record):
        if record.round != 1:
            return None
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            try:
                name = process.name()
                sockets = process.net_connections(kind="inet")
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            self.seen += [(name, c.laddr.ip, c.laddr.port) for c in sockets if c.status == psutil.CONN_LISTEN]
        return None


def test_the_local_ray_cluster_listens_on_loopback_only(tmp_path):
    import ray

    if ray.is_initialized():  # a Ray left running by another test in this process: start our own
        ray.shutdown()
    sockets = ListeningSockets()
    cfg = tiny_config("flower", partition={"num_clients": 3}, strategy={"clients_per_round": 2},
                      training={"rounds": 1}, metrics={"fairness": {"enabled": False}}, flower={"num_cpus": 1})

    record = run_experiment(cfg, observers=[sockets], out_dir=tmp_path)

    assert record.summary["status"] == "complete"
    names = {name for name, _, _ in sockets.seen}
    assert {"gcs_server", "raylet"} <= names, sockets.seen  # Ray's daemons were looked at
    exposed = [s for s in sockets.seen if s[1] not in LOOPBACK]
    assert not exposed, f"listening beyond loopback: {exposed}"
