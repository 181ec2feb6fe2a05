"""Metric definitions of the FederatedTrust scoring engine: the tree pillar -> notion -> metric.

A *definitions* document (YAML or JSON; the packaged ones are ``fltrust/trust/definitions/*.yaml``)
names, per metric, the FactSheet fields it reads, the *operation* applied to them and the score
*type*, with optional weights (paper Table 2 metrics, Table 3 normalisations; trust spec sections
2-3; docs/references.md#trust-2, #trust-3). Operation and type names are those of the registries
:data:`~fltrust.trust.scoring.registry.OPERATIONS` and :data:`~fltrust.trust.scoring.registry.SCORE_TYPES`
(the packaged ones: :mod:`fltrust.trust.scoring.operations`, :mod:`fltrust.trust.scoring.normalization`).
:func:`load_definitions` reads fltrust's layout or the prototype's own ``eval_metrics`` JSON and
validates every key, so that a bad file fails with one line naming the file, the key and the fix
(:class:`DefinitionsError`); an unknown operation or type names the metric and the registered names.

A file may start from another one: ``extends: extended.yaml`` (a packaged file, or a path relative
to the extending file) merges this file's pillars, notions and metrics into that tree by name --
a new name is added at the end, a known one has its keys replaced (a metric as a whole). So a
user's own metric is one entry in their own file:

>>> tree = definitions_from_dict({"extends": "extended.yaml", "pillars": {"fairness": {"notions": {
...     "performance_fairness": {"metrics": {"accuracy_range": {
...         "inputs": ["fairness/test_acc_cv"], "operation": "get_value", "type": "true_score"}}}}}}})
>>> [m.name for m in tree.pillars[2].notions[1].metrics], tree.use_provenance
(['accuracy_variation', 'accuracy_range'], True)

>>> tree = load_definitions(mode="paper")
>>> tree.pillar_aggregation, len(tree.pillars)
('flattened', 6)
>>> tree.get_metric("robustness/client_reliability/scale").type
'breakpoints'
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fltrust.names import TRUST_MODES, TRUST_SCORING_DEFAULTS, TrustMode
from fltrust.trust.scoring import normalization as norm
from fltrust.trust.scoring import operations as _operations  # noqa: F401 - registers the packaged operations
from fltrust.trust.scoring.registry import METRIC_KEYS, OPERATIONS, SCORE_TYPES

PILLAR_AGGREGATIONS = ("notion_mean", "flattened")

PROTOTYPE_PILLAR_WEIGHTS = {
    "robustness": 0.2,
    "privacy": 0.2,
    "fairness": 0.2,
    "explainability": 0.2,
    "accountability": 0.1,
    "architectural_soundness": 0.1,
}
"""Pillar weights hard-coded in the prototype's metric.py (spec 2.5, docs/references.md#trust-2-5); applied only when a
file in the prototype's own JSON format (no pillar weights in it) is loaded."""

_TOP_KEYS = frozenset({"name", "description", "pillar_aggregation", "use_provenance", "pillars", "extends"})
_PILLAR_KEYS = frozenset({"weight", "label", "description", "notions"})
_NOTION_KEYS = frozenset({"weight", "label", "description", "metrics"})
_METRIC_COMMON_KEYS = frozenset({"inputs", "operation", "type", "weight", "label", "description", "score_function"})
_TYPE_KEYS = frozenset(METRIC_KEYS)
_LEVELS = ((_PILLAR_KEYS, "notions"), (_NOTION_KEYS, "metrics"))
"""The keys allowed in a pillar and a notion, and the key of their children."""
_PACKAGED_FILES = ("prototype.yaml", "paper.yaml", "extended.yaml")
_MAX_EXTENDS = 8


class DefinitionsError(ValueError):
    """A metric definitions file is invalid; the message names the file, the key and the fix."""


class TrustScoringError(ValueError):
    """A factsheet cannot be scored as asked; the message names the metric or argument."""


