"""Every client report checked at the server: a bad one is rejected for its round, never fatal.

The schema of a client's report is written once, here (:data:`REPORT_FIELDS` and
:func:`check_reply`); :class:`~fltrust.flower.app.InstrumentedStrategy` (``instrument``) applies
it to every training reply, and :class:`~fltrust.flower.adapter.ObservedStrategy` does when it is
given a :class:`ReportSchema`. A reply that fails any check is **rejected for that round**:

- the client is named (node id, and the client id it claimed when that was an integer) with
  every failed field and why, in one warning line of the log and in the round's record
  (``RoundRecord.rejected``, the ``rejected`` list of a ``rounds.jsonl`` line: ``{"node",
  "client_id", "reasons": [{"field", "reason"}]}``);
- its reply is **withheld from the wrapped strategy**: the app's strategy aggregates exactly the
  accepted replies (in client-id order), followed by the error replies of clients that failed
  (which every Flower strategy skips). What is aggregated and what the notions are computed over
  are therefore the same participants; a rejected client's model never reaches the global model,
  and a malformed update (wrong keys or shapes, NaN) cannot crash the app's aggregation;
- the round's notions, FedSV, the FactSheet and the run's totals are computed over the accepted
  participants only, and a rejected client's training label counts are not recorded.

A rejected round of a client counts as if the client had failed that round (an error reply):
``tests/flower/test_validation.py`` checks that every other client's numbers are then exactly
those of the same run in which the bad client's ClientApp raises.

Client ids: an id must be an integer (an integral float such as ``3.0`` counts) in
``[0, C)``. Ids are bound to nodes for the run: once a node was accepted as client c, another
node claiming c, or that node claiming another id, is rejected (the bound node keeps its id). An
id not bound yet that more than one node claims in a round is rejected for **all** its claimants
(the server cannot tell which is genuine); it is bound in the first round only one node claims it.

Bounds that no honest report exceeds: sample counts at most :data:`MAX_SAMPLES`, bytes at most
:data:`BYTES_FACTOR` times the global model's bytes, ``train_time_s`` at most the time the round
has taken on the server so far (plus :data:`TIME_SLACK_S`). A client can still lie within these
bounds (say, claim 10,000 samples it does not have); the checks make a report consistent and
plausible, not true.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np

from fltrust.core.records import Params
from fltrust.algorithms.aggregation import cast_like
from fltrust.flower.records import CLIENT_ID_KEY, CONFUSION_KEY, LABEL_COUNTS_KEY
from fltrust.settings import show

__all__ = [
    "BYTES_FACTOR", "ClientIds", "CheckedReport", "MAX_SAMPLES", "Problem", "REPORT_FIELDS", "Rejection",
    "ReportRejected", "ReportSchema", "RoundFacts", "TIME_SLACK_S", "check_reply",
]

MAX_SAMPLES = 10**9
"""Most training or validation samples one client may report (a plausibility bound)."""
BYTES_FACTOR = 8
"""``bytes_sent`` / ``bytes_received`` may be at most this many times the global model's bytes."""
TIME_SLACK_S = 1.0
"""``train_time_s`` may exceed the round's time on the server by this much (clock granularity)."""
ACCURACY_TOLERANCE = 1e-9
"""``accuracy`` must equal the confusion matrix's trace / total to this absolute tolerance."""

