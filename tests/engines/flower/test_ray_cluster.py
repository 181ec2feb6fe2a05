"""The Flower engine joins an existing Ray cluster at the address given, or fails in one line in time.

Ray's driver rewrites a loopback cluster address (``127.0.0.1``, ``localhost``, ``::1``) into the
machine's outward address and then retries the GCS there with no end; the engine joins a loopback
cluster in Ray's loopback mode, checks where Ray will contact the cluster before it does, and
tries the join in a child process with a deadline first
(:mod:`fltrust.engines.flower.simulation`: ``resolve_ray_target``, ``join_ray``).

The slow test starts a real two-node cluster on 127.0.0.1 with ``ray.cluster_utils.Cluster`` (one
CPU per node, the machine has two cores), runs the paper condition ``fedavg_nslkdd_100c_iid``
(real NSL-KDD, 100 clients, 5 per round; 2 rounds) on it, and checks that ClientApps ran on both
nodes (``summary.json`` -> ``flower.ray_nodes``) and that the run equals the local Flower run of the
same config. Tolerance: the same code on the same machine, so only float32 rounding from the order
in which Flower's FedAvg sums the replies (which depends on which reply arrives first): parameters
``np.allclose(rtol=1e-5, atol=1e-6)``, client and server metrics 1e-5, fairness notions 1e-4,
identical client ids and confusion matrices -- the bounds of ``test_equivalence.py``. Measured on
this box (2 CPU cores, Ray 2.55.1, flwr 1.42.0): every difference 0 (bit-identical runs).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import warnings
from pathlib import Path

import pytest

from flower_testing import tiny_config
from fltrust.config import ConfigError, load_config
from fltrust.engines.flower import simulation
from fltrust.engines.flower.simulation import join_ray, ray_on_loopback, resolve_ray_target
from fltrust.experiment import run_experiment

REPO = Path(__file__).resolve().parents[3]
PAPER_CONFIG = REPO / "papers_repro" / "fairness_analytics" / "configs" / "fedavg_nslkdd_100c_iid.yaml"
BOUND_S = 60  # an unreachable cluster fails within this


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_loopback_address_is_contacted_as_given():
    # Ray's own resolution, in the mode the engine joins it in: no rewrite to the outward address
    for given, contact in [("127.0.0.1:6379", "127.0.0.1:6379"), ("localhost:6380", "127.0.0.1:6380")]:
        target = resolve_ray_target(given)
        assert (target.address, target.contact, target.loopback) == (given, contact, True)
        assert target.init_kwargs() == {"address": given, "_node_ip_address": "127.0.0.1"}
    remote = resolve_ray_target("10.0.0.5:6379")
    assert (remote.contact, remote.loopback, remote.init_kwargs()) == ("10.0.0.5:6379", False, {"address": "10.0.0.5:6379"})


def test_an_address_ray_would_rewrite_fails_naming_both(monkeypatch):
    # what happened before, and what a Ray release that ignores the loopback mode would do again
    from ray._private import services

    monkeypatch.setattr(services, "resolve_ip_for_localhost", lambda host: "192.0.2.2")
    with pytest.raises(ConfigError) as info:
        resolve_ray_target("127.0.0.1:6379")
    assert str(info.value) == (
        "flower.ray_address='127.0.0.1:6379': Ray would contact the cluster at 192.0.2.2:6379, not at "
        "127.0.0.1:6379 as given, and would wait there with no end; start the cluster where Ray looks, "
        "or name the address Ray contacts")


def test_an_unreachable_cluster_fails_within_the_bound_in_one_line(tmp_path):
    port = free_port()  # nothing listens there
    cfg = tiny_config("flower", training={"rounds": 1}, flower={"ray_address": f"127.0.0.1:{port}", "num_cpus": 1})
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        run_experiment(cfg, out_dir=tmp_path)
    assert time.monotonic() - start < BOUND_S
    message = str(info.value)
    assert "\n" not in message
    assert message == (f"flower.ray_address='127.0.0.1:{port}': nothing answers at 127.0.0.1:{port} "
                       "(Connection refused); start the cluster (`ray start --head`) or unset flower.ray_address "
                       "for a local Ray")


@pytest.mark.slow
def test_a_port_that_answers_but_is_no_ray_cluster_fails_within_the_deadline(monkeypatch):
    # TCP accepts, but no GCS speaks: ray.init would retry with no end; the trial join is killed
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    port = server.getsockname()[1]
    stop = threading.Event()

    def accept():  # hold every connection open, say nothing
        held = []
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
        for conn in held:
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setattr(simulation, "RAY_JOIN_TIMEOUT_S", 10.0)
    try:
        target = resolve_ray_target(f"127.0.0.1:{port}")
        start = time.monotonic()
        with pytest.raises(ConfigError) as info:
            join_ray(target)
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
    import ray

    assert not ray.is_initialized()
    assert elapsed < 10 + 10, elapsed  # the deadline, plus killing and reaping the child
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"flower.ray_address='127.0.0.1:{port}': Ray did not join the cluster at "
                              f"127.0.0.1:{port} within 10 s ("), message


def start_loopback_cluster(attempts: int = 2):
    """Two Ray nodes on 127.0.0.1 (``ray.cluster_utils.Cluster``), one CPU each.

    Ray waits a fixed 30 s for a new node to register with its GCS; on a loaded machine that can
    time out. A failed start is reported (a warning naming the error), its processes -- children of
    this process that the failed node left -- are killed by their ids, and it is tried once more.
    """
    import psutil
    from ray.cluster_utils import Cluster

    me = psutil.Process()
    for attempt in range(1, attempts + 1):
        before = {child.pid for child in me.children(recursive=True)}
        cluster = Cluster(initialize_head=False)
        try:
            with ray_on_loopback():  # the cluster's servers on loopback, as the engine's own local Ray
                cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1", include_dashboard=False)
                cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
            return cluster
        except Exception as exc:  # reported, cleaned up, tried again at most once
            cluster.shutdown()
            leaked = [child for child in me.children(recursive=True) if child.pid not in before]
            for child in leaked:
                with contextlib.suppress(psutil.NoSuchProcess):
                    child.kill()
            psutil.wait_procs(leaked, timeout=15)
            if attempt == attempts:
                raise
            warnings.warn(f"two-node Ray cluster, start {attempt} of {attempts} failed ({exc}); starting it again",
                          stacklevel=2)
    raise AssertionError("unreachable")


@pytest.mark.slow
@pytest.mark.realdata
def test_a_two_node_loopback_cluster_runs_a_paper_config_on_both_nodes(tmp_path, compare, data_root, require_real):
    import ray

    require_real(data_root / "nsl_kdd" / "KDDTrain+.txt")
    if ray.is_initialized():  # a Ray left running by another test in this process
        ray.shutdown()
    overrides = {"run.engine": "flower", "training.rounds": 2, "flower.num_cpus": 1, "run.progress": False}

    started = time.monotonic()
    cluster = start_loopback_cluster()
    try:
        node_ids = {cluster.head_node.node_id, *(node.node_id for node in cluster.worker_nodes)}
        assert len(node_ids) == 2
        address = cluster.address
        assert address.startswith("127.0.0.1:")
        cfg = load_config(PAPER_CONFIG, {**overrides, "flower.ray_address": address})
        joined = run_experiment(cfg, out_dir=tmp_path / "cluster")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
    print(f"\ntwo-node cluster run: {time.monotonic() - started:.1f} s wall (cluster start + run)")

    assert joined.summary["status"] == "complete"
    nodes = joined.summary["flower"]["ray_nodes"]
    print("ClientApp calls per node:", {node: (entry["address"], entry["by_type"]) for node, entry in nodes.items()})
    assert set(nodes) == node_ids  # ClientApps ran on both nodes of the cluster, and on no other
    assert all(entry["address"] == "127.0.0.1" and entry["client_apps"] >= 1 for entry in nodes.values())
    # 100 partition queries (one per SuperNode) + 2 rounds x 5 trained clients
    assert sum(entry["client_apps"] for entry in nodes.values()) == 100 + 2 * 5
    assert sum(entry["by_type"].get("train", 0) for entry in nodes.values()) == 2 * 5
    assert sum(entry["by_type"].get("query", 0) for entry in nodes.values()) == 100
    assert set().union(*(entry["clients"] for entry in nodes.values())) == set(range(100))

    local = run_experiment(load_config(PAPER_CONFIG, overrides), out_dir=tmp_path / "local")
    assert local.summary["status"] == "complete"
    assert len(local.summary["flower"]["ray_nodes"]) == 1  # the engine's own Ray: one node
    diff = compare(local, joined)
    print(f"two-node cluster vs local Flower run: max differences {diff}")
    assert diff["params_beyond_rtol"] <= 1e-6, diff  # np.allclose(rtol=1e-5, atol=1e-6)
    assert diff["client_metrics"] <= 1e-5 and diff["server_metrics"] <= 1e-5, diff
    assert diff["confusion"] == 0, diff
    assert max(diff[k] for k in ("f_j", "f_g", "f_r", "f_o", "F_T")) <= 1e-4, diff
