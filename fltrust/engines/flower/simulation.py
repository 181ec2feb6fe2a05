"""Flower's Simulation Runtime on Ray, as the Flower engine runs it: start, logs, resources, stop.

- a local Ray whose servers listen on 127.0.0.1 only (:func:`ray_on_loopback`, :data:`LOOPBACK`);
- Flower's INFO chatter and its expected warnings dropped (:func:`quiet_flower`);
- one-line configuration errors before Ray starts, where no ClientApp could be placed or no
  cluster answers (:func:`check_ray_target`, :func:`available_cpus`);
- an existing cluster (``flower.ray_address``) joined at the address given, in Ray's loopback mode
  where that address is a loopback one, or a one-line error within a bounded time
  (:func:`resolve_ray_target`, :class:`RayTarget`, :func:`join_ray`);
- the Ray node each ClientApp ran on, for the run's summary (:func:`record_ray_nodes`, :class:`NodeTally`);
- a Ctrl-C that stops the runtime in order (:func:`sigint_stops`): the ServerApp thread gives up
  waiting for replies (:func:`stop_with`, :class:`SimulationStopped`), Flower's workers finish
  their Ray calls, and only then is Ray stopped (:func:`shutdown_ray`).

:class:`fltrust.engines.flower.engine.FlowerEngine` uses them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import types
import warnings
from dataclasses import dataclass

import torch

from fltrust.config import ConfigError, FlowerConfig

__all__ = ["LOOPBACK", "RAY_JOIN_TIMEOUT_S", "NodeTally", "RayTarget", "SimulationStopped", "available_cpus",
           "check_ray_target", "is_loopback_host", "join_ray", "quiet_flower", "ray_on_loopback", "record_ray_nodes",
           "resolve_ray_target", "shutdown_ray", "sigint_stops", "stop_with"]

log = logging.getLogger("fltrust")

_QUIET_MESSAGES = (
    # run_simulation is the Simulation Runtime's only in-process entry point: the engine shares the
    # run's recorder, observers and data with the ServerApp, which `flwr run` (a separate
    # SuperLink process with a FAB) cannot. Flower 1.42 marks it deprecated in favour of `flwr run`;
    # we call it on purpose, so its warning is dropped (examples/flower_app shows `flwr run`).
    "The `run_simulation` function is deprecated",
    # fltrust evaluates on the server's auxiliary set, never on clients: deliberate, not news
    "fraction_evaluate is set to 0.0",
    # client failures injected by reliability.* (fltrust.faults): counted in the run record
    "[fltrust:injected-",
)


LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def ray_on_loopback():
    """While ``ray.init`` starts a local cluster, make Ray take 127.0.0.1 as this node's address.

    On Linux Ray takes the address of the outward interface (``ray.init(_node_ip_address=
    "127.0.0.1")`` is turned into it), and the GCS, raylet, object manager, agents, workers and
    the driver then listen on every interface: anyone who reaches one can submit code. In its
    single-machine mode (the default on macOS and Windows, ``ray_constants.ENABLE_RAY_CLUSTER``
    false) the node address is 127.0.0.1 and every server binds loopback only. That mode is switched
    on for the start-up only. :func:`join_ray` uses it too, to join a cluster at a loopback address
    (there it keeps Ray from rewriting that address into the outward one).
    """
    from ray._private import ray_constants

    previous = getattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = previous


def _not_quieted(record: logging.LogRecord) -> bool:
    """The log filter of :func:`quiet_flower`: False for Flower's expected messages."""
    return not any(m in record.getMessage() for m in _QUIET_MESSAGES)