REPORT_FIELDS: dict[str, tuple[bool, str]] = {
    "num-examples": (True, "samples"),
    "num-batches": (False, "batches"),
    "val_samples": (True, "samples"),
    "reward_accuracy": (True, "share"),
    "reward_loss": (True, "loss"),
    "accuracy": (True, "share"),
    "loss": (True, "loss"),
    "train_loss": (False, "loss or NaN"),
    "train_time_s": (True, "seconds"),
    "bytes_received": (True, "bytes"),
    "bytes_sent": (True, "bytes"),
}
"""The scalar fields of a report (:meth:`~fltrust.flower.client.ClientReport.finish` /
``attach``): key -> (required, kind). Kinds: ``samples`` an integer in ``[1, MAX_SAMPLES]``;
``batches`` an integer in ``[1, num-examples]``; ``share`` a finite number in ``[0, 1]``
(``accuracy`` equal to the confusion matrix's trace / total, ``reward_accuracy`` a multiple of
1 / ``val_samples``); ``loss`` finite and ``>= 0``; ``loss or NaN`` the same or NaN (``attach``
sends NaN when the app reports no training loss); ``seconds`` finite in ``[0, round time +
TIME_SLACK_S]``; ``bytes`` an integer in ``[0, BYTES_FACTOR x model bytes]``. Besides them:
``partition-id`` (optional, see the module docstring), ``confusion`` (required: K x K
non-negative integers flattened row-major, K the model's classes, total ``val_samples``),
``label_counts`` (required when :attr:`ReportSchema.label_counts`: 1 to K non-negative integers
summing to ``num-examples``) and the model's arrays (the keys and shapes of the global model
sent, finite). Other keys are not checked (``instrument`` drops them)."""


@dataclass(frozen=True)
class Problem:
    """One failed check of a report: the field and why (the value shown, bounded in length)."""

    field: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """``{"field": ..., "reason": ...}``."""
        return {"field": self.field, "reason": self.reason}


class ReportRejected(ValueError):
    """A reply failed the report checks; :attr:`problems` lists every failed field."""

    def __init__(self, problems: Sequence[Problem], client_id: int | None = None) -> None:
        self.problems = list(problems)
        self.client_id = client_id
        super().__init__("; ".join(f"{p.field}: {p.reason}" for p in self.problems))


@dataclass(frozen=True)
class Rejection:
    """One reply left out of a round: which node, the client id it claimed (when an integer), why.

    Examples
    --------
    >>> Rejection(1003, 3, (Problem("accuracy", "5.0 must be in [0, 1]"),)).to_json()
    {'node': 1003, 'client_id': 3, 'reasons': [{'field': 'accuracy', 'reason': '5.0 must be in [0, 1]'}]}
    """

    node_id: int
    client_id: int | None
    problems: tuple[Problem, ...]

    def to_json(self) -> dict[str, Any]:
        """The entry of ``RoundRecord.rejected``."""
        return {"node": int(self.node_id), "client_id": self.client_id,
                "reasons": [p.to_json() for p in self.problems]}

    def describe(self) -> str:
        """One line for the log: ``node 1003 (client 3): accuracy: 5.0 must be in [0, 1]; ...``."""
        who = f"node {self.node_id}" + ("" if self.client_id is None else f" (client {self.client_id})")
        return f"{who}: " + "; ".join(f"{p.field}: {p.reason}" for p in self.problems)


@dataclass(frozen=True)
class ReportSchema:
    """What the server knows up front to check a report against.

    Parameters
    ----------
    num_classes : int
        K, the model's classes: the confusion matrix is K x K, the label counts at most K long.
    num_clients : int or None
        C: client ids must lie in ``[0, C)`` (``None``: any non-negative integer).
    label_counts : bool
        The report must carry the training label counts (:func:`fltrust.flower.client_report`'s
        report does; :meth:`~fltrust.flower.client.ClientReport.finish`'s does not).
    max_samples : int
        Most samples a client may report (default :data:`MAX_SAMPLES`).
    bytes_factor : float
        Most bytes a client may report, in global-model sizes (default :data:`BYTES_FACTOR`).
    time_slack_s : float
        Seconds ``train_time_s`` may exceed the round's time on the server (default
        :data:`TIME_SLACK_S`).
    """

    num_classes: int
    num_clients: int | None = None
    label_counts: bool = False
    max_samples: int = MAX_SAMPLES
    bytes_factor: float = BYTES_FACTOR
    time_slack_s: float = TIME_SLACK_S

    def __post_init__(self) -> None:
        if not isinstance(self.num_classes, int) or self.num_classes < 1:
            raise ValueError(f"ReportSchema.num_classes={self.num_classes!r} must be a positive integer")
        if self.num_clients is not None and (not isinstance(self.num_clients, int) or self.num_clients < 1):
            raise ValueError(f"ReportSchema.num_clients={self.num_clients!r} must be a positive integer or None")


