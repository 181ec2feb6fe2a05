r"""Injected system failures of the sampled clients: drop-outs, errors and time-outs.

The config's ``reliability`` section (:class:`fltrust.config.ReliabilityConfig`) gives three
probabilities. Every sampled client of round k falls in at most one category, decided by
:math:`u \sim U[0, 1)` drawn from a generator seeded by (run seed, k, client id, 23):

==============  ====================================  ===================================================
category        when                                  what happens (both engines)
==============  ====================================  ===================================================
``dropped``     u < dropout_rate                      the client never trains; nothing arrives
``failed``      ... < dropout_rate + failure_rate     its training raises :class:`InjectedFailure`
                                                      inside the strategy's ``local_update``; the engine
                                                      (in-process) or Flower (an error reply) catches it
``timed_out``   ... + timeout_rate                    it trains, but its update arrives after the round's
                                                      deadline and is discarded
``ok``          otherwise                             its update is aggregated
==============  ====================================  ===================================================

The round aggregates the updates that arrived; when none did, the global model is kept
(``server_metrics["model_kept"] = 1``). With any rate above 0 every training round's
``server_metrics`` carries ``num_sampled``, ``num_dropped``, ``num_failed``, ``num_timed_out`` (what
:mod:`fltrust.trust.measures.reliability` reads) and ``num_aggregated``; ``client_ids`` and the per-client
arrays list only the clients whose update arrived. The counters are what the server observed: the
in-process engine counts the exceptions it caught and the updates it discarded, the Flower engine
classifies the error replies it received (:func:`classify_error`).

Under Flower the categories are real client behaviour of the ClientApp: a dropped client raises
:class:`InjectedDropout` before training, a failed one :class:`InjectedFailure` inside its
training, a timed-out one :class:`InjectedTimeout` after training (its reply never arrives as an
update; under SecAgg+ the protocol then treats it as a dropped node and unmasks without it, or
halts the round when fewer clients than the reconstruction threshold remain).

What a timed-out client did locally stays done in both engines: local DP-SGD accounting of its
training counts in the in-process engine (the Flower server never receives that client's DP
history), and Ditto keeps its new personal model in-process and with
``flower.ditto_personal_store: client`` (with the server store the late reply, and the personal
model in it, is lost).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fltrust.config import ReliabilityConfig

OK, DROPPED, FAILED, TIMED_OUT = "ok", "dropped", "failed", "timed_out"
COUNTER_KEYS = ("num_sampled", "num_dropped", "num_failed", "num_timed_out")

__all__ = [
    "COUNTER_KEYS",
    "FaultPlan",
    "InjectedDropout",
    "InjectedFailure",
    "InjectedFault",
    "InjectedTimeout",
    "classify_error",
    "client_fault",
    "plan_round",
    "reliability_summary",
]


class InjectedFault(RuntimeError):
    """A failure injected by ``reliability.*``; the message carries a marker the server reads."""

    category = FAILED
    marker = "[fltrust:injected-failure]"

    def __init__(self, client_id: int, round_: int) -> None:
        super().__init__(f"{self.marker} client {client_id} round {round_} ({self.category}, injected by reliability.*)")
        self.client_id, self.round = int(client_id), int(round_)


class InjectedDropout(InjectedFault):
    """The client left before training (``reliability.dropout_rate``)."""

    category = DROPPED
    marker = "[fltrust:injected-dropout]"


class InjectedFailure(InjectedFault):
    """The client's training raised (``reliability.failure_rate``); the category and marker are the base's."""


class InjectedTimeout(InjectedFault):
    """The client's update came after the deadline (``reliability.timeout_rate``)."""

    category = TIMED_OUT
    marker = "[fltrust:injected-timeout]"


_BY_MARKER = {cls.marker: cls.category for cls in (InjectedDropout, InjectedFailure, InjectedTimeout)}


def classify_error(reason: str) -> str | None:
    """The category of an error reply's text (``dropped`` / ``failed`` / ``timed_out``), or None
    when it is not an injected fault.

    Examples
    --------
    >>> classify_error(str(InjectedTimeout(3, 1))), classify_error("ValueError: boom")
    ('timed_out', None)
    """
    for marker, category in _BY_MARKER.items():
        if marker in str(reason):
            return category
    return None