@dataclass(frozen=True)
class MetricDefinition:
    """One metric: which factsheet fields, which operation, which score type.

    Attributes
    ----------
    name : str
    inputs : tuple of str
        Factsheet field paths, passed to the operation as positional arguments.
    operation : str
        A registered operation (:data:`~fltrust.trust.scoring.registry.OPERATIONS`).
    type : str
        A registered score type (:data:`~fltrust.trust.scoring.registry.SCORE_TYPES`).
    direction : {"asc", "desc"}
    weight : float or None
        Weight within the notion (``use_weights=True`` only).
    ranges : tuple of float or None
        Ascending boundaries (types ``ranges`` and ``breakpoints``).
    score_map : mapping of str to float or None
        Ratings (types ``score_mapping``, ``score_ranking``, ``score_map_value``).
    map_normalization : {"minmax", "l2"}
        ``score_mapping`` only.
    scale : tuple (low, high) or None
        ``scaled_score`` only.
    label, description : str
    """

    name: str
    inputs: tuple[str, ...]
    operation: str
    type: str
    direction: str = "asc"
    weight: float | None = None
    ranges: tuple[float, ...] | None = None
    score_map: Mapping[str, float] | None = None
    map_normalization: str = "minmax"
    scale: tuple[float, float] | None = None
    label: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        """Check the operation, the score type and the keys they need."""
        where = f"metric {self.name!r}"
        if self.operation not in OPERATIONS:
            raise DefinitionsError(f"{where}: unknown operation {self.operation!r}; choose one of {OPERATIONS.names()} "
                                   "(or register your own with fltrust.trust.scoring.registry.operation)")
        if self.type not in SCORE_TYPES:
            raise DefinitionsError(f"{where}: unknown type {self.type!r}; choose one of {SCORE_TYPES.names()} "
                                   "(or register your own with fltrust.trust.scoring.registry.score_type)")
        arity = OPERATIONS[self.operation].arity
        if not self.inputs or (arity is not None and len(self.inputs) != arity):
            wanted = "at least 1" if arity is None else str(arity)
            raise DefinitionsError(f"{where}: operation {self.operation!r} takes {wanted} input(s), got {len(self.inputs)}")
        if self.direction not in norm.DIRECTIONS:
            raise DefinitionsError(f"{where}: direction={self.direction!r}; choose 'asc' or 'desc'")
        if self.map_normalization not in norm.MAP_NORMALIZATIONS:
            raise DefinitionsError(
                f"{where}: map_normalization={self.map_normalization!r}; choose one of {list(norm.MAP_NORMALIZATIONS)}"
            )
        kind = SCORE_TYPES[self.type]
        for key in sorted(kind.required):
            if getattr(self, key) is None:
                raise DefinitionsError(f"{where}: type {self.type!r} needs the key {key!r}")
        if self.ranges is not None:
            if not self.ranges:
                raise DefinitionsError(f"{where}: 'ranges' is too short for type {self.type!r}")
            if any(b <= a for a, b in zip(self.ranges, self.ranges[1:])):
                raise DefinitionsError(f"{where}: 'ranges' must be strictly ascending, got {list(self.ranges)}")
        if self.scale is not None and (len(self.scale) != 2 or not self.scale[0] < self.scale[1]):
            raise DefinitionsError(f"{where}: 'scale' must be [low, high] with low < high, got {self.scale!r}")
        if self.score_map is not None and not self.score_map:
            raise DefinitionsError(f"{where}: 'score_map' is empty")
        problem = kind.check(self) if kind.check is not None else None
        if problem:
            raise DefinitionsError(f"{where}: {problem}")


@dataclass(frozen=True)
class NotionDefinition:
    """A notion: a group of metrics with a weight within its pillar."""

    name: str
    metrics: tuple[MetricDefinition, ...]
    weight: float | None = None
    label: str = ""
    description: str = ""


@dataclass(frozen=True)
class PillarDefinition:
    """A pillar: a group of notions with a weight in the trust score (fix B13, docs/references.md#trust-b13)."""

    name: str
    notions: tuple[NotionDefinition, ...]
    weight: float | None = None
    label: str = ""
    description: str = ""


