"""The neutral core every other package builds on: records, the observer protocol, evaluation
helpers and atomic file writes. Nothing here imports another fltrust package."""

from fltrust.core.io import atomic_torch_save, atomic_write_bytes, atomic_write_json, atomic_write_text, to_plain
from fltrust.core.observers import BaseObserver, ObserverSet, RoundObserver
from fltrust.core.records import Params, RoundRecord, RunInfo, RunSummary

__all__ = [
    "BaseObserver", "ObserverSet", "Params", "RoundObserver", "RoundRecord", "RunInfo", "RunSummary",
    "atomic_torch_save", "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "to_plain",
]
