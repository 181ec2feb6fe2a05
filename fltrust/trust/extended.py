r"""Extended mode of the trust observer: the 16 taxonomy metrics the prototype left out, and sustainability.

:class:`~fltrust.trust.observer.TrustObserver` delegates here when its settings' mode is
``"extended"`` (definitions ``fltrust/trust/definitions/extended.yaml``, or a user's own). Nothing
here imports an FL engine or an experiment configuration: everything comes from the observer
protocol's records and the run's :class:`~fltrust.trust.inputs.TrustInputs` (what the run states:
strategy, secure aggregation, dataset; and two optional data hooks -- a sampler of client training
rows, the members of the membership-inference attack, and the test split's sensitive attribute).
An fltrust experiment builds them from its config (:func:`fltrust.experiment.trust_inputs`), a
Flower app from its strategy and arguments (:func:`fltrust.flower.instrument`).

=====================  =========================================================  =================
hook                   what                                                       metric(s)
=====================  =========================================================  =================
``start``              CodeCarbon offline tracker starts                          sustainability
``round_end``          every returned client model's loss on the server's         client reputation,
                       reference sample (a seeded sample of the test split);      co-versioning
                       hashes of the model sent out, each returned model and
                       the aggregated model
``run_end``            tracker stops (energy of rounds 0..T); every registered    everything else
                       measure (:mod:`fltrust.trust.measures.registry`; the
                       packaged ones: :mod:`fltrust.trust.measures.taxonomy`)
                       fills its FactSheet fields; a provenance entry for every
                       metric of the definitions
=====================  =========================================================  =================

The observer never spells a field: each measure declares its fields, and a metric's provenance is
that of the measure that declares the metric's first input (the template's metrics:
:func:`~fltrust.trust.measures.taxonomy.template_provenance`). Each FactSheet provenance entry says
``measured``, ``declared``, ``missing`` (a measurement that was switched off or impossible; scores
0) or ``n/a`` with the reason (left out of the means).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from fltrust.core.evaluation import evaluate_many
from fltrust.core.records import Params, RoundRecord, RunInfo, RunSummary
from fltrust.settings import TrustSettings, validate_declarations
from fltrust.trust.factsheet import set_field, set_provenance
from fltrust.trust.inputs import TrustInputs
from fltrust.trust.measures.registry import Measure, Measured, RunView, registered_measures

if TYPE_CHECKING:
    from fltrust.trust.scoring import Definitions

log = logging.getLogger("fltrust")


def sample_client_rows(federation: Any, client_ids: list[int], num_samples: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to ``num_samples`` training rows of the given clients, in the layout each client trained on.

    Rows are drawn uniformly (seeded) from the union of the clients' training rows
    (``federation.train_index``); each chosen row is taken through
    ``federation.client_tensors(cid)``, so NSL-KDD's per-client column layouts are respected.
    Bound to a federation (``functools.partial``), it is :attr:`TrustInputs.member_sampler`.

    Parameters
    ----------
    federation : Federation
        The prepared federation (``train_index``, ``client_tensors``).
    client_ids : list of int
        The clients whose rows are drawn.
    num_samples : int
        How many rows at most.
    seed : int
        Seed of the draw.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        Inputs and labels (empty when the clients hold no rows).
    """
    ids = sorted(int(c) for c in client_ids)
    sizes = np.array([len(federation.train_index[c]) for c in ids], dtype=np.int64)
    total = int(sizes.sum())
    if total == 0 or num_samples < 1:
        empty = federation.x_train[:0]
        return empty, federation.y_train[:0]
    rng = np.random.default_rng([int(seed), 47])
    picks = np.sort(rng.choice(total, size=min(int(num_samples), total), replace=False))
    owner = np.searchsorted(np.cumsum(sizes), picks, side="right")
    offsets = picks - np.concatenate([[0], np.cumsum(sizes)[:-1]])[owner]
    xs, ys = [], []
    for position in np.unique(owner):
        x, y, _, _ = federation.client_tensors(ids[int(position)])
        rows = torch.as_tensor(offsets[owner == position], device=y.device)
        xs.append(x[rows])
        ys.append(y[rows])
    return torch.cat(xs), torch.cat(ys)