@dataclass(frozen=True)
class Definitions:
    """A complete metric tree, as loaded by :func:`load_definitions`."""

    name: str
    pillars: tuple[PillarDefinition, ...]
    pillar_aggregation: str = "notion_mean"
    description: str = ""
    source: str = "<dict>"
    use_provenance: bool = False

    def metric_paths(self) -> list[str]:
        """List the ``pillar/notion/metric`` path of every metric, in order.

        Returns
        -------
        list of str
        """
        return [f"{p.name}/{n.name}/{m.name}" for p in self.pillars for n in p.notions for m in n.metrics]

    def get_metric(self, path: str) -> MetricDefinition:
        """Return the metric at ``pillar/notion/metric``.

        Parameters
        ----------
        path : str
            ``pillar/notion/metric``.

        Returns
        -------
        MetricDefinition

        Raises
        ------
        KeyError
            No metric at that path.
        """
        metrics = {f"{p.name}/{n.name}/{m.name}": m for p in self.pillars for n in p.notions for m in n.metrics}
        if path not in metrics:
            raise KeyError(f"no metric {path!r} in definitions {self.name!r}")
        return metrics[path]

    def replace_metric(self, path: str, **changes: Any) -> Definitions:
        """Return a copy with the metric at ``path`` changed (fields as in :class:`MetricDefinition`).

        Parameters
        ----------
        path : str
            ``pillar/notion/metric``.
        **changes
            New values of :class:`MetricDefinition` fields.

        Returns
        -------
        Definitions

        Raises
        ------
        KeyError
            No metric at ``path``.
        """
        self.get_metric(path)  # KeyError when there is none

        def changed(pillar: PillarDefinition, notion: NotionDefinition) -> NotionDefinition:
            metrics = (dataclasses.replace(m, **changes) if f"{pillar.name}/{notion.name}/{m.name}" == path else m
                       for m in notion.metrics)
            return dataclasses.replace(notion, metrics=tuple(metrics))

        pillars = (dataclasses.replace(p, notions=tuple(changed(p, n) for n in p.notions)) for p in self.pillars)
        return dataclasses.replace(self, pillars=tuple(pillars))


