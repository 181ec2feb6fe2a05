"""How far the synthetic N-BaIoT stand-in is from the real rows of ``real_partial/``.

FederatedTrust experiments 4-5 run on :func:`fltrust.data.synthetic.synthetic_n_baiot` (the real files
cover 3 of the 9 devices). This module measures the distance between that stand-in and the partial
real rows (:func:`fltrust.data.n_baiot.load_n_baiot_real_partial`), per feature and per class.

Common units
------------
The stand-in has no raw units: it is generated in standardised units and z-scored on its training
split, with about 20 % benign rows. The real rows are therefore z-scored per feature with the mean
and standard deviation of a mixture of their two classes in the same proportions,
:math:`w = 0.2` benign (:data:`STANDIN_BENIGN_SHARE`):

.. math::

    \\mu = w\\,m_b + (1 - w)\\,m_a, \\qquad
    \\sigma^2 = w\\,(s_b^2 + (m_b - \\mu)^2) + (1 - w)\\,(s_a^2 + (m_a - \\mu)^2),

with :math:`m_c, s_c` the real class mean and standard deviation. Both sources then sit in the
units the models see. The real benign rows are device 1's (Danmini), the real attack rows are
99.9 % gafgyt tcp/udp floods of devices 3 and 5 (plus device 1's 250 scan rows), pooled by rows.

Distances (:func:`distance_summary`), per feature and class, stand-in s against real r
--------------------------------------------------------------------------------------
- standardised mean difference :math:`\\mathrm{SMD} = (\\bar x_s - \\bar x_r) / \\sqrt{(s_s^2 + s_r^2)/2}`;
- standard deviation ratio :math:`s_s / s_r`;
- two-sample Kolmogorov-Smirnov statistic :math:`D = \\max_v |F_s(v) - F_r(v)|` (:func:`ks_statistic`):
  0 = the same marginal distribution, 1 = disjoint supports.

:func:`class_separation` gives the same SMD and D between the attack and benign rows of one source:
how separable the two classes are, which is what a detector learns.

:func:`write_standin_comparison` writes the committed figure (:data:`FIGURE`) and table
(:data:`MARKDOWN`); ``python -m fltrust.repro.trust.n_baiot_compare`` runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fltrust.data.base import DatasetBundle, DatasetError
from fltrust.data.n_baiot import FEATURE_NAMES
from fltrust.repro.markdown import render

KEY_FEATURES = (
    "MI_dir_L5_weight",
    "MI_dir_L5_mean",
    "MI_dir_L5_variance",
    "H_L0.01_mean",
    "HH_L5_magnitude",
    "HpHp_L0.01_pcc",
)
"""Features shown in the comparison table and figure: packet count, mean size and size variance of
the source MAC-IP stream over the shortest window (L5), mean size per source IP over the longest
window (L0.01), the channel's size magnitude (L5) and the socket's size correlation (L0.01)."""

QUANTILES = (0.05, 0.5, 0.95)
"""Quantiles reported per feature and class."""

STANDIN_BENIGN_SHARE = 0.2
"""Benign share of the stand-in (attack with probability 0.8); the real rows are z-scored as this mixture."""

CLASSES = ("benign", "attack")
FIGURE = "figures/n_baiot_standin_vs_real.png"
MARKDOWN = "papers_repro/federatedtrust/n_baiot_standin_vs_real.md"
COMMAND = "python -m fltrust.repro.trust.n_baiot_compare"
"""The command that rewrites the committed figure and table."""
REAL = "real"
STANDIN = "stand-in"
"""Display name of the default stand-in (:func:`summary_paragraph` reads it)."""
CALIBRATED = "calibrated stand-in"
"""Display name of the stand-in with ``calibration="real_partial"``."""
STAT_COLUMNS = ("source", "feature", "class", "n", "mean", "std", "q05", "q50", "q95")
DISTANCE_COLUMNS = ("source", "feature", "class", "smd", "std_ratio", "ks")


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic :math:`\\max_v |F_a(v) - F_b(v)|` of empirical CDFs.

    Parameters
    ----------
    a, b : numpy.ndarray
        Samples (1-D, finite, not empty).

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> ks_statistic(np.array([1.0, 2.0, 3.0, 4.0]), np.array([3.0, 4.0, 5.0, 6.0]))
    0.5
    """
    from scipy.stats import ks_2samp

    if len(a) == 0 or len(b) == 0:
        raise DatasetError("ks_statistic needs two non-empty samples")
    return float(ks_2samp(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), method="asymp").statistic)


