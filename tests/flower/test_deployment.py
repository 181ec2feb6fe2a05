"""The example app on Flower's Deployment Runtime: a SuperLink and two SuperNodes on 127.0.0.1.

Everything stays on the loopback interface (``--insecure``, free ports chosen here), every wait is
bounded, and every process this test starts is stopped by its process group id in ``finally``.
The app is submitted with ``flwr run <app> <connection>`` (Flower 1.42 names the SuperLink
connection in ``$FLWR_HOME/config.toml``), runs 2 rounds, and must leave a complete fltrust run
folder whose rounds carry the fairness observations.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "examples" / "flower_app"
BIN = Path(sys.executable).parent
DEADLINE_S = 420  # the whole deployment, start to finish


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with code {process.returncode} before listening")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def descendants(pid: int) -> list[int]:
    """Ids of every process below ``pid`` (read from /proc), deepest first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: list[int] = []

    def walk(p: int) -> None:
        for child in children.get(p, []):
            walk(child)
            out.append(child)

    walk(pid)
    return out


def signal_pid(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def stop(process: subprocess.Popen, below: list[int]) -> None:
    """Stop one process this test started and the processes it started (SuperExec, ServerApp and
    ClientApp processes, which Flower detaches into their own sessions), each by its id."""
    for pid in below:
        signal_pid(pid, signal.SIGTERM)
    if process.poll() is None:
        signal_pid(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            signal_pid(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in below):
        time.sleep(0.2)
    for pid in below:
        if Path(f"/proc/{pid}").exists():
            signal_pid(pid, signal.SIGKILL)


def test_example_app_on_a_local_deployment(tmp_path):
    for tool in ("flower-superlink", "flower-supernode", "flwr"):
        if not (BIN / tool).is_file():
            pytest.skip(f"{tool} is not installed next to {sys.executable}")
    home, out = tmp_path / "flwr_home", tmp_path / "runs"
    home.mkdir()
    link_port = free_port()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "deployment"\n\n[superlink.deployment]\naddress = "127.0.0.1:{link_port}"\ninsecure = true\n')
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
           "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
           "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)}
    logs = {}

    def launch(name: str, *args: str) -> subprocess.Popen:
        logs[name] = open(tmp_path / f"{name}.log", "w")  # closed in finally
        return subprocess.Popen([str(BIN / args[0]), *args[1:]], cwd=tmp_path, env=env, stdout=logs[name],
                                stderr=subprocess.STDOUT)

    started = time.monotonic()
    processes: list[subprocess.Popen] = []
    try:
        superlink = launch("superlink", "flower-superlink", "--insecure", "--host", "127.0.0.1", "--port", str(link_port))
        processes.append(superlink)
        wait_for_port(link_port, superlink, timeout=60)
        for pid in (0, 1):
            processes.append(launch(
                f"supernode{pid}", "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{link_port}",
                "--host", "127.0.0.1", "--port", str(free_port()), "--max-wait-time", "120",
                "--node-config", f"partition-id={pid} num-partitions=2"))
        run_config = f"num-server-rounds=2 fraction-train=1.0 min-nodes=2 synthetic-samples=800 out-dir='{out}'"
        remaining = DEADLINE_S - (time.monotonic() - started)
        result = subprocess.run([str(BIN / "flwr"), "run", str(APP), "deployment", "--stream", "--run-config", run_config],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=remaining)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output[-4000:]
        folders = list(out.glob("flower_app-*"))
        assert len(folders) == 1, (folders, output[-4000:])
        summary = json.loads((folders[0] / "summary.json").read_text())
        assert summary["status"] == "complete", summary
        rounds = [json.loads(line) for line in (folders[0] / "rounds.jsonl").read_text().splitlines()]
        assert [r["round"] for r in rounds] == [0, 1, 2]
        for record in rounds[1:]:
            assert record["client_ids"] == [0, 1]
            fairness = record["observations"]["fairness"]
            assert {"f_j", "f_g", "f_r", "f_o", "F_T"} <= set(fairness)
            # the app's default corrected f_j leaves out a client whose cumulative FedSV is <= 0: with one
            # of the two left, f_j and F_T are undefined (None)
            assert (0 <= fairness["F_T"] <= 1) if fairness["F_T"] is not None else fairness["num_dropped_gains"] == 1
            assert record["observations"]["trust"]["trust_score"] is not None  # the FactSheet so far, scored
        assert summary["observers"]["trust"]["trust_score"] is not None
        assert (folders[0] / "factsheet.json").is_file()
        assert "F_T = " in output, output[-4000:]  # the app's per-round line reached the user
        print(f"\ndeployment test: {time.monotonic() - started:.1f} s wall (SuperLink + 2 SuperNodes + flwr run)")
    finally:
        below = {process.pid: descendants(process.pid) for process in processes}  # before any of them exits
        for process in reversed(processes):
            stop(process, below[process.pid])
        for handle in logs.values():
            handle.close()
