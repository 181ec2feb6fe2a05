"""Studies that measure a Table 3 miss: many runs of its condition, one JSON per study.

A study is a list of :class:`~fltrust.repro.fairness.run.Variant` runs (condition + overrides +
rounds + repeat) in the order they run, with named groups of them that the report summarises.
:data:`STUDIES` holds the studies of ``misses.yaml`` in priority order (the queue's order):

- ``"repeats"`` (:func:`repeats_study`): more repeats of a condition (seeds 3-5), with the Table 3
  config unchanged, so that they lie beside the committed repeats 0-2 (same config hash); the
  Table 3 cell stays repeats 0-2.
- ``"draws"`` (:func:`draw_study`): the partition-draw study. Group ``draws``: repeat 0 (seed 0)
  with ``partition.seed`` = 0..N-1, one run per draw: the run seed is fixed, so only the client
  data changes (the pooled redraw, the Dirichlet draw, the validation splits; see
  :func:`fltrust.federation.prepare_federation`). Group ``shared``: the authors' protocol, one
  draw (``partition.seed`` = ``shared_seed``) shared by repeats 0-2, which then differ only in
  model initialisation, client sampling and batch order (fairness spec 4, docs/references.md#fairness-4). Its repeat 0
  is the draw group's run of that seed (one run, one run id).
- ``"aux_size"`` (:func:`aux_size_study`): conditions rerun with another aux set size
  (``partition.aux_max_samples``), repeats 0-2, against the committed runs of the same seeds.

:func:`run_study` runs a study's variants one after another and rewrites
``experiments/<label>.json`` after each run (:func:`study_path`; run folders under
``experiments/runs``): ``runs`` maps each run id to the :func:`~fltrust.repro.fairness.run.condition_result`
of that one run plus its ``variant``. A run whose run id the file holds is skipped, and
:func:`~fltrust.experiment.run_experiment` reloads a complete run folder, so a killed queue
resumes where it stopped. :func:`estimate` prices the runs not yet done from the committed
results' ``seconds_per_run``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fltrust.names import Device
from fltrust.repro.fairness.run import (
    EXPERIMENTS_DIR,
    REPEAT_QUANTITIES,
    RESULT_SCHEMA,
    Variant,
    condition_result,
    repeat_window_values,
    write_result,
)
from fltrust.repro.results import Each, load_result_files

STUDY_KINDS = ("draws", "repeats", "aux_size")
"""What a study measures (:class:`Study`), each with its section in RESULTS.md."""

STUDY_KEYS = ("label", "kind", "purpose", "runs")
"""Keys every study file holds (:func:`run_study`)."""

STUDY_SCHEMA = {
    "label": str,
    "kind": lambda v: None if v in STUDY_KINDS else f"must be one of {list(STUDY_KINDS)}",
    "purpose": str,
    "runs": Each({**RESULT_SCHEMA, "variant": dict}),
}
"""What :func:`read_study` checks: every run is a one-run condition result with its variant."""

RUN_SCRIPT = "papers_repro/fairness_analytics/experiments/run.py"
"""The script that runs the experiments and studies (``--only <label>``, ``--queue``, ``--estimate``)."""

TRAIN_PASS_COST = 3.0
"""Cost of training on one sample in forward passes (forward + backward), for :func:`aux_cost_factor`."""


@dataclass(frozen=True)
class Study:
    """Runs that measure one miss (or one cause across conditions), written to one file.

    Attributes
    ----------
    label : str
        File stem under ``experiments/`` and the name ``--only`` takes.
    kind : str
        One of :data:`STUDY_KINDS`.
    purpose : str
        The question the study answers (printed in RESULTS.md).
    variants : tuple of Variant
        Every run, in the order they run (no duplicates).
    groups : mapping of str to tuple of Variant
        The runs the report summarises together (e.g. ``draws``, ``shared``); each run is one of ``variants``.
    conditions : tuple of str
        The Table 3 conditions the study measures.
    params : mapping
        Kind-specific settings the report reads (draws: ``partition_seeds``, ``shared_seed``;
        aux_size: ``aux_samples``).
    """

    label: str
    kind: str
    purpose: str
    variants: tuple[Variant, ...]
    groups: Mapping[str, tuple[Variant, ...]]
    conditions: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in STUDY_KINDS:
            raise ValueError(f"study {self.label}: kind {self.kind!r} is not one of {list(STUDY_KINDS)}")
        listed = set(map(_key, self.variants))
        if len(listed) != len(self.variants):
            raise ValueError(f"study {self.label}: a variant is listed twice")
        for name, members in self.groups.items():
            if not set(map(_key, members)) <= listed:
                raise ValueError(f"study {self.label}: group {name} holds a run that is not among its variants")

    @property
    def command(self) -> str:
        """The command that runs (or resumes) this study alone."""
        return f"python {RUN_SCRIPT} --only {self.label}"


def _key(variant: Variant) -> tuple[Any, ...]:
    return (variant.condition, tuple(sorted(variant.overrides.items())), variant.rounds, variant.repeat)


def draw_study(
    condition: str,
    *,
    draws: int = 10,
    shared_seed: int = 0,
    shared_repeats: int = 3,
    overrides: Mapping[str, Any] | None = None,
    rounds: int | None = None,
    label: str | None = None,
) -> Study:
    """The partition-draw study of ``condition`` (kind ``"draws"``, see the module docstring).

    Parameters
    ----------
    condition : str
        A Table 3 condition.
    draws : int
        Runs of group ``draws``: repeat 0 with ``partition.seed`` = 0..draws-1.
    shared_seed : int
        The ``partition.seed`` that group ``shared`` (repeats 0..shared_repeats-1) shares. Fixed
        before any run (0: the draw group's first draw), never chosen by outcome.
    shared_repeats : int
        Repeats of group ``shared``.
    overrides : mapping, optional
        Further overrides of every run (tests: a tiny scale).
    rounds : int, optional
        Server rounds of every run (default the condition's).
    label : str, optional
        Default ``<condition>-draws``.

    Returns
    -------
    Study

    Examples
    --------
    >>> s = draw_study("fedavg_cifar10_10c_niid", draws=3, shared_seed=0)
    >>> [(v.overrides["partition.seed"], v.repeat) for v in s.variants]
    [(0, 0), (1, 0), (2, 0), (0, 1), (0, 2)]
    >>> len(s.groups["draws"]), len(s.groups["shared"])
    (3, 3)
    """
    extra = dict(overrides or {})
    group_draws = tuple(Variant(condition, {**extra, "partition.seed": d}, rounds, 0) for d in range(draws))
    shared = tuple(Variant(condition, {**extra, "partition.seed": shared_seed}, rounds, r) for r in range(shared_repeats))
    return Study(
        label=label or f"{condition}-draws",
        kind="draws",
        purpose=(f"One run per partition draw (partition.seed 0-{draws - 1}, seed 0), and the authors' protocol, one "
                 f"draw (partition.seed {shared_seed}) shared by seeds 0-{shared_repeats - 1}: where does the paper's "
                 "value fall among the draws' F_T?"),
        variants=tuple({_key(v): v for v in group_draws + shared}.values()),  # each run once (equal keys: equal runs)
        groups={"draws": group_draws, "shared": shared},
        conditions=(condition,),
        params={"partition_seeds": list(range(draws)), "shared_seed": shared_seed},
    )


def repeats_study(condition: str, repeats: Sequence[int] = (3, 4, 5), *, label: str | None = None) -> Study:
    """More repeats of ``condition``, its Table 3 config unchanged (kind ``"repeats"``).

    Examples
    --------
    >>> s = repeats_study("qfedavg_femnist_205c_iid")
    >>> s.label, [v.repeat for v in s.variants], s.variants[0].overrides
    ('qfedavg_femnist_205c_iid-repeats', [3, 4, 5], {})
    """
    variants = tuple(Variant(condition, {}, None, r) for r in repeats)
    return Study(
        label=label or f"{condition}-repeats",
        kind="repeats",
        purpose=(f"Seeds {', '.join(map(str, repeats))} beside the committed 0-2 (the same config): does the "
                 f"paper's value fall inside the spread of {len(repeats) + 3} repeats?"),
        variants=variants,
        groups={"repeats": variants},
        conditions=(condition,),
    )


def aux_size_study(
    conditions: Sequence[str], aux_samples: int, *, repeats: int = 3, label: str, purpose: str,
) -> Study:
    """``conditions`` with ``partition.aux_max_samples`` = ``aux_samples``, repeats 0..repeats-1
    (kind ``"aux_size"``); runs ordered by repeat, then condition, so that every condition has a
    paired repeat early. One group per condition.

    Examples
    --------
    >>> s = aux_size_study(["fedavg_femnist_205c_niid", "ditto_femnist_205c_niid"], 4654, repeats=2,
    ...                    label="x", purpose="y")
    >>> [(v.condition.split("_")[0], v.repeat) for v in s.variants]
    [('fedavg', 0), ('ditto', 0), ('fedavg', 1), ('ditto', 1)]
    """
    def variant(condition: str, repeat: int) -> Variant:
        return Variant(condition, {"partition.aux_max_samples": aux_samples}, None, repeat)

    return Study(
        label=label,
        kind="aux_size",
        purpose=purpose,
        variants=tuple(variant(c, r) for r in range(repeats) for c in conditions),
        groups={c: tuple(variant(c, r) for r in range(repeats)) for c in conditions},
        conditions=tuple(conditions),
        params={"aux_samples": aux_samples},
    )


FEMNIST_AUX_SAMPLES = 4654
"""|D| of the paper's FEMNIST setup (spec 6.6, docs/references.md#fairness-6-6: 4,654 samples from the writers not
selected; the authors' iid builder in fact drew 46,873 from the client pool, and their niid builder is missing).
Here D is drawn from the LEAF test rows of the 311 local writers (4,883), as in the Table 3 configs,
which cap it at 500: the size changes, the source does not."""

STUDIES: tuple[Study, ...] = (
    repeats_study("qfedavg_femnist_205c_iid"),
    draw_study("fedavg_cifar10_10c_niid"),
    draw_study("ditto_cifar10_10c_niid"),
    aux_size_study(
        ("fedavg_femnist_205c_niid", "qfedavg_femnist_205c_niid", "ditto_femnist_205c_niid"), FEMNIST_AUX_SAMPLES,
        label="femnist_205c_niid-aux4654",
        purpose=(f"The paper's aux set size, D 500 -> {FEMNIST_AUX_SAMPLES:,} (partition.aux_max_samples, of the "
                 "4,883 LEAF test rows), seeds 0-2 as the committed runs: does |D| move F_T?"),
    ),
)
"""The studies of ``misses.yaml``, in the order ``run.py --queue`` runs them."""


def study_by_label(label: str, studies: Sequence[Study] = STUDIES) -> Study:
    """The study named ``label``; a one-line error naming the known labels otherwise."""
    for study in studies:
        if study.label == label:
            return study
    raise KeyError(f"no study {label!r}; known: {[s.label for s in studies]}")


def study_path(study: Study, out_dir: str | Path = EXPERIMENTS_DIR) -> Path:
    """``out_dir/<label>.json``."""
    return Path(out_dir) / f"{study.label}.json"


def read_study(path: str | Path) -> dict[str, Any] | None:
    """A study file (:data:`STUDY_SCHEMA` checked), or None when it does not exist yet.

    Raises
    ------
    ResultsError
        If the file is not valid JSON or a field is refused (the message names file and field).
    """
    path = Path(path)
    if not path.is_file():
        return None
    return load_result_files(path.parent, path.name, STUDY_KEYS, "fltrust.repro.fairness.studies.run_study",
                             STUDY_SCHEMA)[0]


def load_studies(out_dir: str | Path = EXPERIMENTS_DIR, studies: Sequence[Study] = STUDIES) -> dict[str, dict | None]:
    """Every study's file under ``out_dir`` by label (None: not run yet)."""
    return {s.label: read_study(study_path(s, out_dir)) for s in studies}


def planned_run_id(variant: Variant) -> str:
    """The run id the variant's current config gives (the key of its entry in the study file)."""
    return variant.config().run_id()


def stored_run(data: dict[str, Any] | None, run_id: str) -> dict[str, Any] | None:
    """The entry of ``run_id`` in a study file (a synthetic stand-in's run id carries ``-synthetic``); None if absent."""
    runs = ((data or {}).get("runs") or {}).items()
    return next((entry for key, entry in runs if key.replace("-synthetic", "") == run_id), None)


def study_runs(study: Study, data: dict[str, Any] | None,
               group: str | None = None) -> list[tuple[Variant, dict[str, Any] | None]]:
    """Each planned run (of ``group``, default all) with its stored result (None: not run yet, or
    run under another config)."""
    if group is not None and group not in study.groups:
        raise KeyError(f"study {study.label} has no group {group!r}; its groups: {list(study.groups)}")
    variants = study.variants if group is None else study.groups[group]
    return [(v, stored_run(data, planned_run_id(v))) for v in variants]


def run_study(
    study: Study,
    *,
    out_dir: str | Path = EXPERIMENTS_DIR,
    device: Device = "auto",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run every variant of ``study`` not yet in its file, rewriting the file after each run.

    Parameters
    ----------
    study : Study
    out_dir : str or Path
        Where ``<label>.json`` goes (run folders under ``out_dir/runs``).
    device : str
        ``run.device`` (``auto``, ``cpu``, ``cuda``).
    log : callable
        Receives one line per run (done or skipped).

    Returns
    -------
    dict
        The study file's content.
    """
    out_dir = Path(out_dir)
    path = study_path(study, out_dir)
    data = read_study(path) or {"label": study.label, "kind": study.kind, "purpose": study.purpose, "runs": {}}
    data.update(label=study.label, kind=study.kind, purpose=study.purpose)
    for i, variant in enumerate(study.variants, start=1):
        run_id = planned_run_id(variant)
        where = f"{study.label} [{i}/{len(study.variants)}] {run_id}"
        if stored_run(data, run_id) is not None:
            log(f"{where}: done before, skipped")
            continue
        record = variant.run(out_dir / "runs", device=device)
        entry = condition_result(variant.condition, [record], quick=False)
        entry["variant"] = variant.describe()
        data["runs"][record.run_id] = entry
        write_result(path, data)
        data = read_study(path) or data  # as stored (plain JSON)
        log(f"{where}: F_T {entry['table3']['F_T']:.3f} ({record.summary.get('wall_time_s') or 0:.0f} s)")
    return data


def run_values(entry: dict[str, Any]) -> dict[str, Any]:
    """The :data:`~fltrust.repro.fairness.run.REPEAT_QUANTITIES` of a one-run entry, as scalars."""
    return {k: (v[0] if v else None) for k, v in repeat_window_values(entry).items()}


def group_values(study: Study, data: dict[str, Any] | None, group: str) -> dict[str, list[Any]]:
    """Per quantity, the values of a group's runs in group order (None where a run is not done).

    The per-repeat numbers ``misses.yaml`` quotes as ``<label>:<group>/<quantity>``.
    """
    runs = [run_values(entry) if entry is not None else {} for _, entry in study_runs(study, data, group)]
    return {key: [values.get(key) for values in runs] for key in REPEAT_QUANTITIES}


@dataclass(frozen=True)
class Distribution:
    """Summary of values (e.g. F_T over partition draws) and where a reference value falls.

    ``q1``, ``median``, ``q3`` are numpy's linear-interpolation percentiles; ``std`` has ddof 1
    (NaN for one value); ``percentile`` is the reference's mid-rank percentile,
    100 (below + equal / 2) / n.
    """

    n: int
    min: float
    q1: float
    median: float
    q3: float
    max: float
    mean: float
    std: float
    reference: float | None
    below: int | None
    percentile: float | None


def distribution(values: Sequence[float | None], reference: float | None = None) -> Distribution:
    """:class:`Distribution` of the finite ``values`` (None and NaN left out).

    Examples
    --------
    >>> d = distribution([0.6, 0.5, 0.7, 0.55], reference=0.49)
    >>> d.n, d.min, d.median, d.max, d.below, d.percentile
    (4, 0.5, 0.575, 0.7, 0, 0.0)
    >>> distribution([0.5, 0.6], reference=0.6).percentile
    75.0
    """
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        raise ValueError("distribution of no values")
    q1, median, q3 = (float(x) for x in np.percentile(v, [25, 50, 75]))
    below = percentile = None
    if reference is not None:
        below = int(np.sum(v < reference))
        equal = int(np.sum(np.isclose(v, reference, rtol=0, atol=1e-12)))
        percentile = 100.0 * (below + equal / 2) / v.size
    return Distribution(
        n=int(v.size), min=float(v.min()), q1=q1, median=median, q3=q3, max=float(v.max()), mean=float(v.mean()),
        std=float(v.std(ddof=1)) if v.size > 1 else math.nan, reference=reference, below=below, percentile=percentile,
    )


# -- cost ---------------------------------------------------------------------------------------


def _scale(result: dict[str, Any]) -> dict[str, Any]:
    """Repeat 0's data scale of a condition result (``scale_per_repeat``, or the older ``scale``)."""
    return (result.get("scale_per_repeat") or [result.get("scale") or {}])[0] or {}


def aux_cost_factor(variant: Variant, result: dict[str, Any]) -> float:
    """How much longer a run gets when its aux set D changes size, in sample passes per round.

    A round trains ``m`` participants for ``E`` local epochs on ``n`` samples each (Ditto: plus its
    personal epochs), :data:`TRAIN_PASS_COST` passes per sample, and evaluates ``2^m - 1``
    coalition models and the global model on D (exact FedSV, ``m`` = 5): ``2^m |D|`` passes. With
    ``n`` the median training samples per client and the old |D| from the committed result's data
    scale, and the new |D| = min(``partition.aux_max_samples``, ``aux_fraction`` x test split), the
    factor is (train + 2^m |D_new|) / (train + 2^m |D_old|); 1 when the result has no data scale.
    """
    scale = _scale(result)
    cfg = variant.config()
    n_train = (scale.get("train_per_client") or {}).get("median")
    old, n_test = scale.get("aux_samples"), scale.get("source_test_samples")
    if not n_train or not old or not n_test:
        return 1.0
    new = math.ceil(cfg.partition.aux_fraction * n_test)
    if cfg.partition.aux_max_samples is not None:
        new = min(new, cfg.partition.aux_max_samples)
    m = cfg.clients_per_round()
    epochs = cfg.training.local_epochs + (cfg.strategy.ditto_epochs if cfg.strategy.name == "ditto" else 0)
    train = m * epochs * n_train * TRAIN_PASS_COST
    return (train + 2**m * new) / (train + 2**m * old)


def run_minutes(variant: Variant, results: Mapping[str, dict[str, Any]]) -> float | None:
    """Estimated minutes of one run on this CPU: the mean ``seconds_per_run`` of the committed result
    of its condition, times ``rounds / 30`` and :func:`aux_cost_factor` for an aux-size override.
    None when the condition has no timed result."""
    result = results.get(variant.condition)
    seconds = [] if result is None else [s for s in result.get("seconds_per_run") or [] if s is not None]
    if result is None or not seconds:
        return None
    minutes = float(np.mean(seconds)) / 60 * ((variant.rounds or result["rounds"]) / result["rounds"])
    if "partition.aux_max_samples" in variant.overrides:
        minutes *= aux_cost_factor(variant, result)
    return minutes


@dataclass(frozen=True)
class Estimate:
    """A study's cost on this CPU: runs planned and left, minutes per run left (mean), minutes left.
    ``minutes_left`` is None when some run left has no timed committed result."""

    label: str
    runs: int
    runs_left: int
    minutes_per_run: float | None
    minutes_left: float | None

    def text(self) -> str:
        """``N runs x M min`` (the runs left), or ``nothing`` when every run is done."""
        if self.runs_left == 0:
            return "nothing"
        per_run = "unknown" if self.minutes_per_run is None else f"{self.minutes_per_run:.0f}"
        return f"{self.runs_left} run{'' if self.runs_left == 1 else 's'} x {per_run} min"


def estimate(study: Study, results: Sequence[dict[str, Any]], data: dict[str, Any] | None = None) -> Estimate:
    """:class:`Estimate` of the runs of ``study`` not in ``data`` (its file), priced by :func:`run_minutes`
    from the faithful condition ``results``."""
    faithful = {r["condition"]: r for r in results if r["mode"] == "faithful" and not r["quick"]}
    left = [v for v, entry in study_runs(study, data) if entry is None]
    minutes = [run_minutes(v, faithful) for v in left]
    known = [m for m in minutes if m is not None]
    return Estimate(
        label=study.label, runs=len(study.variants), runs_left=len(left),
        minutes_per_run=float(np.mean(known)) if known else None,
        minutes_left=float(sum(known)) if len(known) == len(minutes) else None,
    )


__all__ = [
    "FEMNIST_AUX_SAMPLES",
    "RUN_SCRIPT",
    "STUDIES",
    "STUDY_KINDS",
    "STUDY_KEYS",
    "STUDY_SCHEMA",
    "TRAIN_PASS_COST",
    "Distribution",
    "Estimate",
    "Study",
    "aux_cost_factor",
    "aux_size_study",
    "distribution",
    "draw_study",
    "estimate",
    "group_values",
    "load_studies",
    "planned_run_id",
    "read_study",
    "repeats_study",
    "run_minutes",
    "run_study",
    "run_values",
    "study_by_label",
    "study_path",
    "stored_run",
    "study_runs",
]
