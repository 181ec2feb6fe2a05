"""The observer protocol: how metrics watch a federated run without knowing its engine.

An engine calls, in order: ``on_run_start(info)`` once, ``on_round_end(record)`` after every
round (round 0 = initial model), and ``on_run_end(summary)`` once. An observer may return a
JSON-serialisable mapping from ``on_round_end``; the engine stores it in
``record.observations[observer.name]`` so it is persisted with the round.

Observers that keep state across rounds (cumulative Shapley values, selection counts)
implement ``state_dict`` / ``load_state_dict`` so that an interrupted run resumes exactly.

:class:`ObserverSet` is the one place that implements this calling convention; every engine
(in-process, Flower adapter) uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from fltrust.core.records import RoundRecord, RunInfo, RunSummary


@runtime_checkable
class RoundObserver(Protocol):
    """Receives plain records from any FL engine."""

    name: str

    def on_run_start(self, info: RunInfo) -> None:
        """Called once before round 0."""

    def on_round_end(self, record: RoundRecord) -> Mapping[str, Any] | None:
        """Called after each round; the returned mapping is stored in the round record."""

    def on_run_end(self, summary: RunSummary) -> Mapping[str, Any] | None:
        """Called once at the end; the returned mapping is stored in the run summary."""

    def state_dict(self) -> dict[str, Any]:
        """State needed to resume (JSON-serialisable)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""


class BaseObserver:
    """Convenience base class with no-op hooks; subclasses override what they need."""

    name = "observer"

    def on_run_start(self, info: RunInfo) -> None:
        self.info = info

    def on_round_end(self, record: RoundRecord) -> Mapping[str, Any] | None:
        return None

    def on_run_end(self, summary: RunSummary) -> Mapping[str, Any] | None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class ObserverSet:
    """Dispatches engine events to observers and collects what they return."""

    def __init__(self, observers: Iterable[RoundObserver] = ()) -> None:
        self.observers = list(observers)
        names = [o.name for o in self.observers]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"observer names must be unique; repeated: {duplicates}")

    def run_start(self, info: RunInfo) -> None:
        """Call every observer's ``on_run_start(info)``."""
        for observer in self.observers:
            observer.on_run_start(info)

    def round_end(self, record: RoundRecord) -> None:
        """Call every observer's ``on_round_end(record)``; what one returns is stored in
        ``record.observations[observer.name]``."""
        for observer in self.observers:
            result = observer.on_round_end(record)
            if result is not None:
                record.observations[observer.name] = dict(result)

    def run_end(self, summary: RunSummary) -> dict[str, Any]:
        """Call every observer's ``on_run_end(summary)``; returns what they report, by observer name."""
        results = {observer.name: observer.on_run_end(summary) for observer in self.observers}
        return {name: dict(result) for name, result in results.items() if result is not None}

    def state_dict(self) -> dict[str, Any]:
        """Every observer's ``state_dict()``, by observer name."""
        return {o.name: o.state_dict() for o in self.observers}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Hand each observer its entry of :meth:`state_dict`'s output (observers without one keep
        their state)."""
        for observer in self.observers:
            if observer.name in state:
                observer.load_state_dict(state[observer.name])