@dataclass(frozen=True)
class RoundFacts:
    """What the server knows of the round a reply belongs to.

    Attributes
    ----------
    names : tuple of str
        Keys of the global model's ArrayRecord the clients received.
    reference : Params
        That global model (dtypes and shapes a reply's arrays must match).
    elapsed_s : float
        Seconds since the round's training messages went out (bounds ``train_time_s``).
    """

    names: tuple[str, ...]
    reference: Params = field(repr=False)
    elapsed_s: float

    @property
    def model_bytes(self) -> int:
        """Bytes of the global model."""
        return int(sum(np.asarray(p).nbytes for p in self.reference))


@dataclass
class CheckedReport:
    """A reply that passed every check, in clean Python / numpy values.

    Attributes
    ----------
    client_id : int or None
        The id the report claims (``None``: it claims none; the server numbers the node).
    values : dict
        The report with its scalar fields as ``int`` / ``float`` (label counts removed).
    confusion : numpy.ndarray
        ``(K, K)`` int64.
    label_counts : numpy.ndarray or None
        Training samples per label 0..K'-1 (K' <= K), when the report carries them.
    params : Params
        The reply's model in the global model's key order, dtypes and shapes.
    """

    client_id: int | None
    values: dict[str, Any]
    confusion: np.ndarray
    label_counts: np.ndarray | None
    params: Params = field(repr=False)


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _integer(value: Any) -> int | None:
    """``value`` as an int when it is an integer (or an integral float), else None."""
    if not _is_number(value) or not math.isfinite(float(value)) or float(value) != math.floor(float(value)):
        return None
    return int(value)


def _scalar(key: str, value: Any, kind: str, schema: ReportSchema, facts: RoundFacts,
            checked: Mapping[str, Any]) -> tuple[Any, str | None]:
    """``(clean value, None)`` or ``(None, reason)`` for one scalar field of :data:`REPORT_FIELDS`."""
    if not _is_number(value):
        return None, f"{show(value)} must be a number, not {type(value).__name__}"
    number = float(value)
    if kind in ("samples", "batches", "bytes"):
        whole = _integer(value)
        if whole is None:
            return None, f"{show(value)} must be a whole number"
        high = {"samples": schema.max_samples, "bytes": int(schema.bytes_factor * facts.model_bytes),
                "batches": checked.get("num-examples", schema.max_samples)}[kind]
        low = 0 if kind == "bytes" else 1
        if not low <= whole <= high:
            bound = {"samples": "the plausibility bound", "bytes": f"{schema.bytes_factor:g} x the model's bytes",
                     "batches": "num-examples"}[kind]
            return None, f"{show(value)} must be in [{low}, {high}] ({bound})"
        return whole, None
    if kind == "loss or NaN" and math.isnan(number):
        return number, None
    if not math.isfinite(number):
        return None, f"{show(value)} must be finite"
    if kind == "share" and not 0.0 <= number <= 1.0:
        return None, f"{show(value)} must be in [0, 1]"
    if kind.startswith("loss") and number < 0:
        return None, f"{show(value)} must be >= 0"
    if kind == "seconds":
        high = facts.elapsed_s + schema.time_slack_s
        if not 0.0 <= number <= high:
            return None, f"{show(value)} must be in [0, {high:.1f}] (the round has taken {facts.elapsed_s:.1f} s)"
    return number, None


def _whole_numbers(key: str, values: Mapping[str, Any], length: tuple[int, int],
                   problems: list[Problem]) -> np.ndarray | None:
    """``values[key]``, a list of non-negative whole numbers of a length in ``length`` (checked before
    conversion); None with the problem noted when it is missing or not such a list."""
    if key not in values:
        problems.append(Problem(key, "is missing"))
        return None
    value = values[key]
    if not isinstance(value, (list, tuple)):
        problems.append(Problem(key, f"must be a list of whole numbers, not {type(value).__name__} {show(value)}"))
        return None
    low, high = length
    if not low <= len(value) <= high:
        want = str(low) if low == high else f"{low} to {high}"
        problems.append(Problem(key, f"has {len(value):,} entries; it needs {want}"))
        return None
    if not all(_is_number(v) for v in value):
        bad = next(v for v in value if not _is_number(v))
        problems.append(Problem(key, f"holds {show(bad)} ({type(bad).__name__}); every entry must be a whole number"))
        return None
    array = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(array)) or np.any(array < 0) or np.any(array != np.floor(array)):
        bad = array[~(np.isfinite(array) & (array >= 0) & (array == np.floor(array)))][0]
        problems.append(Problem(key, f"holds {show(float(bad))}; every entry must be a non-negative whole number"))
        return None
    return array


