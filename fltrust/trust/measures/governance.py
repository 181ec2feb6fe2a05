r"""Accountability and federation-management checks, and the declared metrics.

FederatedTrust's taxonomy has metrics about *how the federation is run* that the prototype left
out because its simulation had none of it (paper Sec. 5.2; trust spec 6; docs/references.md#trust-6). Where the kit
keeps the evidence, it is checked here (measured); where only a person can say, the value is declared
in the configuration (``metrics.trust.declared``) and scored from a small published map.

Measured
--------
- **Algorithmic auditing** (paper Sec. 3.5, "Monitoring"): every round's global model is hashed
  into a chain (``server_metrics["model_hash"]``, ``["chain_hash"]``,
  ``chain_k = sha256(chain_{k-1} + model_hash_k)``, written by the run recorder);
  :func:`verify_model_chain` recomputes the chain and checks that the final model is the last
  link. Score 1 if the chain is complete and verified, else 0.
- **Model co-versioning** (paper Sec. 3.6, "Model management": a registry that maps local model
  versions to the global model they were trained from): the trust observer hashes, every round,
  the global model sent out, each participant's returned model and the aggregated model.
  :func:`co_versioning_coverage` = share of training rounds whose mapping is complete and
  consistent (the model sent out in round k is the one aggregated in round k - 1).
- **Client registry** (paper Sec. 3.6: device id, connection status, computation power):
  :func:`coverage` over :data:`REGISTRY_ITEMS`, the per-client facts the run record keeps.
- **Visualisation** (paper Sec. 3.4, a lifecycle dashboard "which clients participated in which
  round and the current status of the model"): :func:`coverage` over
  :data:`VISUALISATION_ITEMS`.

Declared (:data:`fltrust.settings.DECLARATIONS`)
-------------------------------------------------
``testing_coverage`` (a fraction, e.g. the FL system's line coverage), ``anonymisation``,
``simplification``, ``model_replacement`` and ``encryption`` (when the configuration's
``privacy.secure_aggregation`` does not set it). Undeclared values are missing and score 0; the
report lists them as "declared: not declared". :class:`~fltrust.settings.TrustSettings` checks them
(:func:`fltrust.settings.validate_declarations`, re-exported here with the table and
:class:`~fltrust.settings.DeclarationError`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

# the declared values are checked where the settings check their own fields
from fltrust.settings import DECLARATIONS, DeclarationError, validate_declarations

__all__ = [
    "DECLARATIONS",
    "REGISTRY_ITEMS",
    "VISUALISATION_ITEMS",
    "ChainAudit",
    "DeclarationError",
    "co_versioning_coverage",
    "coverage",
    "validate_declarations",
    "verify_model_chain",
]


REGISTRY_ITEMS = (
    "client_id",
    "data_size",
    "label_distribution",
    "participation_per_round",
    "computation_time",
    "traffic_bytes",
    "connection_status",
)
"""Per-client facts of the paper's client registry; ``connection_status`` = drop-out / failure /
time-out counters reported by the engine."""

VISUALISATION_ITEMS = ("participation_per_round", "model_status_per_round", "client_registry", "dashboard_figure")
"""What the paper's lifecycle dashboard shows, and whether a rendered figure exists."""


def coverage(items: Mapping[str, bool], wanted: Sequence[str]) -> float:
    """Share of the ``wanted`` items that are ``True`` in ``items``.

    Parameters
    ----------
    items : mapping of str to bool
        What the run provides (absent = no).
    wanted : sequence of str
        The items that count (at least one).

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> coverage({"a": True, "b": False, "c": True}, ("a", "b", "c", "d"))
    0.5
    """
    if not wanted:
        raise ValueError("coverage needs at least one wanted item")
    return sum(1.0 for key in wanted if items.get(key)) / len(wanted)


