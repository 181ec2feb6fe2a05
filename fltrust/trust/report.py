"""The FederatedTrust report: scores of every pillar, notion and metric, and how they were made.

:func:`fltrust.trust.scoring.score_factsheet` returns a :class:`TrustReport`. It keeps, per
metric, the factsheet inputs it read, the raw value, the normalised score and the score used in
the aggregation (rounded to 2 decimals under prototype rounding), plus the weights, the mode,
the definitions and the bug fixes that were applied, so that every number can be traced.

Outputs (fix B13: one file per run, overwritten, ``null`` instead of NaN; docs/references.md#trust-b13):

- :meth:`TrustReport.to_json` / :meth:`TrustReport.from_json`: the full report;
- :meth:`TrustReport.to_prototype_dict`: the prototype's ``federatedtrust_results.json`` layout;
- :meth:`TrustReport.to_frame`: one row per metric (pandas);
- :meth:`TrustReport.format_table`: a printable table;
- :func:`plot_trust_report`: pillar bars and metric bars (paper Figs. 4-5);
- :func:`write_report`: ``trust_report.json`` and ``trust_report.png`` in a run folder.

Extended mode (``fltrust.trust.definitions/extended.yaml``) adds, per metric, its *provenance*:
whether the raw value was ``measured`` by the kit, ``declared`` (configuration or a person's
statement), ``missing`` (not computed; scores 0) or ``n/a`` (not applicable, with the reason;
left out of the means). :meth:`TrustReport.provenance_rows` lists them, :meth:`format_table` and
:meth:`to_frame` show them, and :meth:`provenance_summary` counts them.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Self

import numpy as np

from fltrust.core.io import atomic_write, atomic_write_text, to_plain

REPORT_JSON = "trust_report.json"
REPORT_PNG = "trust_report.png"


_SCORES = ("normalized", "score", "trust_score")
"""Fields read back with ``null`` as NaN."""
_LISTS = ("metrics", "notions", "pillars")
"""Fields holding a list of results."""
_OPTIONAL = ("provenance", "applicable")
"""Fields written only when set (``provenance``) or ``False`` (``applicable``); defaults when absent."""


def _fmt(value: float | None, decimals: int = 2) -> str:
    """Format a score for display: ``decimals`` decimals, ``nan`` for NaN or ``None``."""
    return "nan" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{decimals}f}"


class PlainResult:
    """The base of the four result classes: JSON-ready ``to_dict`` / ``from_dict``, field by field.

    A list of results (``metrics``, ``notions``, ``pillars``) is written and read as a list of their
    dicts; ``provenance`` is written only when set and ``applicable`` only when ``False``.
    """

    _children: Any = None
    """The class of the items of the list field, if any (not a dataclass field: no annotation where set)."""

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain JSON-ready dict (NaN -> ``None``).

        Returns
        -------
        dict
            The fields by name; :meth:`from_dict` reads it back.
        """
        out = {}
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            if (item.name == "provenance" and value is None) or (item.name == "applicable" and value):
                continue
            out[item.name] = [child.to_dict() for child in value] if item.name in _LISTS else value
        return to_plain(out)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a result from :meth:`to_dict` (``null`` scores come back as NaN).

        Parameters
        ----------
        data : Mapping
            What :meth:`to_dict` returned (or its JSON, read back).

        Returns
        -------
        MetricResult, NotionResult, PillarResult or TrustReport
            The class it is called on.
        """
        kwargs = {}
        for item in fields(cls):  # type: ignore[arg-type]
            if item.name in _OPTIONAL and data.get(item.name) is None:
                continue
            value = data[item.name]
            if item.name in _LISTS:
                value = [cls._children.from_dict(child) for child in value]
            elif item.name in _SCORES:
                value = math.nan if value is None else float(value)
            elif isinstance(value, (Mapping, list)):
                value = dict(value) if isinstance(value, Mapping) else list(value)
            kwargs[item.name] = value
        return cls(**kwargs)


@dataclass
class MetricResult(PlainResult):
    """One scored metric.

    Attributes
    ----------
    name, label : str
        Metric key and display name (paper name).
    path : str
        ``pillar/notion/metric``.
    operation, type, direction : str
        How the raw value was computed and normalised.
    weight : float or None
        Metric weight within its notion (used only with ``use_weights``).
    inputs : dict
        Factsheet field path -> value read.
    raw_value : object
        Output of the operation (``None`` when missing).
    normalized : float
        Score type output before any rounding.
    score : float
        Score used in the aggregation (``normalized`` rounded to 2 decimals under prototype
        rounding).
    warnings : list of str
        Why a score is 0 or NaN (missing, NaN or unknown values).
    provenance : dict or None
        Extended mode: ``{"status": "measured" | "declared" | "missing" | "n/a" | "unknown",
        "method": ..., "reason": ...}`` from the FactSheet; ``None`` in the other modes.
    applicable : bool
        ``False`` for an n/a metric (score NaN, left out of the notion mean).
    """

    name: str
    label: str
    path: str
    operation: str
    type: str
    direction: str
    weight: float | None
    inputs: dict[str, Any]
    raw_value: Any
    normalized: float
    score: float
    warnings: list[str] = field(default_factory=list)
    provenance: dict[str, Any] | None = None
    applicable: bool = True

    @property
    def status(self) -> str:
        """Provenance status (``""`` outside extended mode)."""
        return "" if self.provenance is None else str(self.provenance.get("status", "unknown"))


@dataclass
class NotionResult(PlainResult):
    """One notion: its metrics and its score (weight = notion weight within its pillar).

    ``applicable`` is ``False`` when every metric of the notion is n/a (extended mode).
    """

    name: str
    label: str
    weight: float | None
    score: float
    metrics: list[MetricResult]
    applicable: bool = True
    _children = MetricResult


@dataclass
class PillarResult(PlainResult):
    """One pillar: its notions and its score (weight = pillar weight in the trust score).

    ``applicable`` is ``False`` when every notion of the pillar is n/a (extended mode).
    """

    name: str
    label: str
    weight: float | None
    score: float
    notions: list[NotionResult]
    applicable: bool = True
    _children = NotionResult

    def metrics(self) -> Iterator[MetricResult]:
        """Iterate over all metrics of the pillar, in definition order.

        Yields
        ------
        MetricResult
        """
        for notion in self.notions:
            yield from notion.metrics


@dataclass
class TrustReport(PlainResult):
    """Result of :func:`fltrust.trust.scoring.score_factsheet`.

    Attributes
    ----------
    trust_score : float
        Mean (or weighted sum) of the pillar scores; NaN if a metric was NaN (prototype B7;
        docs/references.md#trust-b7).
    pillars : list of PillarResult
        In definition order.
    mode : str
        ``"prototype"``, ``"paper"`` or ``"fixed"``.
    definitions : str
        Name of the metric definitions used (``"prototype"``, ``"paper"``, or a user file's).
    definitions_source : str
        Where they were read from.
    pillar_aggregation : str
        ``"notion_mean"`` or ``"flattened"``.
    use_weights : bool
    rounding : str
        ``"prototype"`` (metric and pillar scores rounded to 2 decimals before aggregation,
        trust rounded) or ``"final"`` (no rounding; round for display only; fix B12; docs/references.md#trust-b12).
    fixes : list of str
        Names of the bug fixes applied (see ``fltrust.trust.scoring.FIXES``).
    warnings : list of str
        Every metric warning, prefixed with the metric path, plus notes about fixes.
    """

    trust_score: float
    pillars: list[PillarResult]
    mode: str
    definitions: str
    definitions_source: str
    pillar_aggregation: str
    use_weights: bool
    rounding: str
    fixes: list[str]
    warnings: list[str] = field(default_factory=list)
    _children = PillarResult

    # -- lookup ---------------------------------------------------------------------------------
    def pillar(self, name: str) -> PillarResult:
        """Return the pillar called ``name``.

        Parameters
        ----------
        name : str
            A pillar name (``"robustness"``, ...).

        Returns
        -------
        PillarResult

        Raises
        ------
        KeyError
            No pillar has that name.
        """
        for pillar in self.pillars:
            if pillar.name == name:
                return pillar
        raise KeyError(f"no pillar {name!r}; pillars are {[p.name for p in self.pillars]}")

    def notion(self, name: str) -> NotionResult:
        """Return the notion called ``name`` (``"pillar/notion"`` if the name is not unique).

        Parameters
        ----------
        name : str
            A notion name, or ``"pillar/notion"``.

        Returns
        -------
        NotionResult

        Raises
        ------
        KeyError
            No notion, or more than one, matches.
        """
        matches = [
            n for p in self.pillars for n in p.notions if name in (n.name, f"{p.name}/{n.name}")
        ]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} notions match {name!r}; use 'pillar/notion'")
        return matches[0]

    def metric(self, name: str) -> MetricResult:
        """Return the metric called ``name``, or at ``pillar/notion/metric``, or ``pillar/metric``.

        Metric names repeat across pillars (``performance`` is a robustness metric and an
        accountability metric), so a plain name must be unique or it raises ``KeyError``.

        Parameters
        ----------
        name : str
            ``metric``, ``pillar/metric`` or ``pillar/notion/metric``.

        Returns
        -------
        MetricResult

        Raises
        ------
        KeyError
            No metric, or more than one, matches.
        """
        matches = [m for p in self.pillars for m in p.metrics() if name in (m.name, m.path, f"{p.name}/{m.name}")]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} metrics match {name!r}; use 'pillar/metric' or the full path")
        return matches[0]

    def metrics(self) -> Iterator[MetricResult]:
        """Iterate over all metrics in definition order.

        Yields
        ------
        MetricResult
        """
        for pillar in self.pillars:
            yield from pillar.metrics()

    # -- serialisation --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return the report as a plain JSON-ready dict (NaN -> ``None``).

        Returns
        -------
        dict
            ``trust_score``, the scoring settings (``mode``, ``definitions``, ``definitions_source``,
            ``pillar_aggregation``, ``use_weights``, ``rounding``, ``fixes``), ``warnings`` and
            ``pillars`` (each :meth:`PillarResult.to_dict`).
        """
        out = super().to_dict()
        out["pillars"] = out.pop("pillars")
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """Return the report as standard JSON text (never the ``NaN`` token; missing values are ``null``).

        Parameters
        ----------
        indent : int or None, default 2
            :func:`json.dumps`' indent; ``None`` for one line.

        Returns
        -------
        str
        """
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> TrustReport:
        """Read a report written by :meth:`to_json`.

        Parameters
        ----------
        text : str
            The JSON text (``trust_report.json``'s content).

        Returns
        -------
        TrustReport
        """
        return cls.from_dict(json.loads(text))

    def to_prototype_dict(self) -> dict[str, Any]:
        """Return the prototype's output layout, for comparison with its result files (docs/references.md#trust-2-6).

        Returns
        -------
        dict
            ``{"trust_score": ..., "pillars": [{pillar: {"score", "notions": [{notion: {"score", "metrics"}}]}}]}``.
        """
        def notions(pillar: PillarResult) -> list[dict[str, Any]]:
            return [{n.name: {"score": n.score, "metrics": [{m.name: {"score": m.score}} for m in n.metrics]}}
                    for n in pillar.notions]

        pillars = [{p.name: {"score": p.score, "notions": notions(p)}} for p in self.pillars]
        return to_plain({"trust_score": self.trust_score, "pillars": pillars})

    def to_frame(self) -> Any:
        """One row per metric (pandas ``DataFrame``); ``df.attrs`` holds the trust score and mode.

        Columns: pillar, notion, metric, label, raw_value, normalized, score, metric_weight,
        notion_score, notion_weight, pillar_score, pillar_weight, type, operation, direction;
        extended mode adds status, applicable and method.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        provenance = self.has_provenance
        rows = [
            {"pillar": pillar.name, "notion": notion.name, "metric": metric.name, "label": metric.label,
             "raw_value": metric.raw_value, "normalized": metric.normalized, "score": metric.score,
             "metric_weight": metric.weight, "notion_score": notion.score, "notion_weight": notion.weight,
             "pillar_score": pillar.score, "pillar_weight": pillar.weight, "type": metric.type,
             "operation": metric.operation, "direction": metric.direction,
             **({"status": metric.status, "applicable": metric.applicable,
                 "method": (metric.provenance or {}).get("method", "")} if provenance else {})}
            for pillar in self.pillars for notion in pillar.notions for metric in notion.metrics
        ]
        frame = pd.DataFrame(rows)
        frame.attrs.update({"trust_score": self.trust_score, "mode": self.mode, "fixes": list(self.fixes)})
        return frame

    def format_table(self, decimals: int = 2) -> str:
        """Printable table: trust score, then each pillar, notion and metric with its score.

        Metric lines also show the raw value, and in extended mode whether it was measured or
        declared (``[n/a]`` metrics are left out of the means). Scores are rounded for display only.

        Parameters
        ----------
        decimals : int, default 2
            Decimals of the scores shown.

        Returns
        -------
        str
            The table, one line per trust score, pillar, notion and metric.
        """
        fmt = functools.partial(_fmt, decimals=decimals)

        def raw(value: Any) -> str:
            if isinstance(value, float):
                return "nan" if math.isnan(value) else f"{value:.4g}"
            text = repr(value)
            return text if len(text) <= 24 else text[:21] + "..."

        width = 46
        lines = [
            f"{'trust_score':<{width}}{fmt(self.trust_score):>8}",
            f"mode={self.mode} definitions={self.definitions} aggregation={self.pillar_aggregation} "
            f"use_weights={self.use_weights} rounding={self.rounding}",
            f"fixes: {', '.join(self.fixes) if self.fixes else 'none'}",
            "-" * (width + 8 + 26),
        ]
        for pillar in self.pillars:
            lines.append(f"{pillar.name:<{width}}{fmt(pillar.score):>8}")
            for notion in pillar.notions:
                lines.append(f"  {notion.name:<{width - 2}}{fmt(notion.score):>8}")
                for metric in notion.metrics:
                    tag = f"   [{metric.status}]" if metric.provenance is not None else ""
                    lines.append(f"    {metric.name:<{width - 4}}{fmt(metric.score):>8}   raw {raw(metric.raw_value)}{tag}")
        if self.has_provenance:
            counts = self.provenance_summary()
            lines.append("-" * (width + 8 + 26))
            lines.append("provenance: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        return "\n".join(lines)

    # -- provenance (extended mode) ---------------------------------------------------------------
    @property
    def has_provenance(self) -> bool:
        """Whether the metrics carry provenance entries (extended mode)."""
        return any(m.provenance is not None for m in self.metrics())

    def provenance_rows(self) -> list[dict[str, Any]]:
        """Return one row per metric: path, label, status, method, reason, score (extended mode).

        Returns
        -------
        list of dict
            Keys ``path``, ``label``, ``status``, ``method``, ``reason``, ``score``, ``applicable``.
        """
        return [
            {"path": m.path, "label": m.label, "status": m.status, "method": (m.provenance or {}).get("method", ""),
             "reason": (m.provenance or {}).get("reason", ""), "score": m.score, "applicable": m.applicable}
            for m in self.metrics()
        ]

    def provenance_summary(self) -> dict[str, int]:
        """Count the metrics that were measured, declared, missing, n/a (and unknown).

        Returns
        -------
        dict
            Status -> count, in that order, statuses with no metric left out.
        """
        counts = Counter(metric.status or "unknown" for metric in self.metrics())
        order = ("measured", "declared", "missing", "n/a", "unknown")
        return {k: counts[k] for k in order if k in counts}

    def __str__(self) -> str:
        """Return :meth:`format_table`."""
        return self.format_table()


def plot_trust_report(report: TrustReport, ax: Sequence[Any] | None = None) -> tuple[Any, Any]:
    """Plot the pillar scores and the metric scores of a report (like paper Figs. 4-5).

    Left: one bar per pillar (paper names) with the trust score as a dashed line. Right: one
    horizontal bar per metric, grouped and coloured by pillar. NaN scores are drawn as empty
    bars labelled "nan".

    Parameters
    ----------
    report : TrustReport
    ax : pair of matplotlib Axes, optional
        Where to draw (pillars, metrics); a new figure is made when ``None``.

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : tuple of Axes
        ``(pillar_ax, metric_ax)``.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=(13, 6.5), gridspec_kw={"width_ratios": [1, 1.6]})
    else:
        if len(ax) != 2:
            raise ValueError("ax must be a pair of Axes (pillars, metrics)")
        axes = tuple(ax)
        fig = axes[0].figure
    pillar_ax, metric_ax = axes
    colors = plt.get_cmap("tab10").colors

    names = [p.label or p.name for p in report.pillars]
    scores = [0.0 if math.isnan(p.score) else p.score for p in report.pillars]
    bars = pillar_ax.bar(names, scores, color=[colors[i % 10] for i in range(len(names))])
    for bar, pillar in zip(bars, report.pillars):
        pillar_ax.annotate(_fmt(pillar.score), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                           va="bottom")
    if not math.isnan(report.trust_score):
        pillar_ax.axhline(report.trust_score, color="black", linestyle="--", linewidth=1)
    pillar_ax.set_title(f"Trust score {_fmt(report.trust_score)} ({report.mode} mode)")
    pillar_ax.set_ylim(0, 1.1)
    pillar_ax.set_ylabel("score")
    pillar_ax.tick_params(axis="x", labelrotation=30)

    labels, values, bar_colors = [], [], []
    for index, pillar in enumerate(report.pillars):
        for metric in pillar.metrics():
            labels.append(f"{pillar.label or pillar.name}: {metric.label or metric.name}")
            values.append(metric.score)
            bar_colors.append(colors[index % 10])
    positions = np.arange(len(labels))[::-1]
    heights = [0.0 if math.isnan(v) else v for v in values]
    metric_ax.barh(positions, heights, color=bar_colors)
    for position, value, height in zip(positions, values, heights):
        metric_ax.annotate(_fmt(value), (height, position),
                           xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
    metric_ax.set_yticks(positions, labels, fontsize=7)
    metric_ax.set_xlim(min([0.0, *heights]), 1.1)
    metric_ax.set_xlabel("metric score")
    metric_ax.set_title("Metric scores by pillar")
    fig.tight_layout()
    return fig, axes


def write_report(report: TrustReport, folder: str | Path, *, plot: bool = True) -> dict[str, Path]:
    """Write ``trust_report.json`` (and ``trust_report.png``) into ``folder``, replacing old ones.

    Both files are written atomically (temporary file + ``os.replace``), so an interrupted run
    never leaves half a report; a second call overwrites instead of appending (fix B13).

    Parameters
    ----------
    report : TrustReport
    folder : str or Path
        Created if needed.
    plot : bool
        Also write the figure of :func:`plot_trust_report`.

    Returns
    -------
    dict
        ``{"json": path, "png": path}`` (``"png"`` only when plotted).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / REPORT_JSON}
    text = report.to_json()
    atomic_write_text(paths["json"], text + "\n")
    if plot:
        import matplotlib.pyplot as plt

        fig, _ = plot_trust_report(report)
        paths["png"] = folder / REPORT_PNG
        try:
            atomic_write(paths["png"], lambda stream: fig.savefig(stream, format="png", dpi=120))
        finally:
            plt.close(fig)
    return paths
