r"""System reliability: drop-out, error and time-out rates of the sampled clients.

FederatedTrust's taxonomy (paper Sec. 3.2, "System-level robustness") measures *system
reliability* "based on error, timeout, and dropout rates"; the prototype had "no data available"
for it (trust spec 6, docs/references.md#trust-6). Engines report, per round, in ``RoundRecord.server_metrics``:

==================  ==================================================================
key                 meaning
==================  ==================================================================
``num_sampled``     clients the server asked to train this round
``num_dropped``     of those, clients that left (no answer, disconnected)
``num_failed``      clients whose training raised an error (error rate)
``num_timed_out``   clients whose answer came after the round's time-out
==================  ==================================================================

Over all training rounds, with :math:`N = \sum_t \text{num\_sampled}_t`:

.. math::

    r_{drop} = \frac{\sum_t \text{dropped}_t}{N},\quad r_{err} = \frac{\sum_t \text{failed}_t}{N},\quad
    r_{to} = \frac{\sum_t \text{timed\_out}_t}{N},\qquad
    \text{reliability} = 1 - (r_{drop} + r_{err} + r_{to})

(the share of requested client updates that arrived in time; a client counts in one category).
When no round carries any of these keys the engine injected and observed no failures: every rate
is 0, the reliability 1, and the result says ``counters_reported=False`` ("declared / none
injected") so that the report does not present it as a measurement. ``num_sampled`` missing
while failure counters are present: sampled = participants + dropped + failed + timed out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["FAILURE_KEYS", "ReliabilityResult", "system_reliability"]

FAILURE_KEYS = ("num_dropped", "num_failed", "num_timed_out")
"""Server-metric keys of the failure counters (besides ``num_sampled``)."""


@dataclass(frozen=True)
class ReliabilityResult:
    """Rates over the run (module docstring).

    Attributes
    ----------
    num_sampled, num_dropped, num_failed, num_timed_out : int
    dropout_rate, error_rate, timeout_rate : float
    reliability : float
        ``1 - (dropout + error + timeout rates)``, in [0, 1].
    counters_reported : bool
        Whether the engine recorded any of the counters.
    """

    num_sampled: int
    num_dropped: int
    num_failed: int
    num_timed_out: int
    dropout_rate: float
    error_rate: float
    timeout_rate: float
    reliability: float
    counters_reported: bool

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name (:func:`dataclasses.asdict`).
        """
        return asdict(self)


def system_reliability(rounds: Iterable[tuple[int, Mapping[str, Any]]]) -> ReliabilityResult:
    """Drop-out, error and time-out rates from per-round server metrics.

    Parameters
    ----------
    rounds : iterable of (num_participants, server_metrics)
        One entry per training round: the number of clients whose update was aggregated and the
        round's ``server_metrics``.

    Returns
    -------
    ReliabilityResult

    Examples
    --------
    >>> r = system_reliability([(4, {"num_sampled": 5, "num_dropped": 1}), (5, {"num_sampled": 5})])
    >>> r.dropout_rate, r.reliability, r.counters_reported
    (0.1, 0.9, True)
    >>> system_reliability([(3, {}), (3, {})]).reliability
    1.0
    """
    totals = dict.fromkeys(("num_sampled", *FAILURE_KEYS), 0)
    reported = False
    for participants, metrics in rounds:
        counts = {key: int(metrics.get(key, 0) or 0) for key in FAILURE_KEYS}
        reported = reported or any(key in metrics for key in totals)
        sampled = metrics.get("num_sampled")
        sampled = int(participants) + sum(counts.values()) if sampled is None else int(sampled)
        if any(v < 0 for v in counts.values()) or sum(counts.values()) > sampled:
            raise ValueError(f"failure counters {counts} exceed num_sampled={sampled} (or are negative)")
        for key, value in {"num_sampled": sampled, **counts}.items():
            totals[key] += value
    n = totals["num_sampled"]
    rates = [totals[k] / n if n else 0.0 for k in FAILURE_KEYS]
    return ReliabilityResult(
        **totals, dropout_rate=rates[0], error_rate=rates[1], timeout_rate=rates[2],
        reliability=max(0.0, 1.0 - sum(rates)), counters_reported=reported,
    )
