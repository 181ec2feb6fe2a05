"""The example app on Flower's Deployment Runtime: a SuperLink and two SuperNodes on 127.0.0.1,
with TLS and SuperNode authentication, as examples/flower_app/README.md runs it.

Credentials are made at test time by ``examples/flower_credentials.py`` (a CA, the SuperLink's
certificate for 127.0.0.1 / localhost, one EC P-384 key pair per SuperNode). The SuperLink runs
with ``--ssl-*`` and ``--enable-supernode-auth``; the two SuperNodes' public keys are registered
with ``flwr supernode register`` over the TLS Control API, and each SuperNode signs its requests
with its private key (``--auth-supernode-private-key``) and trusts the SuperLink through the CA
(``--root-certificates``); ``flwr`` trusts it through ``root-certificates`` in
``$FLWR_HOME/config.toml``. Two more SuperNodes must be refused before the run starts: one with a
key the SuperLink does not know, one with none. The app is submitted with
``flwr run <app> <connection>``, runs 2 rounds on the two registered SuperNodes only, and must
leave a complete fltrust run folder whose rounds carry the fairness observations.

Everything stays on the loopback interface (free ports chosen here), every wait is bounded, and
every process this test starts is stopped by its process id in ``finally``.
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
import yaml

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "examples" / "flower_app"
CREDENTIALS = REPO / "examples" / "flower_credentials.py"
BIN = Path(sys.executable).parent
DEADLINE_S = 480  # the whole deployment, start to finish
REFUSED_WITHIN_S = 90  # an unauthorised SuperNode must have given up by then


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


def wait_for_exit(process: subprocess.Popen, timeout: float, seen: set[int]) -> bool:
    """Wait up to ``timeout`` s for ``process`` to exit; the ids of the processes it started meanwhile
    go into ``seen`` (they outlive it when Flower detached them). True if it exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.update(descendants(process.pid))
        if process.poll() is not None:
            return True
        time.sleep(0.2)
    return False


def stop_leftovers(pids: set[int]) -> None:
    """Stop, by id, the Flower processes among ``pids`` that are still running (a refused SuperNode's SuperExec)."""
    alive = []
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"flower-" in command or b"flwr" in command:  # still ours, not a reused id
            signal_pid(pid, signal.SIGTERM)
            alive.append(pid)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in alive):
        time.sleep(0.2)
    for pid in alive:
        if Path(f"/proc/{pid}").exists():
            signal_pid(pid, signal.SIGKILL)