@contextlib.contextmanager
def quiet_flower(verbose: bool):
    """Flower's INFO chatter off (unless ``verbose``) and its two expected warnings dropped."""
    logger = logging.getLogger("flwr")
    level = logger.level
    logger.addFilter(_not_quieted)
    if not verbose:
        logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            # Ray announces a future change of CUDA_VISIBLE_DEVICES for num_gpus=0 actors; the
            # clients pick their device themselves (cuda only when flower.num_gpus > 0)
            warnings.filterwarnings("ignore", message="Tip: In future versions of Ray", category=FutureWarning)
            yield
    finally:
        logger.removeFilter(_not_quieted)
        logger.setLevel(level)


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else ``os.cpu_count()``)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_ray_target(flower: FlowerConfig) -> RayTarget | None:
    """Fail in one line, before Ray starts, where the run could never get going.

    For a local Ray (``flower.ray_address`` unset), one ClientApp's ``flower.num_cpus`` and
    ``flower.num_gpus`` must fit this machine (else Ray keeps waiting for a node that fits and
    Flower prints a traceback per attempt). For a cluster address, Ray must contact the cluster at
    the address given (:func:`resolve_ray_target`) and something must answer there (a 5 s TCP
    connect; else ``ray.init`` retries with no end).

    Parameters
    ----------
    flower : FlowerConfig
        The run's ``flower`` settings.

    Returns
    -------
    RayTarget or None
        The cluster to join (for :func:`join_ray`); ``None`` for a local Ray.

    Raises
    ------
    ConfigError
        Naming the field, what it asks and what is available.
    """
    if flower.ray_address is None:
        cpus = available_cpus()
        if flower.num_cpus > cpus:
            raise ConfigError(f"flower.num_cpus={flower.num_cpus:g} asks more CPUs per ClientApp than the {cpus} "
                              f"available to this process, so no client could start; use flower.num_cpus <= {cpus}")
        if flower.num_gpus > 0:
            gpus = torch.cuda.device_count()
            if flower.num_gpus > gpus:
                raise ConfigError(f"flower.num_gpus={flower.num_gpus:g} asks more GPUs per ClientApp than the {gpus} "
                                  f"this machine has, so no client could start; use flower.num_gpus <= {gpus}")
        return None
    target = resolve_ray_target(flower.ray_address)
    try:
        socket.create_connection(_split(target.contact), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"{target.field}: nothing answers at {target.contact} "
                          f"({exc.strerror or type(exc).__name__}); start the cluster (`ray start --head`) "
                          f"or unset flower.ray_address for a local Ray") from None
    return target