def _arrays(record: Any, facts: RoundFacts, problems: list[Problem]) -> Params | None:
    """The reply's model in the global model's key order, or None with the problems noted."""
    if record is None:
        problems.append(Problem("arrays", "the reply has no ArrayRecord (the trained model)"))
        return None
    keys = list(record.keys())
    missing = [k for k in facts.names if k not in record]
    extra = [k for k in keys if k not in set(facts.names)]
    if missing or extra:
        problems.append(Problem("arrays", f"keys differ from the global model's: missing {show(missing)}, "
                                          f"unexpected {show(extra)}"))
        return None
    params: Params = []
    for name, ref in zip(facts.names, facts.reference):
        try:
            array = np.asarray(record[name].numpy())
        except Exception as exc:  # noqa: BLE001 - an undecodable array is the client's fault
            problems.append(Problem("arrays", f"{name!r} cannot be read ({type(exc).__name__})"))
            return None
        if array.shape != np.shape(ref):
            problems.append(Problem("arrays", f"{name!r} has shape {array.shape}; the global model's is {np.shape(ref)}"))
            return None
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
            problems.append(Problem("arrays", f"{name!r} has dtype {array.dtype}, not a number"))
            return None
        if np.issubdtype(array.dtype, np.inexact) and not np.all(np.isfinite(array)):
            problems.append(Problem("arrays", f"{name!r} holds {int(np.sum(~np.isfinite(array))):,} non-finite values"))
            return None
        params.append(cast_like(np.array(array, copy=True), np.asarray(ref)))
    return params


def check_reply(values: Mapping[str, Any] | None, record: Any, schema: ReportSchema, facts: RoundFacts) -> CheckedReport:
    """Check one client's report and model against :data:`REPORT_FIELDS`; every problem is collected.

    Parameters
    ----------
    values : mapping or None
        The report (the ``"fltrust"`` ConfigRecord or the reply's MetricRecord); ``None`` = the
        reply carries none.
    record : flwr.app.ArrayRecord or None
        The reply's model.
    schema : ReportSchema
        The run's facts (classes, clients, bounds).
    facts : RoundFacts
        The round's facts (global model, elapsed time).

    Returns
    -------
    CheckedReport

    Raises
    ------
    ReportRejected
        Naming every field that failed, and why.
    """
    problems: list[Problem] = []
    if values is None:
        raise ReportRejected([Problem("fltrust", "the reply carries no fltrust report: in the ClientApp call "
                                                 "report = fltrust.flower.client_report(model, train, val, "
                                                 "context=context) before training and return "
                                                 "Message(report.attach(content), reply_to=msg)")])
    claimed = None
    if CLIENT_ID_KEY in values:
        raw = values[CLIENT_ID_KEY]
        claimed = _integer(raw)
        if claimed is None or claimed < 0 or (schema.num_clients is not None and claimed >= schema.num_clients):
            span = "a non-negative integer" if schema.num_clients is None else f"an integer in 0..{schema.num_clients - 1}"
            note = ("" if schema.num_clients is None else f" ({schema.num_clients} SuperNodes were connected at the "
                    "start; pass num_clients= to fltrust.flower.instrument when more join later)")
            problems.append(Problem(CLIENT_ID_KEY, f"{show(raw)} must be {span}{note}"))
            claimed = claimed if claimed is not None and claimed >= 0 else None
    clean: dict[str, Any] = {k: v for k, v in values.items() if k not in REPORT_FIELDS and k != LABEL_COUNTS_KEY}
    if claimed is not None:
        clean[CLIENT_ID_KEY] = claimed
    for key, (required, kind) in REPORT_FIELDS.items():
        if key not in values:
            if required:
                problems.append(Problem(key, "is missing"))
            continue
        value, reason = _scalar(key, values[key], kind, schema, facts, clean)
        if reason is not None:
            problems.append(Problem(key, reason))
        else:
            clean[key] = value
    k = schema.num_classes
    confusion = None
    flat = _whole_numbers(CONFUSION_KEY, values, (k * k, k * k), problems)
    if flat is not None:
        confusion = flat.astype(np.int64).reshape(k, k)
        total = int(confusion.sum())
        if "val_samples" in clean and total != clean["val_samples"]:
            problems.append(Problem(CONFUSION_KEY, f"totals {total:,} samples; val_samples is {clean['val_samples']:,}"))
        elif "accuracy" in clean and total > 0 and abs(np.trace(confusion) / total - clean["accuracy"]) > ACCURACY_TOLERANCE:
            problems.append(Problem("accuracy", f"{show(clean['accuracy'])} is not the confusion matrix's trace / "
                                                f"total = {np.trace(confusion)}/{total}"))
    if "reward_accuracy" in clean and "val_samples" in clean:
        correct = clean["reward_accuracy"] * clean["val_samples"]
        if abs(correct - round(correct)) > 1e-6 * clean["val_samples"]:
            problems.append(Problem("reward_accuracy", f"{show(clean['reward_accuracy'])} is no share of the "
                                                       f"{clean['val_samples']:,} validation samples"))
    counts = None
    if schema.label_counts:
        counts = _whole_numbers(LABEL_COUNTS_KEY, values, (1, k), problems)
        if counts is not None and "num-examples" in clean and int(counts.sum()) != clean["num-examples"]:
            problems.append(Problem(LABEL_COUNTS_KEY, f"sum to {show(float(counts.sum()))}; num-examples is "
                                                      f"{clean['num-examples']:,}"))
            counts = None
    params = _arrays(record, facts, problems)
    if problems or params is None:  # no model without a problem noted
        raise ReportRejected(problems, claimed)
    return CheckedReport(claimed, clean, confusion, counts, params)