def client_fault(seed: int, round_: int, client_id: int, rel: ReliabilityConfig) -> str:
    """The category of one sampled client in one round (see the module docstring)."""
    if not rel.active:
        return OK
    u = float(np.random.default_rng([int(seed), int(round_), int(client_id), 23]).random())
    bound = 0.0
    for category, rate in ((DROPPED, rel.dropout_rate), (FAILED, rel.failure_rate), (TIMED_OUT, rel.timeout_rate)):
        bound += rate  # the cumulative rates: dropout, + failure, + timeout
        if u < bound:
            return category
    return OK


@dataclass
class FaultPlan:
    """The injected categories of a round's sampled clients (ids ascending)."""

    round: int
    sampled: np.ndarray
    status: dict[int, str] = field(default_factory=dict)
    active: bool = False

    def _ids(self, *categories: str) -> np.ndarray:
        return np.asarray([c for c in self.sampled.tolist() if self.status.get(int(c), OK) in categories], dtype=np.int64)

    @property
    def dropped(self) -> np.ndarray:
        return self._ids(DROPPED)

    @property
    def failed(self) -> np.ndarray:
        return self._ids(FAILED)

    @property
    def timed_out(self) -> np.ndarray:
        return self._ids(TIMED_OUT)

    @property
    def trained(self) -> np.ndarray:
        """Clients whose local training runs to the end (their update may still come too late)."""
        return self._ids(OK, TIMED_OUT)

    def arrived(self, client_ids: Iterable[int]) -> list[bool]:
        """Per client id: whether its update arrives in time."""
        return [self.status.get(int(c), OK) == OK for c in client_ids]

    def counters(self) -> dict[str, float]:
        """The injected counts (``num_sampled`` ... ``num_timed_out``); ``{}`` when nothing is injected."""
        if not self.active:
            return {}
        return {"num_sampled": float(len(self.sampled)), "num_dropped": float(len(self.dropped)),
                "num_failed": float(len(self.failed)), "num_timed_out": float(len(self.timed_out))}


def plan_round(seed: int, round_: int, sampled: Sequence[int] | np.ndarray, rel: ReliabilityConfig) -> FaultPlan:
    """The :class:`FaultPlan` of round ``round_`` for its sampled clients."""
    ids = np.sort(np.asarray(sampled, dtype=np.int64))
    status = {int(c): client_fault(seed, round_, int(c), rel) for c in ids}
    return FaultPlan(int(round_), ids, status, active=rel.active)


def count_errors(reasons: Iterable[str]) -> dict[str, int]:
    """How many error texts fall in each injected category (``unexpected``: any other error)."""
    out = {DROPPED: 0, FAILED: 0, TIMED_OUT: 0, "unexpected": 0}
    for reason in reasons:
        out[classify_error(reason) or "unexpected"] += 1
    return out


def reliability_summary(records: Sequence[Any], rel: ReliabilityConfig) -> dict[str, Any]:
    """The run summary's ``reliability`` block (``{}`` when nothing is injected).

    Observed rates over all training rounds (counts / sampled), the configured rates, the rounds
    that aggregated at least one update (``rounds_completed``) and those that kept the global model.
    """
    if not rel.active:
        return {}
    trained = [r for r in records if r.round > 0]
    totals = {k: int(sum(float(r.server_metrics.get(k, 0) or 0) for r in trained)) for k in COUNTER_KEYS}
    n = totals["num_sampled"]
    kept = sum(1 for r in trained if r.server_metrics.get("model_kept"))
    return {
        "configured": {"dropout_rate": rel.dropout_rate, "failure_rate": rel.failure_rate, "timeout_rate": rel.timeout_rate},
        **totals,
        "num_aggregated": int(sum(float(r.server_metrics.get("num_aggregated", len(r.client_ids)) or 0) for r in trained)),
        "dropout_rate": totals["num_dropped"] / n if n else 0.0,
        "failure_rate": totals["num_failed"] / n if n else 0.0,
        "timeout_rate": totals["num_timed_out"] / n if n else 0.0,
        "rounds": len(trained),
        "rounds_completed": len(trained) - kept,
        "rounds_model_kept": kept,
    }