# -- joining an existing cluster -----------------------------------------------------------------
RAY_JOIN_TIMEOUT_S = 55.0
"""Bound of :func:`join_ray`'s trial connection (with the 5 s TCP check: an answer within a minute)."""


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP (127.0.0.0/8, ``::1``; brackets allowed).

    Examples
    --------
    >>> [is_loopback_host(h) for h in ("127.0.0.1", "localhost", "[::1]", "10.0.0.5", "head")]
    [True, True, True, False, False]
    """
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class RayTarget:
    """An existing Ray cluster as fltrust joins it (:func:`resolve_ray_target`).

    Attributes
    ----------
    given : str
        ``flower.ray_address`` as the config has it.
    address : str
        What ``ray.init(address=...)`` gets: ``auto`` resolved to the cluster it finds (so that
        the trial connection and the run join the same one), anything else as given.
    contact : str
        ``host:port`` where Ray contacts the cluster's GCS (the Ray Client server for ``ray://``).
    loopback : bool
        The cluster is on a loopback address: it is joined in Ray's loopback mode
        (:func:`ray_on_loopback`) with the driver's node address 127.0.0.1.
    client : bool
        A ``ray://`` address (Ray Client; no node of the cluster runs here).
    """

    given: str
    address: str
    contact: str
    loopback: bool
    client: bool

    @property
    def field(self) -> str:
        """``flower.ray_address='...'`` for error messages (naming the contacted address where it differs)."""
        shown = f"flower.ray_address={self.given!r}"
        return shown if self.address == self.given else f"{shown} (the cluster at {self.address})"

    def init_kwargs(self) -> dict:
        """The arguments of ``ray.init`` that depend on the target."""
        kwargs = {"address": self.address}
        if self.loopback and not self.client:
            kwargs["_node_ip_address"] = LOOPBACK
        return kwargs


def resolve_ray_target(address: str) -> RayTarget:
    """Where Ray will contact the cluster named by ``address``, resolved as ``ray.init`` does.

    ``ray.init(address="127.0.0.1:6379")`` on Linux does not contact 127.0.0.1: Ray rewrites a
    loopback host (``127.0.0.1``, ``localhost``, ``::1``) into this machine's outward address
    (``resolve_ip_for_localhost``), where a cluster started on loopback does not listen, and then
    retries the GCS there every 30 s with no end. In Ray's loopback mode (:func:`ray_on_loopback`)
    the rewrite yields 127.0.0.1, so a loopback address is resolved -- and later joined -- in that
    mode. The address is resolved with Ray's own function (``canonicalize_bootstrap_address``), in
    the mode it will be joined in, and must come out as given (same port, and a loopback host for
    a loopback one): a Ray release that rewrites it otherwise fails here, naming both addresses,
    instead of hanging. ``auto`` is resolved once to the cluster Ray finds (``RAY_ADDRESS``, else
    the latest ``ray start`` on this machine). ``ray://`` (Ray Client) addresses are contacted as
    given.

    Parameters
    ----------
    address : str
        ``flower.ray_address``: ``auto``, ``host:port`` or ``ray://host:port``.

    Returns
    -------
    RayTarget
        The address ``ray.init`` gets, where Ray contacts the cluster, and the mode it is joined in.

    Raises
    ------
    ConfigError
        ``auto`` finds no cluster, or Ray would contact another address than the one given.

    Examples
    --------
    >>> target = resolve_ray_target("127.0.0.1:6379")
    >>> target.contact, target.loopback
    ('127.0.0.1:6379', True)
    >>> resolve_ray_target("ray://10.0.0.5:10001").contact
    '10.0.0.5:10001'
    """
    if address.startswith("ray://"):
        contact = address[len("ray://"):]
        return RayTarget(address, address, contact, is_loopback_host(_split(contact)[0]), client=True)
    from ray._private import services

    field = f"flower.ray_address={address!r}"
    raw = address
    if address == "auto":
        with ray_on_loopback():  # finds the cluster's address without rewriting a loopback one
            try:
                found = services.canonicalize_bootstrap_address("auto")
            except ConnectionError:
                found = None
        if found is None:
            raise ConfigError(f"{field}: Ray finds no cluster on this machine (RAY_ADDRESS is unset and no "
                              "`ray start --head` runs here); name the cluster's host:port")
        raw = found
    host, port = _split(raw)
    loopback = is_loopback_host(host)
    with ray_on_loopback() if loopback else contextlib.nullcontext():
        contact = services.canonicalize_bootstrap_address(raw)
    contact_host, contact_port = _split(contact)
    same = contact_port == port and (is_loopback_host(contact_host) if loopback else contact_host == host)
    if not same:
        raise ConfigError(f"{field}: Ray would contact the cluster at {contact}, not at {raw} as given, and "
                          f"would wait there with no end; start the cluster where Ray looks, or name the "
                          f"address Ray contacts")
    return RayTarget(address, raw, contact, loopback, client=False)


_TRIAL = """
import json, sys
import ray
from ray._private import ray_constants
address, loopback = sys.argv[1], sys.argv[2] == "1"
kwargs = {}
if loopback:
    ray_constants.ENABLE_RAY_CLUSTER = False
    kwargs["_node_ip_address"] = "127.0.0.1"
ray.init(address=address, include_dashboard=False, logging_level="WARNING", **kwargs)


def look(get):
    try:
        return get()
    except Exception:  # Ray Client has no local node
        return None


print("FLTRUST-TRIAL " + json.dumps({"node_ip": look(ray.util.get_node_ip_address),
                                      "gcs": look(lambda: ray.get_runtime_context().gcs_address),
                                      "nodes": look(lambda: sum(1 for n in ray.nodes() if n["Alive"]))}), flush=True)