def smd(a: np.ndarray, b: np.ndarray) -> float:
    """Standardised mean difference :math:`(\\bar a - \\bar b) / \\sqrt{(s_a^2 + s_b^2)/2}` (population std).

    Both constant: 0 when the means agree, else ``inf`` with the sign of the difference.

    Examples
    --------
    >>> smd(np.array([1.0, 3.0]), np.array([0.0, 2.0]))
    1.0
    """
    diff = float(np.mean(a, dtype=np.float64) - np.mean(b, dtype=np.float64))
    scale = float(np.sqrt((np.var(a, dtype=np.float64) + np.var(b, dtype=np.float64)) / 2))
    if scale == 0:
        return 0.0 if diff == 0 else float(np.copysign(np.inf, diff))
    return diff / scale


def class_statistics(real: pd.DataFrame) -> pd.DataFrame:
    """Raw-unit mean and standard deviation of every feature in the benign and the attack rows.

    Parameters
    ----------
    real : pandas.DataFrame
        :func:`fltrust.data.n_baiot.load_n_baiot_real_partial` rows.

    Returns
    -------
    pandas.DataFrame
        Index: the 115 features; columns ``benign_mean``, ``benign_std``, ``attack_mean``,
        ``attack_std`` (population standard deviation, float64).
    """
    out = {}
    x, y = real[list(FEATURE_NAMES)].to_numpy(), real["label"].to_numpy()
    for label, name in enumerate(CLASSES):
        rows = x[y == label]
        if len(rows) == 0:
            raise DatasetError(f"N-BaIoT real rows: no {name} rows to compare with")
        out[f"{name}_mean"] = rows.mean(axis=0, dtype=np.float64)
        out[f"{name}_std"] = rows.std(axis=0, dtype=np.float64)
    return pd.DataFrame(out, index=pd.Index(FEATURE_NAMES, name="feature"))


def standardise_real(real: pd.DataFrame, benign_share: float = STANDIN_BENIGN_SHARE) -> np.ndarray:
    """The real rows' 115 features z-scored as a ``benign_share`` / ``1 - benign_share`` class mixture.

    Parameters
    ----------
    real : pandas.DataFrame
        :func:`fltrust.data.n_baiot.load_n_baiot_real_partial` rows.
    benign_share : float
        Weight of the benign class in the mixture (module docstring).

    Returns
    -------
    numpy.ndarray
        float64 (N, 115); a constant feature keeps standard deviation 1.
    """
    if not 0 < benign_share < 1:
        raise DatasetError(f"benign_share={benign_share!r} must lie in (0, 1)")
    stats = class_statistics(real)
    w = benign_share
    m_b, s_b, m_a, s_a = (stats[c].to_numpy() for c in ("benign_mean", "benign_std", "attack_mean", "attack_std"))
    mean = w * m_b + (1 - w) * m_a
    std = np.sqrt(w * (s_b**2 + (m_b - mean) ** 2) + (1 - w) * (s_a**2 + (m_a - mean) ** 2))
    std = np.where(std > 0, std, 1.0)
    return (real[list(FEATURE_NAMES)].to_numpy(dtype=np.float64) - mean) / std


