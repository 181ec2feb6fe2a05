r"""Extended mode's measures as declarations: one decorated function per FactSheet field (or group).

A *measure* is a function of the finished run (a :class:`RunView`) that returns the value of the
FactSheet field it declares. :func:`measure` registers it, and its declaration is all the kit needs:

- the FactSheet schema gains the field (:func:`fltrust.trust.factsheet.schema.extended_fields`:
  path, type, who produces it, from what), so :func:`~fltrust.trust.factsheet.new_factsheet` and
  :func:`~fltrust.trust.factsheet.set_field` know it;
- the extended observer (:class:`fltrust.trust.extended.ExtendedMetrics`) calls every registered
  measure at the end of the run, in registration order, writes the values it returns, and writes
  the provenance entry (measured / declared / missing / n/a, with the declared method) of every
  metric of the definitions in use whose **first input** is one of the measure's fields.

A new trust metric is then one YAML entry (it names the field as its first input) and one
function::

    @measure("fairness/worst_client_accuracy", "number", source="min over clients of the accuracy",
             provenance="lowest per-client accuracy of the final global model")
    def worst_client_accuracy(run: RunView) -> float:
        return float(run.client_accuracy.min()) if run.client_accuracy.size else float("nan")

A function returns the value of its one field, or a :class:`Measured` (several fields, or a
status, method or reason of its own: ``Measured(status="n/a", reason="...")``). A plain value
that is missing (``None``, NaN) makes the metric ``missing`` (scored 0).

The packaged measures are in :mod:`fltrust.trust.measures.taxonomy`, registered when the package
:mod:`fltrust.trust.measures` is imported (so before any use of this module). A user's measures
are registered when their module is imported, before the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fltrust.registry import Registry, qualname
from fltrust.trust.factsheet.io import get_field
from fltrust.trust.factsheet.schema import (
    PROVENANCE_STATUSES,
    FactsheetError,
    FactsheetField,
    declare_fields,
    undeclare_fields,
)

if TYPE_CHECKING:
    import torch

    from fltrust.core.records import RoundRecord, RunSummary
    from fltrust.settings import TrustSettings
    from fltrust.trust.inputs import TrustInputs

__all__ = [
    "MEASURES",
    "MEASURE_STATUSES",
    "Measure",
    "MeasureError",
    "Measured",
    "RunView",
    "declared_field",
    "declared_measure",
    "measure",
    "registered_measures",
    "unregister_measure",
]

MEASURE_STATUSES = ("measured", "declared")
"""What a measure's value is by default: computed by the kit, or stated by configuration or a person."""


class MeasureError(ValueError):
    """A measure declaration or result is invalid; the message names the measure and the fix."""