ray.shutdown()
"""


def _trial_join(target: RayTarget, timeout_s: float) -> dict:
    """``ray.init`` of ``target`` in a child process that is killed after ``timeout_s``."""
    env = {**os.environ, "RAY_ADDRESS": ""}  # ray.init(address=...) as given, never the environment's
    with subprocess.Popen([sys.executable, "-c", _TRIAL, target.address, "1" if target.loopback and not target.client
                           else "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          start_new_session=True) as child:
        try:
            out, _ = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)  # its own session: the child and anything it started
            out, _ = child.communicate()
            if _TRIAL_MARK not in out:  # else it joined, and then hung leaving
                import ray

                raise ConfigError(f"{target.field}: Ray did not join the cluster at {target.contact} within "
                                  f"{timeout_s:.0f} s ({_last_line(out)}); check that it runs there, that this "
                                  f"machine is one of its nodes (or use ray://), and that its Ray version is "
                                  f"{ray.__version__}") from None
    if _TRIAL_MARK in out:
        line = next(line for line in out.splitlines() if line.startswith(_TRIAL_MARK))
        return json.loads(line[len(_TRIAL_MARK):])
    raise ConfigError(f"{target.field}: Ray could not join the cluster at {target.contact} "
                      f"(exit {child.returncode}: {_last_line(out)})")


_TRIAL_MARK = "FLTRUST-TRIAL "


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    # Ray's log prefix "[date time W pid tid] file.h:153: " dropped
    last = re.sub(r"^\[[^]]*\]\s*(\S+:\d+:\s*)?", "", lines[-1]) if lines else "no output"
    return last if len(last) <= 240 else last[:237] + "..."


def join_ray(target: RayTarget, timeout_s: float | None = None, **options) -> None:
    """Join the existing cluster ``target`` in this process, or fail in one line within ``timeout_s``.

    ``ray.init`` of an existing cluster has no time limit of its own: where the GCS does not
    answer, or this machine has no raylet of the cluster, it retries with no end. So the same
    ``ray.init`` (same address and mode) is first tried in a child process with a deadline; the
    run joins only after that succeeded, and the child's view of the cluster (node address,
    GCS address) is checked against ``target``. The in-process join then reuses the address Ray
    just reached; a cluster that dies between the two is the one case left unbounded.

    Parameters
    ----------
    target : RayTarget
        From :func:`resolve_ray_target` (or :func:`check_ray_target`).
    timeout_s : float, optional
        Deadline of the trial connection, in seconds (default :data:`RAY_JOIN_TIMEOUT_S`).
    **options
        Further ``ray.init`` arguments (``runtime_env``, ``logging_level``, ...).

    Raises
    ------
    ConfigError
        The cluster cannot be joined in time, or Ray reached it at another address, or (for a
        loopback cluster) took a non-loopback address for this node.
    """
    import ray

    trial = _trial_join(target, RAY_JOIN_TIMEOUT_S if timeout_s is None else timeout_s)
    _check_joined(target, trial.get("gcs"), trial.get("node_ip"))
    with ray_on_loopback() if target.loopback and not target.client else contextlib.nullcontext():  # a loopback cluster
        ray.init(**target.init_kwargs(), **options)
    if not target.client:
        try:
            _check_joined(target, ray.get_runtime_context().gcs_address, ray.util.get_node_ip_address())
        except ConfigError:
            ray.shutdown()
            raise


def _check_joined(target: RayTarget, gcs: str | None, node_ip: str | None) -> None:
    if target.client:
        return
    if gcs is not None and gcs != target.contact:
        raise ConfigError(f"{target.field}: Ray joined the cluster at {gcs}, not at {target.contact}; "
                          "name the address Ray contacts")
    if target.loopback and node_ip is not None and not is_loopback_host(node_ip):
        raise ConfigError(f"{target.field}: Ray took {node_ip} as this node's address for the loopback cluster at "
                          f"{target.contact}; start the cluster with --node-ip-address {LOOPBACK}")


# -- where the ClientApps ran ---------------------------------------------------------------------
class NodeTally:
    """A Ray actor's state (``ray.remote(num_cpus=0)(NodeTally)``): the Ray node of every
    ClientApp call, reported by :func:`record_ray_nodes`."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict] = {}

    def add(self, node_id: str, address: str, partition: int, message_type: str) -> None:
        """Count one ClientApp call on a node.

        Parameters
        ----------
        node_id : str
            The Ray node id (hex) the ClientApp ran on.
        address : str
            That node's IP address.
        partition : int
            The client (``node_config["partition-id"]``) the call was for.
        message_type : str
            The message it answered (``train``, ``query``, ...).
        """
        entry = self.nodes.setdefault(node_id, {"address": address, "client_apps": 0, "by_type": {}, "clients": []})
        entry["client_apps"] += 1
        entry["by_type"][message_type] = entry["by_type"].get(message_type, 0) + 1
        if partition not in entry["clients"]:
            entry["clients"] = sorted([*entry["clients"], partition])

    def read(self) -> dict[str, dict]:
        """``{node id: {"address": node IP, "client_apps": calls, "by_type": {message type: calls},
        "clients": partition ids}}``."""
        return self.nodes