def _sources(real: pd.DataFrame, standins: Mapping[str, DatasetBundle]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``source -> (x standardised, y)``: the real rows first, then each stand-in's training split."""
    if REAL in standins:
        raise DatasetError(f"a stand-in may not be called {REAL!r}")
    out = {REAL: (standardise_real(real), real["label"].to_numpy(dtype=np.int64))}
    for name, bundle in standins.items():
        if bundle.input_shape != (len(FEATURE_NAMES),):
            raise DatasetError(f"stand-in {name!r} has input shape {bundle.input_shape}, not N-BaIoT's (115,)")
        out[name] = (np.asarray(bundle.train.x, dtype=np.float64), np.asarray(bundle.train.y))
    return out


def _columns(features: Sequence[str]) -> list[int]:
    unknown = [f for f in features if f not in FEATURE_NAMES]
    if unknown:
        raise DatasetError(f"unknown N-BaIoT features {unknown}; use names of fltrust.data.n_baiot.FEATURE_NAMES")
    return [FEATURE_NAMES.index(f) for f in features]


def standin_vs_real(
    real: pd.DataFrame, standins: Mapping[str, DatasetBundle], features: Sequence[str] = KEY_FEATURES
) -> pd.DataFrame:
    """Mean, standard deviation and 5/50/95 % quantiles per source, feature and class, standardised units.

    Parameters
    ----------
    real : pandas.DataFrame
        :func:`fltrust.data.n_baiot.load_n_baiot_real_partial` rows (z-scored by :func:`standardise_real`).
    standins : mapping of str to DatasetBundle
        Stand-ins by display name (their training split is used, already standardised).
    features : sequence of str
        Feature names.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`STAT_COLUMNS`; source ``"real"`` first, then the stand-ins in order.
    """
    columns = _columns(features)
    rows = []
    for source, (x, y) in _sources(real, standins).items():
        for feature, j in zip(features, columns):
            for label, name in enumerate(CLASSES):
                values = x[y == label, j]
                stats = [values.mean(), values.std(), *np.quantile(values, QUANTILES)] if len(values) else [np.nan] * 5
                rows.append({"source": source, "feature": feature, "class": name, "n": len(values),
                             **dict(zip(STAT_COLUMNS[4:], stats))})  # mean, std, q05, q50, q95
    return pd.DataFrame(rows, columns=list(STAT_COLUMNS))


def distance_summary(
    real: pd.DataFrame, standins: Mapping[str, DatasetBundle], features: Sequence[str] = FEATURE_NAMES
) -> pd.DataFrame:
    """SMD, standard deviation ratio and KS statistic of each stand-in against the real rows.

    Parameters
    ----------
    real : pandas.DataFrame
        :func:`fltrust.data.n_baiot.load_n_baiot_real_partial` rows.
    standins : mapping of str to DatasetBundle
        Stand-ins by display name.
    features : sequence of str
        Feature names (default: all 115).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`DISTANCE_COLUMNS`, one row per stand-in, feature and class (module docstring).
    """
    columns = _columns(features)
    sources = _sources(real, standins)
    x_real, y_real = sources.pop(REAL)
    rows = []
    for feature, j in zip(features, columns):
        for label, name in enumerate(CLASSES):
            r = x_real[y_real == label, j]
            s_r = r.std()
            for source, (x, y) in sources.items():
                s = x[y == label, j]
                ratio = s.std() / s_r if s_r > 0 else (np.nan if s.std() == 0 else np.inf)
                rows.append({"source": source, "feature": feature, "class": name, "smd": smd(s, r),
                             "std_ratio": ratio, "ks": ks_statistic(s, r)})
    return pd.DataFrame(rows, columns=list(DISTANCE_COLUMNS))


def class_separation(
    real: pd.DataFrame, standins: Mapping[str, DatasetBundle], features: Sequence[str] = KEY_FEATURES
) -> pd.DataFrame:
    """SMD and KS statistic between the attack and the benign rows within each source.

    Returns
    -------
    pandas.DataFrame
        Columns ``source``, ``feature``, ``smd`` (attack minus benign), ``ks``; ``"real"`` first.
    """
    columns = _columns(features)
    rows = []
    for source, (x, y) in _sources(real, standins).items():
        for feature, j in zip(features, columns):
            attack, benign = x[y == 1, j], x[y == 0, j]
            rows.append({"source": source, "feature": feature, "smd": smd(attack, benign),
                         "ks": ks_statistic(attack, benign)})
    return pd.DataFrame(rows, columns=["source", "feature", "smd", "ks"])


def distance_overview(distances: pd.DataFrame) -> pd.DataFrame:
    """Per stand-in and class over the features in ``distances``: median |SMD|, median and max KS.

    Parameters
    ----------
    distances : pandas.DataFrame
        :func:`distance_summary` output.

    Returns
    -------
    pandas.DataFrame
        Columns ``source``, ``class``, ``features``, ``median_abs_smd``, ``median_ks``, ``max_ks``,
        ``ks_above_0.5`` (features whose KS statistic exceeds 0.5).

    Examples
    --------
    >>> d = pd.DataFrame({"source": ["s", "s"], "feature": ["a", "b"], "class": ["benign", "benign"],
    ...                   "smd": [-1.0, 3.0], "std_ratio": [1.0, 1.0], "ks": [0.25, 0.75]})
    >>> row = distance_overview(d).to_dict("records")[0]
    >>> row["median_abs_smd"], row["median_ks"], row["ks_above_0.5"]
    (2.0, 0.5, 1)
    """
    return _overview(distances, ["source", "class"], largest=True)


def separation_overview(separation: pd.DataFrame) -> pd.DataFrame:
    """Per source over the features in ``separation``: median |SMD| and median KS between its classes.

    Parameters
    ----------
    separation : pandas.DataFrame
        :func:`class_separation` output.

    Returns
    -------
    pandas.DataFrame
        Columns ``source``, ``features``, ``median_abs_smd``, ``median_ks``, ``ks_above_0.5``.
    """
    return _overview(separation, ["source"], largest=False)


def _overview(frame: pd.DataFrame, by: list[str], *, largest: bool) -> pd.DataFrame:
    """Per group of ``by``: its feature count, median |SMD|, median (and largest) KS, features with KS > 0.5."""
    rows = []
    for keys, part in frame.groupby(by, sort=False):
        largest_ks = {"max_ks": float(part["ks"].max())} if largest else {}
        rows.append({**dict(zip(by, keys)), "features": len(part),
                     "median_abs_smd": float(np.median(np.abs(part["smd"]))), "median_ks": float(np.median(part["ks"])),
                     **largest_ks, "ks_above_0.5": int((part["ks"] > 0.5).sum())})
    return pd.DataFrame(rows)


def point_mass_share(real: pd.DataFrame, features: Sequence[str] = KEY_FEATURES) -> dict[str, float]:
    """Share of the real attack rows whose value equals the attack class median, per feature.

    Near 1 means the attack class is (almost) a single point on that feature: the gafgyt floods repeat
    one 60-byte packet pattern.

    Examples
    --------
    >>> rows = pd.DataFrame({"label": [0, 1, 1, 1, 1], "MI_dir_L5_mean": [90.0, 60.0, 60.0, 60.0, 74.0]})
    >>> point_mass_share(rows, ["MI_dir_L5_mean"])
    {'MI_dir_L5_mean': 0.75}
    """
    attack = real.loc[real["label"] == 1, list(features)]
    return {f: float(np.mean(attack[f].to_numpy() == np.median(attack[f].to_numpy()))) for f in features}


def summary_paragraph(
    real: pd.DataFrame, overview: pd.DataFrame, separation: pd.DataFrame, *, features: Sequence[str] = KEY_FEATURES
) -> str:
    """Sentences on how far the stand-in (and, when present, the calibrated one) is from the real rows.

    Parameters
    ----------
    real : pandas.DataFrame
        The real rows.
    overview : pandas.DataFrame
        :func:`distance_overview` of :func:`distance_summary` over all features, with a
        :data:`STANDIN` source (and optionally :data:`CALIBRATED`).
    separation : pandas.DataFrame
        :func:`class_separation` over all features.
    features : sequence of str
        Features of the point-mass statement (:func:`point_mass_share`).

    Returns
    -------
    str
        One paragraph of markdown (for the comparison file and FederatedTrust's RESULTS.md).
    """
    from fltrust.data.n_baiot import real_partial_summary

    summary = real_partial_summary(real)
    by = {(r["source"], r["class"]): r for r in overview.to_dict("records")}
    sep = {r["source"]: r for r in separation_overview(separation).to_dict("records")}
    if (STANDIN, "benign") not in by or STANDIN not in sep:
        raise DatasetError(f"summary_paragraph needs the {STANDIN!r} source in both tables")
    calibrated = (CALIBRATED, "benign") in by and CALIBRATED in sep
    return render("trust/n_baiot_summary.md.j2", rows=summary["rows"], b=by[(STANDIN, "benign")],
                  a=by[(STANDIN, "attack")], share=min(point_mass_share(real, features).values()), real=sep[REAL],
                  standin=sep[STANDIN], calibrated=sep[CALIBRATED] if calibrated else None,
                  cb=by.get((CALIBRATED, "benign")), ca=by.get((CALIBRATED, "attack")))


def _fmt(value: Any, digits: int = 2) -> str:
    value = float(value)
    if np.isnan(value):
        return "–"
    if np.isinf(value):
        return "∞" if value > 0 else "−∞"
    if value != 0 and (abs(value) >= 1e4 or abs(value) < 10 ** -digits):
        return f"{value:.{digits}e}"
    return f"{value:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
                     + ["| " + " | ".join(r) + " |" for r in rows])