def test_example_app_on_a_tls_deployment_with_supernode_authentication(tmp_path):
    for tool in ("flower-superlink", "flower-supernode", "flwr"):
        if not (BIN / tool).is_file():
            pytest.skip(f"{tool} is not installed next to {sys.executable}")
    home, out, creds = tmp_path / "flwr_home", tmp_path / "runs", tmp_path / "credentials"
    home.mkdir()
    made = subprocess.run([sys.executable, str(CREDENTIALS), "--out", str(creds), "--supernodes", "3",
                           "--host", "127.0.0.1", "--host", "localhost"], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert (creds / "server.key").stat().st_mode & 0o077 == 0  # private keys: owner only
    link_port = free_port()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "deployment"\n\n[superlink.deployment]\naddress = "127.0.0.1:{link_port}"\n'
        f'root-certificates = "{creds / "ca.crt"}"\n')
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
           "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
           "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)}
    logs = {}

    def launch(name: str, *args: str) -> subprocess.Popen:
        logs[name] = open(tmp_path / f"{name}.log", "w")  # closed in finally
        return subprocess.Popen([str(BIN / args[0]), *args[1:]], cwd=tmp_path, env=env, stdout=logs[name],
                                stderr=subprocess.STDOUT)

    def flwr(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "flwr"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=timeout)

    def supernode(name: str, partition: int, partitions: int, key: str | None) -> subprocess.Popen:
        auth = ["--auth-supernode-private-key", str(creds / key)] if key else []
        return launch(name, "flower-supernode", "--root-certificates", str(creds / "ca.crt"),
                      "--superlink", f"127.0.0.1:{link_port}", *auth, "--host", "127.0.0.1",
                      "--port", str(free_port()), "--max-wait-time", "120",
                      "--node-config", f"partition-id={partition} num-partitions={partitions}")

    started = time.monotonic()
    processes: list[subprocess.Popen] = []
    leftovers: set[int] = set()
    try:
        superlink = launch("superlink", "flower-superlink", "--ssl-ca-certfile", str(creds / "ca.crt"),
                           "--ssl-certfile", str(creds / "server.pem"), "--ssl-keyfile", str(creds / "server.key"),
                           "--enable-supernode-auth", "--host", "127.0.0.1", "--port", str(link_port))
        processes.append(superlink)
        wait_for_port(link_port, superlink, timeout=60)
        registered = []
        for pid in (0, 1):  # the SuperLink learns the two SuperNodes' public keys (the third stays unknown)
            result = flwr("supernode", "register", str(creds / f"supernode-{pid}.pub"), "deployment", "--format", "json")
            assert result.returncode == 0, result.stdout + result.stderr
            registered.append(str(json.loads(result.stdout)["node-id"]))
        for pid in (0, 1):
            processes.append(supernode(f"supernode{pid}", pid, 2, key=f"supernode-{pid}"))

        # refused: a SuperNode whose key was never registered, and one without a key
        intruders = {"unknown_key": supernode("unknown_key", 2, 3, key="supernode-2"),
                     "no_key": supernode("no_key", 3, 4, key=None)}
        processes += intruders.values()
        for name, process in intruders.items():
            if not wait_for_exit(process, REFUSED_WITHIN_S, leftovers):
                pytest.fail(f"the {name} SuperNode is still running after {REFUSED_WITHIN_S} s: it was not refused")
            assert process.returncode != 0, name
        log_of = {name: (tmp_path / f"{name}.log").read_text() for name in intruders}
        assert "[code: 2004] Failed to activate SuperNode." in log_of["unknown_key"], log_of["unknown_key"][-2000:]
        assert "All SuperNodes must be registered via the CLI" in log_of["no_key"], log_of["no_key"][-2000:]
        for text in log_of.values():
            assert "Failed to initialize the connection to the SuperLink" in text

        nodes = flwr("supernode", "list", "deployment", "--format", "json")
        assert nodes.returncode == 0, nodes.stdout + nodes.stderr
        assert sorted(n["node-id"] for n in json.loads(nodes.stdout)["nodes"]) == sorted(registered)

        run_config = f"num-server-rounds=2 fraction-train=1.0 min-nodes=2 synthetic-samples=800 out-dir='{out}'"
        remaining = DEADLINE_S - (time.monotonic() - started)
        result = flwr("run", str(APP), "deployment", "--stream", "--run-config", run_config, timeout=remaining)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output[-4000:]
        folders = list(out.glob("flower_app-*"))
        assert len(folders) == 1, (folders, output[-4000:])
        summary = json.loads((folders[0] / "summary.json").read_text())
        assert summary["status"] == "complete", summary
        assert yaml.safe_load((folders[0] / "config.yaml").read_text())["clients"] == 2  # the registered two only
        rounds = [json.loads(line) for line in (folders[0] / "rounds.jsonl").read_text().splitlines()]
        assert [r["round"] for r in rounds] == [0, 1, 2]
        for record in rounds[1:]:
            assert record["client_ids"] == [0, 1]
            fairness = record["observations"]["fairness"]
            assert {"f_j", "f_g", "f_r", "f_o", "F_T"} <= set(fairness)
            # the app's default corrected f_j leaves out a client whose cumulative FedSV is <= 0: with one
            # of the two left, or none, f_j and F_T are undefined (None)
            assert (0 <= fairness["F_T"] <= 1) if fairness["F_T"] is not None else fairness["num_dropped_gains"] in (1, 2)
            assert record["observations"]["trust"]["trust_score"] is not None  # the FactSheet so far, scored
        assert summary["observers"]["trust"]["trust_score"] is not None
        assert (folders[0] / "factsheet.json").is_file()
        assert "F_T = " in output, output[-4000:]  # the app's per-round line reached the user
        assert "https://127.0.0.1:" in (tmp_path / "superlink.log").read_text()  # it served TLS only
        print(f"\ndeployment test: {time.monotonic() - started:.1f} s wall (TLS SuperLink + 2 authenticated "
              "SuperNodes, 2 refused, flwr run)")
    finally:
        below = {process.pid: descendants(process.pid) for process in processes}  # before any of them exits
        for process in reversed(processes):
            stop(process, below[process.pid])
        stop_leftovers(leftovers)
        for handle in logs.values():
            handle.close()
