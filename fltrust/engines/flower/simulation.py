"""Flower's Simulation Runtime on Ray, as the Flower engine runs it: start, logs, resources, stop.

- a local Ray whose servers listen on 127.0.0.1 only (:func:`ray_on_loopback`, :data:`LOOPBACK`);
- Flower's INFO chatter and its expected warnings dropped (:func:`quiet_flower`);
- one-line configuration errors before Ray starts, where no ClientApp could be placed or no
  cluster answers (:func:`check_ray_target`, :func:`available_cpus`);
- a ServerApp thread that gives up waiting for replies after an interrupt (:func:`stop_with`,
  :class:`SimulationStopped`), and Ray stopped afterwards (:func:`shutdown_ray`).

:class:`fltrust.engines.flower.engine.FlowerEngine` uses them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import warnings

import torch

from fltrust.config import RAY_ADDRESS, ConfigError, FlowerConfig

__all__ = ["LOOPBACK", "SimulationStopped", "available_cpus", "check_ray_target", "quiet_flower", "ray_on_loopback",
           "shutdown_ray", "stop_with"]

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
    on for the start-up only; a cluster named by ``flower.ray_address`` is left as it is.
    """
    from ray._private import ray_constants

    previous = getattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = previous


class _QuietFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not any(m in text for m in _QUIET_MESSAGES)


@contextlib.contextmanager
def quiet_flower(verbose: bool):
    """Flower's INFO chatter off (unless ``verbose``) and its two expected warnings dropped."""
    logger = logging.getLogger("flwr")
    quiet = _QuietFilter()
    level = logger.level
    logger.addFilter(quiet)
    if not verbose:
        logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            # Ray announces a future change of CUDA_VISIBLE_DEVICES for num_gpus=0 actors; the
            # clients pick their device themselves (cuda only when flower.num_gpus > 0)
            warnings.filterwarnings("ignore", message="Tip: In future versions of Ray", category=FutureWarning)
            yield
    finally:
        logger.removeFilter(quiet)
        logger.setLevel(level)


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def check_ray_target(flower: FlowerConfig) -> None:
    """Fail in one line, before Ray starts, where the run could never get going.

    For a local Ray (``flower.ray_address`` unset), one ClientApp's ``flower.num_cpus`` and
    ``flower.num_gpus`` must fit this machine (else Ray keeps waiting for a node that fits and
    Flower prints a traceback per attempt). For a ``host:port`` cluster address, something must
    answer there (a 5 s TCP connect; else ``ray.init`` retries for minutes).

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
        return
    match = RAY_ADDRESS.fullmatch(flower.ray_address)
    if match is None:  # "auto": Ray looks for a cluster on this machine (a ConnectionError if none)
        return
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"flower.ray_address={flower.ray_address!r}: nothing answers at {host}:{port} "
                          f"({exc.strerror or type(exc).__name__}); start the cluster (`ray start --head`) "
                          f"or unset flower.ray_address for a local Ray") from None


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


def shutdown_ray() -> None:
    """Stop this process's Ray session, if any (Flower stops it after a finished simulation, not
    after an interrupt or an error)."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