def _check_keys(data: Any, allowed: frozenset[str], where: str, source: str, children: str | None = None) -> None:
    """Check that ``data`` is a mapping of allowed keys (with a non-empty mapping under ``children``)."""
    if not isinstance(data, Mapping):
        raise DefinitionsError(f"{source}: {where} must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise DefinitionsError(f"{source}: unknown key(s) {unknown} in {where}; allowed keys are {sorted(allowed)}")
    if children is not None and (not isinstance(data.get(children), Mapping) or not data[children]):
        raise DefinitionsError(f"{source}: {where} needs a non-empty {children!r} mapping")


def _group(cls: Any, name: str, data: Mapping[str, Any], children: list[Any], where: str, source: str) -> Any:
    """Build a :class:`NotionDefinition` or :class:`PillarDefinition` from its parsed children."""
    return cls(name, tuple(children), weight=_weight(data, where, source), label=str(data.get("label", "")),
               description=str(data.get("description", "")))


def _number(value: Any, where: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise DefinitionsError(
            f"{source}: {where} must be a number, got {value!r} (in YAML write 1000 or 1.0e+3, not 1e3)"
        )
    return float(value)


def _numbers(data: Mapping[str, Any], key: str, form: str, where: str, source: str) -> Any:
    """Read the list of numbers under ``key`` as a tuple of floats (``None`` when absent)."""
    values = data.get(key)
    if values is not None and not isinstance(values, list):
        raise DefinitionsError(f"{source}: {where}.{key} must be {form}")
    return None if values is None else tuple(_number(v, f"{where}.{key}", source) for v in values)


def _weight(data: Mapping[str, Any], where: str, source: str) -> float | None:
    if data.get("weight") is None:
        return None
    weight = _number(data["weight"], f"{where}.weight", source)
    if weight < 0:
        raise DefinitionsError(f"{source}: {where}.weight={weight} must be >= 0")
    return weight


def _parse_input(entry: Any, where: str, source: str) -> str:
    if isinstance(entry, str):
        path = entry
    else:
        _check_keys(entry, frozenset({"source", "field_path"}), f"{where}.inputs entry", source)
        if entry.get("source", "factsheet") != "factsheet":
            raise DefinitionsError(f"{source}: {where}: input source {entry['source']!r} is not supported; use 'factsheet'")
        path = entry.get("field_path")
    if not isinstance(path, str) or not path.strip("/"):
        raise DefinitionsError(f"{source}: {where}: input {entry!r} must be a 'section/field' path")
    return path


def _parse_metric(name: str, data: Any, where: str, source: str) -> MetricDefinition:
    _check_keys(data, _METRIC_COMMON_KEYS | _TYPE_KEYS, where, source)
    for key in ("inputs", "operation", "type"):
        if key not in data:
            raise DefinitionsError(f"{source}: {where} needs the key {key!r}")
    kind = data["type"]
    if kind in SCORE_TYPES:
        entry = SCORE_TYPES[kind]
        unused = sorted((set(data) & _TYPE_KEYS) - entry.required - entry.optional)
        if unused:
            raise DefinitionsError(f"{source}: {where}: key(s) {unused} are not used by type {kind!r}; remove them")
    inputs = data["inputs"]
    if not isinstance(inputs, list):
        raise DefinitionsError(f"{source}: {where}.inputs must be a list of field paths")
    ranges = _numbers(data, "ranges", "a list of numbers", where, source)
    score_map = data.get("score_map")
    if score_map is not None:
        if not isinstance(score_map, Mapping):
            raise DefinitionsError(f"{source}: {where}.score_map must be a mapping name -> number")
        score_map = types.MappingProxyType(
            {str(k): _number(v, f"{where}.score_map[{k!r}]", source) for k, v in score_map.items()}
        )
    scale = _numbers(data, "scale", "[low, high]", where, source)
    try:
        return MetricDefinition(
            name=name,
            inputs=tuple(_parse_input(entry, where, source) for entry in inputs),
            operation=data["operation"],
            type=kind,
            direction=data.get("direction", "asc"),
            weight=_weight(data, where, source),
            ranges=ranges,
            score_map=score_map,
            map_normalization=data.get("map_normalization", "minmax"),
            scale=scale,
            label=str(data.get("label", "")),
            description=str(data.get("description", "")),
        )
    except DefinitionsError as exc:
        raise DefinitionsError(f"{source}: {where}: {exc}") from None


def _is_prototype_json_layout(data: Mapping[str, Any]) -> bool:
    """Tell whether ``data`` is the prototype's eval_metrics JSON: pillars at the top level, no 'pillars' key."""
    return "pillars" not in data and all(
        isinstance(notions, Mapping) and all(isinstance(n, Mapping) and "metrics" in n for n in notions.values())
        for notions in data.values()
    ) and bool(data)


def _merge_named(old: Any, new: Any, where: str, source: str,
                 levels: tuple[tuple[frozenset[str], str], ...] = _LEVELS) -> dict[str, Any]:
    """Merge the entries of ``new`` into ``old`` by name, one level of the tree at a time.

    A known entry has its keys replaced and its children merged the same way, one level down
    (pillars, then notions); a metric, the last level, is replaced as a whole.
    """
    if not isinstance(new, Mapping):
        raise DefinitionsError(f"{source}: {where} must be a mapping")
    out = dict(old or {})
    if not levels:
        out.update(new)
        return out
    (allowed, children), below = levels[0], levels[1:]
    for name, entry in new.items():
        _check_keys(entry, allowed, f"{where}.{name}", source)
        kept = dict(out.get(name) or {})
        kept.update({k: v for k, v in entry.items() if k != children})
        kept[children] = _merge_named(kept.get(children), entry.get(children) or {}, f"{where}.{name}.{children}",
                                      source, below)
        out[name] = kept
    return out


def _merge_tree(base: Mapping[str, Any], extension: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Merge ``extension``'s keys into ``base`` (a raw document): pillars, notions and metrics merged by name."""
    out = {key: value for key, value in base.items() if key != "extends"}
    out.update((key, value) for key, value in extension.items() if key not in ("extends", "pillars"))
    extra = extension.get("pillars", {})
    if not isinstance(extra, Mapping):
        raise DefinitionsError(f"{source}: 'pillars' must be a mapping")
    out["pillars"] = _merge_named(out.get("pillars"), extra, "pillars", source)
    return out


def _parse(text: str, is_json: bool, what: str) -> Any:
    """Parse JSON or YAML text; ``what`` names it in the error."""
    try:
        return json.loads(text) if is_json else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise DefinitionsError(f"{what} cannot be parsed: {exc}") from exc


def _resolve_extends(data: Mapping[str, Any], source: str, depth: int = 0) -> Mapping[str, Any]:
    """Merge the ``extends`` chain into the document (a packaged file name or a relative path)."""
    target = data.get("extends")
    if target is None:
        return data
    if depth >= _MAX_EXTENDS:
        raise DefinitionsError(f"{source}: 'extends' is nested more than {_MAX_EXTENDS} levels deep (a cycle?)")
    if not isinstance(target, str) or not target.strip():
        raise DefinitionsError(f"{source}: extends={target!r} must name a definitions file, e.g. extends: extended.yaml")
    if target in _PACKAGED_FILES:
        text = importlib.resources.files("fltrust.trust").joinpath("definitions", target).read_text(encoding="utf-8")
        base_source = f"fltrust/trust/definitions/{target}"
    else:
        here = Path(source).parent if Path(source).is_file() else Path.cwd()
        path = (here / target).resolve()
        if not path.is_file():
            raise DefinitionsError(f"{source}: extends={target!r} is neither a packaged definitions file "
                                   f"({list(_PACKAGED_FILES)}) nor an existing file ({path})")
        text, base_source = path.read_text(encoding="utf-8"), str(path)
    base = _parse(text, base_source.endswith(".json"), f"{source}: extends={target!r}")
    if not isinstance(base, Mapping) or "pillars" not in base:
        raise DefinitionsError(f"{source}: extends={target!r} is not a definitions file in fltrust's layout")
    return _merge_tree(_resolve_extends(base, base_source, depth + 1), data, source)


def definitions_from_dict(data: Mapping[str, Any], *, source: str = "<dict>", name: str | None = None) -> Definitions:
    """Build :class:`Definitions` from a parsed YAML/JSON document.

    Two layouts are accepted:

    - fltrust's (``prototype.yaml``): top-level ``name``, ``description``,
      ``pillar_aggregation``, ``use_provenance``, ``extends`` and ``pillars`` -> pillar {weight,
      label, notions -> notion {weight, label, metrics -> metric}}; ``extends`` merges the
      document into another one (module docstring);
    - the prototype's ``eval_metrics_v1.json``: pillars at the top level, notions with
      ``weight`` and ``metrics``, inputs as ``{"source": "factsheet", "field_path": ...}``.
      Its pillar weights were hard-coded in code, so :data:`PROTOTYPE_PILLAR_WEIGHTS` is used.
      Its ``score_function`` key is accepted and ignored, as the prototype did.

    Parameters
    ----------
    data : mapping
        The parsed document.
    source : str
        Where it comes from (its file path), named in every error; a relative ``extends`` is
        resolved from its folder.
    name : str or None
        The tree's name when the document has none (default: the file's stem).

    Returns
    -------
    Definitions

    Raises
    ------
    DefinitionsError
        Unknown keys, operations or types, naming the file and the key.
    """
    if not isinstance(data, Mapping) or not data:
        raise DefinitionsError(f"{source}: a definitions document must be a non-empty mapping")
    if "extends" in data:
        own_name = data.get("name") or name or Path(source).stem
        data = {**_resolve_extends(data, source), "name": own_name}
    if _is_prototype_json_layout(data):
        data = {
            "name": name or Path(source).stem,
            "description": "prototype eval_metrics JSON layout (pillar weights from the prototype's metric.py)",
            "pillars": {
                pillar: {"weight": PROTOTYPE_PILLAR_WEIGHTS.get(pillar), "notions": notions}
                for pillar, notions in data.items()
            },
        }
    _check_keys(data, _TOP_KEYS, "the top level", source)
    if "pillars" not in data or not isinstance(data["pillars"], Mapping) or not data["pillars"]:
        raise DefinitionsError(f"{source}: needs a non-empty 'pillars' mapping")
    aggregation = data.get("pillar_aggregation", "notion_mean")
    if aggregation not in PILLAR_AGGREGATIONS:
        raise DefinitionsError(f"{source}: pillar_aggregation={aggregation!r}; choose one of {list(PILLAR_AGGREGATIONS)}")
    pillars = []
    for pillar_name, pillar in data["pillars"].items():
        where = f"pillars.{pillar_name}"
        _check_keys(pillar, _PILLAR_KEYS, where, source, "notions")
        notions = []
        for notion_name, notion in pillar["notions"].items():
            nwhere = f"{where}.notions.{notion_name}"
            _check_keys(notion, _NOTION_KEYS, nwhere, source, "metrics")
            metrics = [_parse_metric(metric_name, metric, f"{nwhere}.metrics.{metric_name}", source)
                       for metric_name, metric in notion["metrics"].items()]
            notions.append(_group(NotionDefinition, notion_name, notion, metrics, nwhere, source))
        pillars.append(_group(PillarDefinition, pillar_name, pillar, notions, where, source))
    use_provenance = data.get("use_provenance", False)
    if not isinstance(use_provenance, bool):
        raise DefinitionsError(f"{source}: use_provenance must be true or false, got {use_provenance!r}")
    return Definitions(
        name=str(data.get("name") or name or Path(source).stem),
        pillars=tuple(pillars),
        pillar_aggregation=aggregation,
        description=str(data.get("description", "")),
        source=source,
        use_provenance=use_provenance,
    )


@functools.cache
def _packaged_definitions(filename: str) -> Definitions:
    resource = importlib.resources.files("fltrust.trust").joinpath("definitions", filename)
    data = yaml.safe_load(resource.read_text(encoding="utf-8"))
    return definitions_from_dict(data, source=f"fltrust/trust/definitions/{filename}")


def load_definitions(
    source: str | Path | Mapping[str, Any] | Definitions | None = None, *, mode: TrustMode = "prototype"
) -> Definitions:
    """Load metric definitions.

    Parameters
    ----------
    source : path, mapping, Definitions or None
        ``None``: the packaged file of ``mode`` (``prototype.yaml``, or ``paper.yaml`` for
        paper mode). A path to a YAML (``.yaml``/``.yml``) or JSON (``.json``) file in either
        layout of :func:`definitions_from_dict`. A parsed mapping. A :class:`Definitions`
        (returned unchanged).
    mode : {"prototype", "paper", "fixed", "extended"}

    Returns
    -------
    Definitions

    Raises
    ------
    DefinitionsError
        Missing or unreadable file, unknown keys, operations or types.
    """
    if mode not in TRUST_MODES:
        raise TrustScoringError(f"mode={mode!r} is not allowed; choose one of {list(TRUST_MODES)}")
    if source is None:
        return _packaged_definitions(TRUST_SCORING_DEFAULTS[mode]["definitions"])
    if isinstance(source, Definitions):
        return source
    if isinstance(source, Mapping):
        return definitions_from_dict(source)
    path = Path(source)
    if not path.is_file():
        raise DefinitionsError(f"definitions file {str(path)!r} does not exist; pass an existing YAML or JSON file")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise DefinitionsError(f"definitions file {str(path)!r}: use a .yaml, .yml or .json file")
    data = _parse(text, path.suffix.lower() == ".json", f"definitions file {str(path)!r}")
    return definitions_from_dict(data, source=str(path))