@dataclass(frozen=True)
class Measured:
    """What a measure found, when a plain value is not enough.

    Attributes
    ----------
    values : mapping
        FactSheet field path -> value, for fields the measure declares (a subset; the others keep
        their template value). ``None`` is written as ``None``.
    status : str or None
        ``"measured"``, ``"declared"``, ``"missing"`` (scores 0) or ``"n/a"`` (left out of the
        means; needs ``reason``); ``None`` = the measure's declared status.
    method : str or None
        How the value was obtained; ``None`` = the measure's declared provenance text.
    reason : str or None
        Why it is missing, n/a or declared rather than measured.
    details : mapping
        Extra JSON-ready facts for the provenance entry.
    output : object
        What the observer's run-end output keeps under the measure's ``output`` key (e.g. the
        attack's full result); ``None`` = nothing.
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    status: str | None = None
    method: str | None = None
    reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    output: Any = None


@dataclass(frozen=True)
class Measure:
    """A registered measure (made by :func:`measure`).

    Attributes
    ----------
    name : str
        The function's name (unique).
    function : callable
        ``function(run: RunView) -> value or Measured``.
    fields : tuple of FactsheetField
        The FactSheet fields it declares, its own first.
    provenance : str
        How the value is obtained (the provenance entry's ``method``).
    status : {"measured", "declared"}
        Its provenance status when it returns a present value.
    output : str or None
        ``"key"`` or ``"key/subkey"`` of the observer's run-end output (``extended``) that keeps
        :attr:`Measured.output`; ``None`` = none.
    """

    name: str
    function: Callable[[RunView], Any]
    fields: tuple[FactsheetField, ...]
    provenance: str
    status: str = "measured"
    output: str | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        """The declared field paths."""
        return tuple(f.path for f in self.fields)

    def run(self, view: RunView) -> Measured:
        """Call the function and check its result.

        Parameters
        ----------
        view : RunView
            The finished run.

        Returns
        -------
        Measured
            With ``status`` and ``method`` filled in (the declared ones unless the function chose).

        Raises
        ------
        MeasureError
            The function returned a plain value for a multi-field measure, a field it does not
            declare, or an unknown status.
        """
        result = self.function(view)
        if not isinstance(result, Measured):
            if len(self.fields) != 1:
                raise MeasureError(f"measure {self.name!r} declares {len(self.fields)} fields; return "
                                   f"Measured(values={{...}}) naming them ({list(self.paths)})")
            missing = _is_missing(result)
            result = Measured({self.paths[0]: result}, "missing" if missing else None,
                              reason=f"{self.name} gave no value" if missing else None)
        unknown = sorted(set(result.values) - set(self.paths))
        if unknown:
            raise MeasureError(f"measure {self.name!r} returned {unknown}, which it does not declare; add them to "
                               "its fields (also=...)")
        status = result.status or self.status
        if status not in PROVENANCE_STATUSES:
            raise MeasureError(f"measure {self.name!r}: status {status!r}; choose one of {list(PROVENANCE_STATUSES)}")
        if status == "n/a" and not result.reason:
            raise MeasureError(f"measure {self.name!r}: an n/a result needs a reason")
        return Measured(dict(result.values), status, result.method or self.provenance, result.reason,
                        dict(result.details), result.output)


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(float(value))
    return isinstance(value, str) and not value.strip()


@dataclass
class RunView:
    """The finished run, as a measure sees it (built by :class:`fltrust.trust.extended.ExtendedMetrics`).

    Attributes
    ----------
    summary : RunSummary
        Every round's record (``summary.rounds``), the run's start facts (``summary.info``), the
        final parameters.
    model : torch.nn.Module
        The final global model, in eval mode (an evaluation copy: do not train it).
    factsheet : dict
        The FactSheet so far (the base observer's fields and the earlier measures'); read it, and
        return values instead of writing it.
    settings : TrustSettings
        The observer's settings (sample counts of the attacks, tolerances, ``country_iso_code``).
    inputs : TrustInputs
        What the run states about itself (strategy, secure aggregation, dataset name, samplers).
    declared : dict
        ``settings.declared``, checked and normalised (:func:`fltrust.settings.validate_declarations`).
    x_test, y_test : torch.Tensor
        The test split the observer was given.
    x_ref, y_ref : torch.Tensor
        The server's reference sample (a seeded subset of the test split; client reputation).
    client_accuracy : np.ndarray
        Per-client accuracy of the global model, as the FactSheet's ``performance/test_acc_avg``
        and ``fairness/test_acc_cv`` use it (see :class:`fltrust.trust.observer.TrustObserver`).
    seed : int
        The run's seed (for any sampling a measure does).
    rounds : dict
        Round -> the extended observer's per-round state (``reference_loss``,
        ``global_reference_loss``, ``versions``, ``client_ids``).
    initial_global : str or None
        Hash of the round-0 model.
    energy : EnergyMeasurement or None
        The CodeCarbon measurement of rounds 0..T (``None`` when the tracker never started).
    resumed_after : int or None
        The round a resumed run restarted after.
    run_folder : Path or None
        Where the run's files go (``None`` = write nothing).
    """

    summary: RunSummary
    model: torch.nn.Module
    factsheet: dict[str, Any]
    settings: TrustSettings
    inputs: TrustInputs
    declared: dict[str, Any]
    x_test: torch.Tensor
    y_test: torch.Tensor
    x_ref: torch.Tensor
    y_ref: torch.Tensor
    client_accuracy: np.ndarray
    seed: int
    rounds: dict[int, dict[str, Any]]
    initial_global: str | None = None
    energy: Any = None
    resumed_after: int | None = None
    run_folder: Path | None = None

    @property
    def trained(self) -> list[RoundRecord]:
        """The training rounds (round >= 1) with at least one participant."""
        return [r for r in self.summary.rounds if r.round >= 1 and len(r.client_ids)]

    @property
    def participated(self) -> list[int]:
        """The ids of the clients that took part in a training round, sorted."""
        return sorted({int(c) for r in self.trained for c in r.client_ids})

    def field(self, path: str) -> Any:
        """Return the FactSheet value at ``"section/field"`` (``None`` when absent).

        As :func:`fltrust.trust.factsheet.get_field` on :attr:`factsheet`.

        Parameters
        ----------
        path : str

        Returns
        -------
        object or None
        """
        return get_field(self.factsheet, path)


MEASURES: Registry[Measure] = Registry("measure", error=MeasureError)
"""Every registered measure by function name, in registration order (:func:`measure` adds)."""


def declared_field(path: str, kind: str = "number", source: str = "", *, who: str = "server",
                   phase: str = "post") -> FactsheetField:
    """Declare a FactSheet field for a measure's ``also=`` (a field not in the prototype's template).

    Parameters
    ----------
    path : str
        ``"section/field"``.
    kind : {"number", "str", "bool", "list", "text"}
        Its type (the template default follows from it: NaN, ``""``, ``False``, ``[]``).
    source : str
        Where the value comes from (the schema table's last column).
    who : str
        The federation actor that produces it (paper Table 2).
    phase : {"pre", "during", "post"}
        When in the run it is known.

    Returns
    -------
    FactsheetField
    """
    return FactsheetField(path, kind, phase, who, source, extra=True)


def measure(
    path: str, kind: str = "number", *, provenance: str, source: str = "", status: str = "measured",
    who: str = "server", phase: str = "post", also: Sequence[FactsheetField] = (), output: str | None = None,
) -> Callable[[Callable[[RunView], Any]], Callable[[RunView], Any]]:
    """Register the decorated function as the measure of the FactSheet field ``path``.

    Parameters
    ----------
    path : str
        ``"section/field"`` of the value it returns; a metric reads it by naming it as its first
        input. A new section (``"mysection/x"``) is added to the extended FactSheet.
    kind : {"number", "str", "bool", "list", "text"}
        The field's type.
    provenance : str
        How the value is obtained: the provenance entry's ``method`` (shown in the trust report).
    source : str
        Where the value comes from, for the schema table (default: the provenance text).
    status : {"measured", "declared"}
        ``"declared"`` for a value a person or the configuration states.
    who, phase : str
        The schema's actor and phase of the field (:class:`~fltrust.trust.factsheet.FactsheetField`).
    also : sequence of FactsheetField
        More fields the function fills (:func:`declared_field`); it then returns a :class:`Measured`.
    output : str or None
        Key (``"key"`` or ``"key/subkey"``) of the observer's run-end output for :attr:`Measured.output`.

    Returns
    -------
    callable
        A decorator that registers ``function(run: RunView)`` and returns it unchanged.

    Raises
    ------
    MeasureError
        A bad status, or a field another measure (or the template) already declares.
    """
    if status not in MEASURE_STATUSES:
        raise MeasureError(f"measure of {path!r}: status={status!r}; choose one of {list(MEASURE_STATUSES)}")
    if not isinstance(provenance, str) or not provenance.strip():
        raise MeasureError(f"measure of {path!r}: provenance= must say how the value is obtained")
    fields = (declared_field(path, kind, source or provenance, who=who, phase=phase), *also)

    def register(function: Callable[[RunView], Any]) -> Callable[[RunView], Any]:
        name = function.__name__
        old = MEASURES.get(name)
        if old is not None and qualname(old) != qualname(function):  # checked before its fields change
            raise MeasureError(f"measure {name!r} is already registered by {qualname(old)}; rename the function")
        unregister_measure(name)  # the same function registered again (a reloaded module) replaces itself
        try:
            declare_fields(fields, by=name)
        except FactsheetError as exc:
            raise MeasureError(f"measure {name!r}: {exc}") from None
        MEASURES.register(Measure(name, function, fields, provenance, status, output))
        return function

    return register


def declared_measure(path: str, kind: str = "str", *, what: str,
                     missing: str = "not declared: scores 0") -> Callable[[RunView], Measured]:
    """Register the measure of a field a person states in ``metrics.trust.declared``.

    The field ``"section/key"`` takes ``metrics.trust.declared.<key>``; where that is not given
    (or, for a text field, empty) the value is missing and the metric reading it scores 0.

    Parameters
    ----------
    path : str
        ``"section/key"`` of the FactSheet field; ``key`` names the declaration and the measure.
    kind : {"str", "number"}
        The field's type; a missing number is NaN.
    what : str
        What is declared, for the measure's docstring (e.g. ``"anonymisation technique"``).
    missing : str
        The provenance reason when nothing is declared.

    Returns
    -------
    callable
        The registered measure ``function(run: RunView) -> Measured``, named ``key``.
    """
    key = path.split("/", 1)[-1]
    source = f"metrics.trust.declared.{key}"

    def declared(run: RunView) -> Measured:
        value = run.declared.get(key)
        given = value is not None if kind == "number" else bool(value)
        if kind == "number" and value is None:
            value = float("nan")
        return Measured({path: value}, reason=None if given else missing)

    declared.__name__ = declared.__qualname__ = key
    declared.__doc__ = f"Return the declared {what} (``{source}``)."
    return measure(path, kind, who="project owner", phase="pre", status="declared", source=source,
                   provenance=source)(declared)


def unregister_measure(name: str) -> None:
    """Remove the measure ``name`` and its fields (for tests and notebooks that register their own).

    Parameters
    ----------
    name : str
        The function's name.
    """
    if name in MEASURES:
        MEASURES.unregister(name)
        undeclare_fields(by=name)


def registered_measures() -> list[Measure]:
    """Every registered measure, the packaged ones first, in registration order.

    Returns
    -------
    list of Measure
    """
    return list(MEASURES.values())