@dataclass(frozen=True)
class ChainAudit:
    """Outcome of :func:`verify_model_chain`.

    Attributes
    ----------
    verified : bool
    rounds : int
        Links checked.
    head : str or None
        Last chain hash.
    detail : str
        What was checked, or where the chain breaks.
    """

    verified: bool
    rounds: int
    head: str | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name (:func:`dataclasses.asdict`).
        """
        return asdict(self)


def verify_model_chain(
    model_hashes: Sequence[str | None],
    chain_hashes: Sequence[str | None],
    *,
    final_model_hash: str | None = None,
) -> ChainAudit:
    """Recompute the run's model hash chain (round 0 first) and check the final model.

    Parameters
    ----------
    model_hashes, chain_hashes : sequence of str or None
        ``server_metrics["model_hash"]`` and ``["chain_hash"]`` of every round, in order.
    final_model_hash : str or None
        SHA-256 of the final model's parameters (``fltrust.core.params.params_hash``); checked against
        the last round's model hash when given.

    Returns
    -------
    ChainAudit
    """
    from fltrust.core.params import chain_hash

    if len(model_hashes) != len(chain_hashes):
        raise ValueError("model_hashes and chain_hashes must be equally long")
    if not model_hashes:
        return ChainAudit(False, 0, None, "no rounds recorded")
    previous = ""
    for index, (model, chained) in enumerate(zip(model_hashes, chain_hashes)):
        if not model or not chained:
            return ChainAudit(False, index, None, f"round {index}: no model hash recorded (the recorder keeps no chain)")
        if chain_hash(previous, model) != chained:
            return ChainAudit(False, index, None, f"round {index}: chain broken")
        previous = chained
    if final_model_hash is not None and final_model_hash != model_hashes[-1]:
        return ChainAudit(False, len(model_hashes), previous, "the final model is not the last round's model")
    extra = " and the final model is its last link" if final_model_hash is not None else ""
    return ChainAudit(True, len(model_hashes), previous, f"chain of {len(model_hashes)} rounds verified{extra}")


def co_versioning_coverage(entries: Sequence[Mapping[str, Any]], initial_global: str | None = None) -> float:
    """Share of training rounds with a complete, consistent local -> global version map.

    Parameters
    ----------
    entries : sequence of mapping
        One per training round, in order: ``{"global_before": hash, "global_after": hash,
        "local": [hash per participant], "num_participants": m}``.
    initial_global : str or None
        Hash of the round-0 model (the first round's ``global_before`` must equal it when given).

    Returns
    -------
    float
        In [0, 1]; NaN when there is no training round.

    Examples
    --------
    >>> e = [{"global_before": "g0", "global_after": "g1", "local": ["a", "b"], "num_participants": 2},
    ...      {"global_before": "g1", "global_after": "g2", "local": ["c"], "num_participants": 2}]
    >>> co_versioning_coverage(e, "g0")
    0.5
    """
    if not entries:
        return float("nan")
    previous = initial_global
    good = 0
    for entry in entries:
        local = list(entry.get("local") or [])
        complete = (
            bool(entry.get("global_before")) and bool(entry.get("global_after"))
            and len(local) == int(entry.get("num_participants", -1)) and all(local)
        )
        consistent = previous is None or entry.get("global_before") == previous
        good += int(complete and consistent)
        previous = entry.get("global_after")
    return good / len(entries)


def plot_lifecycle_dashboard(summary: Any, ax: Sequence[Any] | None = None) -> tuple[Any, Any]:
    """Build the paper's lifecycle dashboard for one run: who took part when, and how the model did.

    Left: clients x rounds participation matrix. Right: the global model's accuracy on the
    server's auxiliary set per round (``server_metrics["aux_accuracy"]``) and the participants'
    mean accuracy (``client_metrics["accuracy"]``).

    Parameters
    ----------
    summary : RunSummary
    ax : pair of matplotlib Axes, optional

    Returns
    -------
    fig, axes
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1.3, 1]})
    else:
        axes = tuple(ax)
        fig = axes[0].figure
    rounds = [r for r in summary.rounds if r.round >= 1]
    matrix = np.zeros((summary.info.num_clients, max(1, len(rounds))))
    for column, record in enumerate(rounds):
        matrix[np.asarray(record.client_ids, dtype=int), column] = 1
    axes[0].imshow(matrix, aspect="auto", interpolation="nearest", cmap="Greys", vmin=0, vmax=1)
    axes[0].set_xlabel("round")
    axes[0].set_ylabel("client")
    axes[0].set_title("participation")
    xs = [r.round for r in summary.rounds if "aux_accuracy" in r.server_metrics]
    axes[1].plot(xs, [r.server_metrics["aux_accuracy"] for r in summary.rounds if "aux_accuracy" in r.server_metrics],
                 marker="o", label="global model (server aux set)")
    means = [(r.round, float(np.mean(r.client_metrics["accuracy"]))) for r in rounds if "accuracy" in r.client_metrics]
    if means:
        axes[1].plot(*zip(*means), marker=".", linestyle="--", label="participants (after local training)")
    axes[1].set_xlabel("round")
    axes[1].set_ylabel("accuracy")
    axes[1].set_ylim(0, 1.05)
    axes[1].set_title("model status")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return fig, axes


def write_dashboard(summary: Any, path: Any) -> bool:
    """Write :func:`plot_lifecycle_dashboard` to ``path`` (PNG, atomically); ``True`` when written."""
    import matplotlib.pyplot as plt

    from fltrust.core.io import atomic_write

    fig, _ = plot_lifecycle_dashboard(summary)
    try:
        atomic_write(path, lambda stream: fig.savefig(stream, format="png", dpi=100))
    finally:
        plt.close(fig)
    return True