def record_ray_nodes(app, tally):
    """A ClientApp that tells ``tally`` (a :class:`NodeTally` actor) the Ray node of each call, then runs ``app``.

    Parameters
    ----------
    app : flwr.clientapp.ClientApp
        The app that answers ``train``, ``evaluate`` and ``query`` messages.
    tally : ray.actor.ActorHandle
        A :class:`NodeTally` actor; each call waits for its ``add`` (a few ms), so that every
        call is counted before its reply reaches the server.

    Returns
    -------
    flwr.clientapp.ClientApp
        The recording app.
    """
    import ray
    from flwr.clientapp import ClientApp

    outer = ClientApp()

    def run(message, context):
        node = ray.get_runtime_context().get_node_id()
        partition = int(context.node_config.get("partition-id", -1))
        ray.get(tally.add.remote(node, ray.util.get_node_ip_address(), partition, message.metadata.message_type))
        return app(message, context)

    for register in (outer.train, outer.evaluate, outer.query):
        register()(run)
    return outer


class SimulationStopped(Exception):
    """Raised in the ServerApp thread when the engine stops waiting for client replies."""


def stop_with(grid, stop: threading.Event) -> None:
    """Make the ServerApp's waits for client replies give up once ``stop`` is set.

    Flower's in-memory grid polls ``pull_messages`` for replies with no end when no timeout is
    given; after a Ctrl-C its runtime is gone, no reply comes, and its (non-daemon) ServerApp
    thread would keep the interpreter from exiting. Each poll now checks ``stop`` first.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
        The ServerApp's grid; its ``pull_messages`` is wrapped in place.
    stop : threading.Event
        Once set, the next poll raises :class:`SimulationStopped`.
    """
    pull = grid.pull_messages

    def pull_messages(*args, **kwargs):
        if stop.is_set():
            raise SimulationStopped("the Flower engine stopped (interrupted or failed)")
        return pull(*args, **kwargs)

    grid.pull_messages = pull_messages


@contextlib.contextmanager
def sigint_stops(stop: threading.Event):
    """Within the block, a first Ctrl-C (SIGINT) only sets ``stop``; a second one raises
    ``KeyboardInterrupt`` at once.

    A ``KeyboardInterrupt`` raised in the main thread while Flower's Simulation Runtime waits for
    its workers makes Flower stop Ray (``RayBackend.terminate``) while a worker thread is still in
    a Ray call; Ray then ends the whole process with exit status 1 ("The core worker has already
    been shutdown"), before the interrupt's line is printed. Setting ``stop`` instead lets the
    ServerApp thread give up at its next wait (:func:`stop_with`), which ends Flower's workers in
    order; the caller raises ``KeyboardInterrupt`` after the block when ``interrupted`` is set.
    Outside the main thread, or where SIGINT has a handler other than Python's default one (a
    Jupyter kernel's, say), the block changes nothing.

    Yields
    ------
    types.SimpleNamespace
        Its ``interrupted`` tells whether a Ctrl-C arrived in the block.
    """
    seen = types.SimpleNamespace(interrupted=False)  # True once a Ctrl-C arrived
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield seen
        return

    def first(signum, frame) -> None:
        seen.interrupted = True
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        log.warning("interrupted: stopping after the ClientApp calls under way (Ctrl-C again to stop at once)")

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def shutdown_ray() -> None:
    """Stop this process's Ray session, if any (Flower stops it after a finished simulation, not
    after an interrupt or an error).

    Ray starts a new local instance when a Ray call finds none (``ray.get`` in a ClientApp call
    still under way, say); one started after this shutdown would outlive the command, so Ray's
    implicit start is switched off for the rest of the process, also when Flower already stopped
    its session (an explicit ``ray.init``, as the next run makes, still starts one)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return
    hook = sys.modules.get("ray._private.auto_init_hook")
    if hook is not None and hasattr(hook, "enable_auto_connect"):
        setattr(hook, "enable_auto_connect", False)  # noqa: B010 - before the shutdown: no thread slips in between
    if ray.is_initialized():
        ray.shutdown()