def comparison_markdown(
    real: pd.DataFrame,
    stats: pd.DataFrame,
    distances: pd.DataFrame,
    separation: pd.DataFrame,
    *,
    standin_notes: Mapping[str, str],
    command: str,
    figure: str | None = None,
) -> str:
    """The markdown report of the comparison (``papers_repro/federatedtrust/n_baiot_standin_vs_real.md``).

    Parameters
    ----------
    real : pandas.DataFrame
        The real rows (their raw-unit quantiles and counts are printed too).
    stats, distances, separation : pandas.DataFrame
        :func:`standin_vs_real`, :func:`distance_summary` and :func:`class_separation` (both over all
        features; the key-feature tables show the features of ``stats``).
    standin_notes : mapping of str to str
        One line per stand-in: how it was generated.
    command : str
        The command that regenerates the file (named in its first line).
    figure : str, optional
        Path of the figure, named in the text.

    Returns
    -------
    str
        Markdown.
    """
    from fltrust.data.n_baiot import real_partial_summary

    summary = real_partial_summary(real)
    features = list(dict.fromkeys(stats["feature"]))
    overview = distance_overview(distances)
    dist = distances.set_index(["source", "feature", "class"])
    key_rows = []
    for feature in features:
        for name in CLASSES:
            for r in stats[(stats["feature"] == feature) & (stats["class"] == name)].to_dict("records"):
                d = None if r["source"] == REAL else dist.loc[(r["source"], feature, name)]
                key_rows.append([f"`{feature}`", name, r["source"]] + [_fmt(r[k]) for k in STAT_COLUMNS[4:]]
                                + (["", "", ""] if d is None else [_fmt(d[k]) for k in DISTANCE_COLUMNS[3:]]))
    sep = separation.set_index(["source", "feature"])
    sources = list(dict.fromkeys(separation["source"]))
    raw_rows = []
    for feature in features:
        for label, name in enumerate(CLASSES):
            v = real.loc[real["label"] == label, feature].to_numpy(dtype=np.float64)
            raw_rows.append([f"`{feature}`", name, *map(_fmt, [v.mean(), v.std(), *np.quantile(v, QUANTILES)])])
    return render(
        "trust/n_baiot_standin.md.j2", command=command, figure=figure, notes=standin_notes,
        rows=f"{summary['rows']:,}", benign=f"{summary['benign_rows']:,}", attack=f"{summary['attack_rows']:,}",
        devices="; ".join(f"{d}: " + ", ".join(f"{t} {n:,}" for t, n in traffic.items())
                          for d, traffic in summary["devices"].items()),
        mix=f"{STANDIN_BENIGN_SHARE:.0%} benign / {1 - STANDIN_BENIGN_SHARE:.0%} attack",
        summary=summary_paragraph(real, overview, separation, features=features)
        if STANDIN in set(overview["source"]) else None,
        overview=_table(["stand-in", "class", "features", "median abs SMD", "median KS", "max KS", "KS > 0.5"],
                        [[r["source"], r["class"], str(r["features"]), _fmt(r["median_abs_smd"]), _fmt(r["median_ks"]),
                          _fmt(r["max_ks"]), str(r["ks_above_0.5"])] for r in overview.to_dict("records")]),
        key_features=_table(["feature", "class", "source", "mean", "std", "q05", "q50", "q95", "SMD", "std ratio", "KS"],
                            key_rows),
        separation=_table(["source", "features", "median abs SMD", "median KS", "KS > 0.5"],
                          [[r["source"], str(r["features"]), _fmt(r["median_abs_smd"]), _fmt(r["median_ks"]),
                            str(r["ks_above_0.5"])] for r in separation_overview(separation).to_dict("records")]),
        separation_key=_table(["feature"] + [f"{s}: SMD / KS" for s in sources],
                              [[f"`{f}`"] + [f"{_fmt(sep.loc[(s, f), 'smd'])} / {_fmt(sep.loc[(s, f), 'ks'])}"
                                             for s in sources] for f in features]),
        shares=", ".join(f"`{f}` {v:.1%}" for f, v in point_mass_share(real, features).items()),
        raw=_table(["feature", "class", "mean", "std", "q05", "q50", "q95"], raw_rows),
    )