class ClientIds:
    """Client ids per round and for the run: unique in a round, bound to one node for the run.

    Examples
    --------
    >>> ids = ClientIds()
    >>> ids.admit(1, [(1000, 0), (1001, 1), (1002, 1)])
    [None, 'client 1 is claimed by nodes 1001, 1002 in this round', 'client 1 is claimed by nodes 1001, 1002 in this round']
    >>> ids.admit(2, [(1002, 0), (1001, 1)])
    ['client 0 is node 1000 (accepted in round 1); node 1002 claims it', None]
    """

    def __init__(self) -> None:
        self.node_of: dict[int, int] = {}
        self.client_of: dict[int, int] = {}
        self.since: dict[int, int] = {}

    def admit(self, server_round: int, claims: Sequence[tuple[int, int]]) -> list[str | None]:
        """Check a round's ``(node, client id)`` claims; accepted ones are bound for the run.

        Parameters
        ----------
        server_round : int
            The round.
        claims : sequence of (int, int)
            Node id and claimed client id of each reply that passed :func:`check_reply`.

        Returns
        -------
        list of str or None
            Per claim: ``None`` (accepted) or why it is rejected.
        """
        nodes_by_id: dict[int, list[int]] = {}
        for node, cid in claims:
            nodes_by_id.setdefault(cid, []).append(node)
        out: list[str | None] = []
        for node, cid in claims:
            if self.node_of.get(cid, node) != node:
                out.append(f"client {cid} is node {self.node_of[cid]} (accepted in round {self.since[cid]}); "
                           f"node {node} claims it")
            elif self.client_of.get(node, cid) != cid:
                out.append(f"node {node} was accepted as client {self.client_of[node]} in round "
                           f"{self.since[self.client_of[node]]}; now it claims client {cid}")
            elif cid not in self.node_of and len(nodes_by_id[cid]) > 1:
                out.append(f"client {cid} is claimed by nodes {', '.join(map(str, nodes_by_id[cid]))} in this round")
            else:
                out.append(None)
        for (node, cid), reason in zip(claims, out):
            if reason is None and cid not in self.node_of:
                self.node_of[cid], self.client_of[node], self.since[cid] = node, cid, server_round
        return out