def _hash(params: Params | None) -> str | None:
    if params is None:
        return None
    from fltrust.core.params import params_hash

    return params_hash(params)


class ExtendedMetrics:
    """State and computations of the extended mode (one per :class:`TrustObserver`).

    Parameters
    ----------
    settings : TrustSettings
        The observer's settings (``mode="extended"``): sample counts, tolerances, declared values.
    inputs : TrustInputs
        What the run states (strategy, secure aggregation, dataset, the two data hooks).
    model : torch.nn.Module
        Architecture template (never modified).
    x_test, y_test : torch.Tensor
        The test split (server reference sample, evasion, discrimination, non-members).

    Raises
    ------
    ValueError
        The sensitive attribute does not have one value per test row.
    """

    def __init__(self, settings: TrustSettings, inputs: TrustInputs, model: torch.nn.Module, x_test: torch.Tensor,
                 y_test: torch.Tensor) -> None:
        if not isinstance(settings, TrustSettings) or not isinstance(inputs, TrustInputs):
            raise TypeError("ExtendedMetrics(settings: TrustSettings, inputs: TrustInputs, model, x_test, y_test); "
                            f"got {type(settings).__name__} and {type(inputs).__name__}")
        self.trust = settings
        self.inputs = inputs
        self.model = model
        self.x_test, self.y_test = x_test, y_test
        sensitive = inputs.sensitive
        if sensitive is not None and len(sensitive.values) != len(y_test):
            raise ValueError(f"sensitive attribute has {len(sensitive.values)} values for {len(y_test)} test rows")
        self.declared = validate_declarations(settings.declared)
        self.seed = int(inputs.seed)
        rng = np.random.default_rng([self.seed, 53])
        ref = rng.permutation(len(y_test))[: min(len(y_test), int(settings.reference_samples))]
        index = torch.as_tensor(np.sort(ref), device=y_test.device)
        self.x_ref, self.y_ref = x_test[index], y_test[index]
        self.eval_batch_size = max(256, int(inputs.batch_size))
        self.rounds: dict[int, dict[str, Any]] = {}
        self.initial_global: str | None = None
        self.resumed_after: int | None = None
        self.tracker: Any = None
        self.energy: Any = None

    # -- hooks --------------------------------------------------------------------------------
    def start(self, info: RunInfo, fs: dict[str, Any]) -> None:
        """Start the energy tracker (the energy of rounds 0..T).

        Parameters
        ----------
        info : RunInfo
            The run's start facts.
        fs : dict
            The FactSheet (filled at run end).
        """
        from fltrust.trust.measures.sustainability import EnergyTracker

        if self.tracker is None or not self.tracker.running:
            self.tracker = EnergyTracker(self.trust.country_iso_code)
            self.tracker.start()

    def round_end(self, record: RoundRecord) -> dict[str, Any] | None:
        """Measure the reference losses of the returned models and the round's model versions.

        Parameters
        ----------
        record : RoundRecord

        Returns
        -------
        dict or None
            The round's entry (kept for run end and in the round's observation); ``None`` for round 0.
        """
        if record.round == 0:
            self.initial_global = record.server_metrics.get("model_hash") or _hash(record.global_params_after)
            return None
        entry: dict[str, Any] = {}
        if record.client_params and len(record.client_params) == len(record.client_ids):
            losses, _ = evaluate_many(self.model, record.client_params, self.x_ref, self.y_ref,
                                      batch_size=self.eval_batch_size)
            entry["reference_loss"] = [float(v) for v in losses]
            if record.global_params_before is not None:
                before, _ = evaluate_many(self.model, [record.global_params_before], self.x_ref, self.y_ref,
                                          batch_size=self.eval_batch_size)
                entry["global_reference_loss"] = float(before[0])
            entry["versions"] = {
                "global_before": _hash(record.global_params_before),
                "global_after": record.server_metrics.get("model_hash") or _hash(record.global_params_after),
                "local": [_hash(p) for p in record.client_params],
                "num_participants": int(len(record.client_ids)),
            }
        entry["client_ids"] = [int(c) for c in record.client_ids]
        self.rounds[int(record.round)] = entry
        return entry

    def state_dict(self) -> dict[str, Any]:
        """Return the per-round state so far (JSON-serialisable; the observer's checkpoint).

        Returns
        -------
        dict
        """
        return {"rounds": {str(k): v for k, v in self.rounds.items()}, "initial_global": self.initial_global}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` after a resume.

        Parameters
        ----------
        state : mapping
        """
        self.rounds = {int(k): dict(v) for k, v in state.get("rounds", {}).items()}
        self.initial_global = state.get("initial_global")
        self.resumed_after = max(self.rounds) if self.rounds else 0

    # -- run end ------------------------------------------------------------------------------
    def stop_energy(self) -> None:
        """Stop the energy tracker (called first thing at the end of the run)."""
        if self.tracker is not None and self.tracker.running:
            self.energy = self.tracker.stop()

    def run_end(self, summary: RunSummary, model: torch.nn.Module, fs: dict[str, Any], run_folder: Path | None, *,
                definitions: Definitions | None = None, client_accuracy: Any = ()) -> dict[str, Any]:
        """Run every registered measure, fill its fields and every metric's provenance entry.

        Parameters
        ----------
        summary : RunSummary
            The finished run.
        model : torch.nn.Module
            The final global model (an evaluation copy).
        fs : dict
            The FactSheet (filled in place).
        run_folder : Path or None
            Where figures go (``None`` = none).
        definitions : Definitions or None
            The metric tree being scored (``None`` = the settings' file, or ``extended.yaml``).
        client_accuracy : array-like
            Per-client accuracy of the global model, as the performance fields use it.

        Returns
        -------
        dict
            The measures' outputs (membership inference, evasion, reliability, ...), by their
            ``output`` keys.
        """
        from fltrust.trust.scoring import load_definitions

        self.stop_energy()
        tree = definitions if definitions is not None else load_definitions(self.trust.metrics_file, mode="extended")
        view = RunView(summary=summary, model=model, factsheet=fs, settings=self.trust, inputs=self.inputs,
                       declared=self.declared, x_test=self.x_test, y_test=self.y_test, x_ref=self.x_ref,
                       y_ref=self.y_ref, client_accuracy=np.asarray(client_accuracy, dtype=float), seed=self.seed,
                       rounds=self.rounds, initial_global=self.initial_global, energy=self.energy,
                       resumed_after=self.resumed_after, run_folder=run_folder)
        out: dict[str, Any] = {}
        results: dict[str, tuple[Measure, Measured]] = {}
        for entry in registered_measures():
            try:
                result = entry.run(view)
            except Exception as exc:
                exc.add_note(f"in the trust measure {entry.name!r} ({entry.function.__module__})")
                raise
            for path, value in result.values.items():
                set_field(fs, path, value)
            for path in entry.paths:
                results[path] = (entry, result)
            if entry.output is not None and result.output is not None:
                key, _, sub = entry.output.partition("/")
                if sub:
                    out.setdefault(key, {})[sub] = result.output
                else:
                    out[key] = result.output
        self._write_provenance(view, fs, tree, results)
        return out

    def _write_provenance(self, view: RunView, fs: dict[str, Any], tree: Definitions,
                          results: Mapping[str, tuple[Measure, Measured]]) -> None:
        """One entry per metric: from the measure that declares its first input, else the template's table."""
        from fltrust.trust.measures.taxonomy import template_provenance

        metrics = {f"{p.name}/{m.name}": (f"{p.name}/{n.name}/{m.name}", m)  # pillar/metric -> (path, definition)
                   for p in tree.pillars for n in p.notions for m in n.metrics}
        template = template_provenance(view, {key: metric.score_map for key, (_, metric) in metrics.items()})
        for key, (path, metric) in metrics.items():
            first = metric.inputs[0]
            if first in results:
                measure, result = results[first]  # a result of Measure.run: its status and method resolved
                set_provenance(fs, path, result.status or measure.status, result.method or measure.provenance,
                               result.reason, **result.details)
            elif key in template:
                status, method, reason = template[key]
                set_provenance(fs, path, status, method, reason)