CALIBRATION_MODULE = "fltrust/data/n_baiot_calibration.py"
"""Where :func:`calibration_module_text` is written (repository-relative)."""


def calibration_module_text(real: pd.DataFrame) -> str:
    """Source of :mod:`fltrust.data.n_baiot_calibration`: the real rows' per-class mean and std per feature.

    Parameters
    ----------
    real : pandas.DataFrame
        :func:`fltrust.data.n_baiot.load_n_baiot_real_partial` rows.

    Returns
    -------
    str
        Python source: ``REAL_PARTIAL_ROWS`` and ``REAL_PARTIAL_CLASS_STATS`` (feature ->
        (benign mean, benign std, attack mean, attack std), raw units, 7 significant digits).
    """
    stats = class_statistics(real)
    counts = {name: int((real["label"] == label).sum()) for label, name in enumerate(CLASSES)}
    lines = [
        '"""Per-class statistics of the real N-BaIoT rows of ``real_partial/``: the calibrated stand-in\'s targets.',
        "",
        "Generated by ``python -m fltrust.repro.trust.n_baiot_compare --write-calibration`` from the shared mirror's",
        "``n_baiot/real_partial/`` (data/PROVENANCE.md#n-baiot-real-partial); do not edit by hand. Benign = device 1",
        "(Danmini) benign rows; attack = gafgyt rows of devices 1 (scan), 3 and 5 (tcp, udp), pooled by rows.",
        "Used by :func:`fltrust.data.synthetic.synthetic_n_baiot` with ``calibration=\"real_partial\"``.",
        '"""',
        "",
        f"REAL_PARTIAL_ROWS = {{\"benign\": {counts['benign']}, \"attack\": {counts['attack']}}}",
        '"""Rows the statistics below were computed from."""',
        "",
        "REAL_PARTIAL_CLASS_STATS: dict[str, tuple[float, float, float, float]] = {",
        "    # feature: (benign mean, benign std, attack mean, attack std); raw units, population std",
    ]
    for feature, row in stats.iterrows():
        values = ", ".join(f"{float(v):.7g}" for v in row[["benign_mean", "benign_std", "attack_mean", "attack_std"]])
        lines.append(f'    "{feature}": ({values}),')
    lines += ["}", '"""Feature -> (benign mean, benign std, attack mean, attack std) of the real rows."""', ""]
    return "\n".join(lines)


