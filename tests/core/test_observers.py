"""The observer protocol (fltrust.core.observers): dispatch order, returned values, errors, state."""

from __future__ import annotations

import numpy as np
import pytest

from fltrust.core.observers import BaseObserver, ObserverSet, RoundObserver
from fltrust.core.records import RoundRecord, RunInfo, RunSummary


def info() -> RunInfo:
    return RunInfo("run", 2, 1, 2, np.array([3.0, 4.0]), np.array([[1.0, 2.0], [2.0, 2.0]]))


def record(round_: int = 1) -> RoundRecord:
    return RoundRecord(round=round_, client_ids=np.array([0, 1]))


class Logged(BaseObserver):
    """Writes every call to a shared log; returns ``value`` from the round and run ends."""

    def __init__(self, name, log, value=None, fail_on=None):
        self.name, self.log, self.value, self.fail_on = name, log, value, fail_on
        self.state = {"seen": 0}

    def on_run_start(self, info):
        self.log.append((self.name, "start"))
        if self.fail_on == "start":
            raise RuntimeError(f"{self.name} failed")

    def on_round_end(self, record):
        self.log.append((self.name, "round", dict(record.observations)))
        self.state["seen"] += 1
        if self.fail_on == "round":
            raise RuntimeError(f"{self.name} failed")
        return self.value

    def on_run_end(self, summary):
        self.log.append((self.name, "end"))
        return self.value

    def state_dict(self):
        return dict(self.state)

    def load_state_dict(self, state):
        self.state = dict(state)


def test_events_reach_the_observers_in_list_order():
    # Prepare
    log = []
    observers = ObserverSet([Logged("b", log), Logged("a", log), Logged("c", log)])

    # Execute
    observers.run_start(info())
    observers.round_end(record())
    observers.run_end(RunSummary(info(), [], [], 0.0))

    # Assert: the given order (not sorted by name), each event to all before the next event
    assert [(e[0], e[1]) for e in log] == [("b", "start"), ("a", "start"), ("c", "start"),
                                            ("b", "round"), ("a", "round"), ("c", "round"),
                                            ("b", "end"), ("a", "end"), ("c", "end")]


def test_round_values_are_stored_under_the_observer_name_and_later_observers_see_them():
    # Prepare: "first" returns a mapping, "silent" returns None, "second" returns a mapping
    log = []
    observers = ObserverSet([Logged("first", log, {"x": 1}), Logged("silent", log), Logged("second", log, {"y": 2})])
    rec = record()

    # Execute
    observers.round_end(rec)

    # Assert: None is not stored; each observer saw what the earlier ones had returned
    assert rec.observations == {"first": {"x": 1}, "second": {"y": 2}}
    assert [e[2] for e in log] == [{}, {"first": {"x": 1}}, {"first": {"x": 1}}]


def test_returned_mappings_are_copied():
    # an observer that keeps mutating the mapping it returned does not change the stored round
    returned = {"count": 1}
    observers = ObserverSet([Logged("o", [], returned)])
    rec = record()
    observers.round_end(rec)
    returned["count"] = 99
    assert rec.observations == {"o": {"count": 1}}


def test_run_end_collects_the_returned_mappings_by_name():
    observers = ObserverSet([Logged("a", [], {"score": 0.5}), Logged("b", []), Logged("c", [], {"n": 3})])
    assert observers.run_end(RunSummary(info(), [], [], 1.0)) == {"a": {"score": 0.5}, "c": {"n": 3}}


def test_duplicate_names_are_one_error_naming_them():
    with pytest.raises(ValueError, match=r"observer names must be unique; repeated: \['a', 'b'\]"):
        ObserverSet([Logged("b", []), Logged("a", []), Logged("a", []), Logged("b", []), Logged("c", [])])


@pytest.mark.parametrize("event", ["start", "round"])
def test_an_observer_error_propagates_and_stops_the_later_observers(event):
    # Prepare: the second of three observers fails
    log = []
    observers = ObserverSet([Logged("a", log, {"x": 1}), Logged("b", log, fail_on=event), Logged("c", log)])
    rec = record()

    # Execute
    with pytest.raises(RuntimeError, match="b failed"):
        observers.run_start(info()) if event == "start" else observers.round_end(rec)

    # Assert: "c" was never called; what "a" returned before the failure is kept
    assert [e[0] for e in log] == ["a", "b"]
    if event == "round":
        assert rec.observations == {"a": {"x": 1}}


def test_state_round_trip_by_name():
    # Prepare: two observers that have each seen 2 rounds
    log = []
    first = ObserverSet([Logged("a", log), Logged("b", log)])
    for k in (1, 2):
        first.round_end(record(k))
    state = first.state_dict()

    # Execute: a fresh set restores it; "b" is missing from the saved state (an observer added later)
    fresh = ObserverSet([Logged("a", []), Logged("b", []), Logged("new", [])])
    fresh.load_state_dict({"a": state["a"], "new": {"seen": 7}})

    # Assert
    assert state == {"a": {"seen": 2}, "b": {"seen": 2}}
    assert [o.state for o in fresh.observers] == [{"seen": 2}, {"seen": 0}, {"seen": 7}]


def test_base_observer_defaults():
    # Prepare
    observer = BaseObserver()
    start = info()

    # Execute
    observer.on_run_start(start)

    # Assert: it keeps the run info, returns nothing, has no state, satisfies the protocol
    assert observer.info is start
    assert observer.on_round_end(record()) is None and observer.on_run_end(RunSummary(start, [], [], 0.0)) is None
    assert observer.state_dict() == {} and observer.load_state_dict({"x": 1}) is None
    assert isinstance(observer, RoundObserver)


def test_an_object_without_the_hooks_is_not_an_observer():
    class NameOnly:
        name = "n"

        def on_round_end(self, record):
            return None

    assert not isinstance(NameOnly(), RoundObserver)