def write_standin_comparison(
    data_root: str | Path | None = None,
    *,
    figure: str | Path = FIGURE,
    markdown: str | Path = MARKDOWN,
    n_train: int | None = None,
    seed: int = 12345,
) -> dict[str, Any]:
    """Compare the stand-in (and the calibrated stand-in) with the real rows; write the figure and table.

    Parameters
    ----------
    data_root : str or Path, optional
        Data root holding ``n_baiot/real_partial/`` (default: ``$FLTRUST_DATA``, else ``./data``).
    figure, markdown : str or Path
        Output files (written atomically).
    n_train : int, optional
        Stand-in training rows (default: experiments 4-5's, 20,000).
    seed : int
        Stand-in seed (default: experiments 4-5's run seed).

    Returns
    -------
    dict
        DataFrames ``stats`` (:func:`standin_vs_real`), ``distances`` (all 115
        features), ``overview`` (:func:`distance_overview`), ``separation``
        (all features) and ``summary`` (:func:`summary_paragraph`, a str).

    Raises
    ------
    DatasetError
        Missing real files, or files whose SHA-256 differs from the known one.
    """
    import matplotlib.pyplot as plt

    from fltrust.core.io import atomic_write, atomic_write_text
    from fltrust.repro.trust.experiments import NBAIOT_SYNTHETIC_SAMPLES
    from fltrust.viz.n_baiot import plot_standin_vs_real
    from fltrust.data.synthetic import synthetic_n_baiot

    n_train = NBAIOT_SYNTHETIC_SAMPLES if n_train is None else n_train
    real = _real_rows(data_root)
    standins = {
        STANDIN: synthetic_n_baiot(n_train, seed=seed),
        CALIBRATED: synthetic_n_baiot(n_train, seed=seed, calibration="real_partial"),
    }
    notes = {
        STANDIN: f"`synthetic_n_baiot({n_train}, seed={seed})`, the data of FederatedTrust experiment 4 "
                 f"({len(standins[STANDIN].train):,} training rows, "
                 f"{np.mean(standins[STANDIN].train.y == 0):.1%} benign)",
        CALIBRATED: f"`synthetic_n_baiot({n_train}, seed={seed}, calibration=\"real_partial\")` (config "
                    "`data.standin_calibration: real_partial`): the same draws with each class moved to the real "
                    "rows' per-feature mean and std; not used by any committed result",
    }
    frames = {
        "stats": standin_vs_real(real, standins),
        "distances": distance_summary(real, standins),
        "separation": class_separation(real, standins, features=FEATURE_NAMES),
    }
    frames["overview"] = distance_overview(frames["distances"])
    frames["summary"] = summary_paragraph(real, frames["overview"], frames["separation"])
    text = comparison_markdown(real, frames["stats"], frames["distances"], frames["separation"],
                                  standin_notes=notes, command=COMMAND, figure=str(figure))
    atomic_write_text(Path(markdown), text)
    fig, _ = plot_standin_vs_real(frames["stats"])
    atomic_write(Path(figure), lambda handle: fig.savefig(handle, format="png", dpi=120, bbox_inches="tight"))
    plt.close(fig)
    return frames


def _real_rows(data_root: str | Path | None) -> pd.DataFrame:
    """The real rows of ``n_baiot/real_partial/`` under ``data_root``, their files checked against the known SHA-256."""
    from fltrust.data.n_baiot import load_n_baiot_real_partial
    from fltrust.data.registry import checksum_mismatches, dataset_folder, describe_mismatches

    folder = dataset_folder("n_baiot", data_root)
    mismatches = checksum_mismatches("n_baiot", folder)
    if mismatches:
        raise DatasetError(describe_mismatches("n_baiot", folder, mismatches))
    return load_n_baiot_real_partial(folder)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fltrust.repro.trust.n_baiot_compare [--write-calibration] [--data-dir ROOT]``.

    Rewrites the committed figure and table (:func:`write_standin_comparison`), or with
    ``--write-calibration`` the calibration module of the calibrated stand-in.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code, 0.
    """
    import argparse

    import matplotlib

    from fltrust.core.io import atomic_write_text

    matplotlib.use("Agg")
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    parser.add_argument("--write-calibration", action="store_true", help=f"rewrite {CALIBRATION_MODULE}")
    parser.add_argument("--data-dir", default=None, help="data root (default: $FLTRUST_DATA, else ./data)")
    args = parser.parse_args(argv)
    if not args.write_calibration:
        frames = write_standin_comparison(args.data_dir)
        print(frames["overview"].to_string(index=False))
        print(frames["summary"])
        print(f"wrote {FIGURE} and {MARKDOWN}")
        return 0
    atomic_write_text(Path(CALIBRATION_MODULE), calibration_module_text(_real_rows(args.data_dir)))
    print(f"wrote {CALIBRATION_MODULE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
