"""Figure of the N-BaIoT stand-in against the real rows (FederatedTrust experiments 4-5).

=================================  ==============================================================
function                           input
=================================  ==============================================================
:func:`plot_standin_vs_real`       :func:`fltrust.data.n_baiot_compare.standin_vs_real`
:func:`write_standin_comparison`   the real ``real_partial/`` rows; writes the figure and the table
=================================  ==============================================================

Regenerate both committed files from the repository root with ``python -m fltrust.viz.n_baiot``
(``figures/n_baiot_standin_vs_real.png``, ``papers_repro/federatedtrust/n_baiot_standin_vs_real.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fltrust.data import n_baiot_compare as nc
from fltrust.viz.fairness import PlotInputError, figure_title

__all__ = ["FIGURE", "MARKDOWN", "plot_standin_vs_real", "write_standin_comparison"]

FIGURE = "figures/n_baiot_standin_vs_real.png"
MARKDOWN = "papers_repro/federatedtrust/n_baiot_standin_vs_real.md"
STANDIN, CALIBRATED = nc.STANDIN, nc.CALIBRATED
COMMAND = "python -m fltrust.viz.n_baiot"
STANDIN_TRAIN_ROWS = 20_000
"""Training rows of the stand-in compared: experiments 4-5's (viz does not import the reproduction;
a test checks that this is ``fltrust.repro.trust.experiments.NBAIOT_SYNTHETIC_SAMPLES``)."""


def plot_standin_vs_real(
    stats: pd.DataFrame, *, features: Sequence[str] | None = None, ncols: int = 3
) -> tuple[Any, Any]:
    """Per feature, benign and attack: the 5-95 % range, median and mean of each source.

    One panel per feature; per class one vertical bar per source (real first) from the 5 % to the
    95 % quantile, a dot at the median and a cross at the mean (standardised units: 0 = the pooled
    mean, 1 = one pooled standard deviation).

    Parameters
    ----------
    stats : pandas.DataFrame
        :func:`fltrust.data.n_baiot_compare.standin_vs_real` output (columns ``source``, ``feature``,
        ``class``, ``mean``, ``q05``, ``q50``, ``q95``).
    features : sequence of str, optional
        Panels, in order (default: every feature of ``stats``).
    ncols : int
        Panels per row.

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : numpy.ndarray of Axes
        One per panel slot (unused slots are hidden).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.lines import Line2D

    missing = [c for c in ("source", "feature", "class", "mean", "q05", "q50", "q95") if c not in stats.columns]
    if missing:
        raise PlotInputError(
            f"stats lacks columns {missing}; build it with fltrust.data.n_baiot_compare.standin_vs_real"
        )
    features = list(dict.fromkeys(stats["feature"])) if features is None else list(features)
    unknown = [f for f in features if f not in set(stats["feature"])]
    if not features or unknown:
        raise PlotInputError(f"no rows for features {unknown or features} in stats")
    sources = list(dict.fromkeys(stats["source"]))
    colours = dict(zip(sources, sns.color_palette("colorblind", len(sources))))
    nrows = math.ceil(len(features) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    width = 0.7 / len(sources)
    for ax, feature in zip(axes.flat, features):
        for c, name in enumerate(nc.CLASSES):
            for s, source in enumerate(sources):
                row = stats[(stats["feature"] == feature) & (stats["class"] == name) & (stats["source"] == source)]
                if row.empty:
                    continue
                r = row.iloc[0]
                x = c + (s - (len(sources) - 1) / 2) * width
                ax.vlines(x, r["q05"], r["q95"], colors=[colours[source]], linewidth=5, alpha=0.55)
                ax.plot([x], [r["q50"]], "o", color=colours[source], markeredgecolor="black", markersize=5)
                ax.plot([x], [r["mean"]], "x", color="black", markersize=6)
        ax.set_xticks(range(len(nc.CLASSES)), list(nc.CLASSES))
        ax.set_xlim(-0.6, len(nc.CLASSES) - 0.4)
        ax.set_title(feature, fontsize=10)
        ax.axhline(0.0, color="grey", linewidth=0.5)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(features):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("standardised value")
    handles = [Line2D([], [], color=colours[s], linewidth=5, alpha=0.55, label=f"{s}: 5-95 %") for s in sources]
    handles += [Line2D([], [], marker="o", linestyle="", color="white", markeredgecolor="black", label="median"),
                Line2D([], [], marker="x", linestyle="", color="black", label="mean")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    fig.suptitle(figure_title("N-BaIoT: stand-in vs real rows (devices 1, 3, 5), per class, standardised units",
                              synthetic=True), fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig, axes


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
        DataFrames ``stats`` (:func:`~fltrust.data.n_baiot_compare.standin_vs_real`), ``distances`` (all 115
        features), ``overview`` (:func:`~fltrust.data.n_baiot_compare.distance_overview`), ``separation``
        (all features) and ``summary`` (:func:`~fltrust.data.n_baiot_compare.summary_paragraph`, a str).

    Raises
    ------
    DatasetError
        Missing real files, or files whose SHA-256 differs from the known one.
    """
    import io

    import matplotlib.pyplot as plt

    from fltrust.core.io import atomic_write_bytes, atomic_write_text
    from fltrust.data.base import DatasetError
    from fltrust.data.n_baiot import FEATURE_NAMES, load_n_baiot_real_partial
    from fltrust.data.registry import checksum_mismatches, dataset_folder, describe_mismatches
    from fltrust.data.synthetic import synthetic_n_baiot

    n_train = STANDIN_TRAIN_ROWS if n_train is None else n_train
    folder = dataset_folder("n_baiot", data_root)
    mismatches = checksum_mismatches("n_baiot", folder)
    if mismatches:
        raise DatasetError(describe_mismatches("n_baiot", folder, mismatches))
    real = load_n_baiot_real_partial(folder)
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
        "stats": nc.standin_vs_real(real, standins),
        "distances": nc.distance_summary(real, standins),
        "separation": nc.class_separation(real, standins, features=FEATURE_NAMES),
    }
    frames["overview"] = nc.distance_overview(frames["distances"])
    frames["summary"] = nc.summary_paragraph(real, frames["overview"], frames["separation"])
    text = nc.comparison_markdown(real, frames["stats"], frames["distances"], frames["separation"],
                                  standin_notes=notes, command=COMMAND, figure=str(figure))
    atomic_write_text(Path(markdown), text)
    fig, _ = plot_standin_vs_real(frames["stats"])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(Path(figure), buffer.getvalue())
    return frames


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fltrust.viz.n_baiot [--data-dir ROOT]``: rewrite the committed figure and table."""
    import argparse

    import matplotlib

    matplotlib.use("Agg")
    parser = argparse.ArgumentParser(prog=COMMAND, description="N-BaIoT stand-in vs real rows: figure and table")
    parser.add_argument("--data-dir", default=None, help="data root (default: $FLTRUST_DATA, else ./data)")
    args = parser.parse_args(argv)
    frames = write_standin_comparison(args.data_dir)
    print(frames["overview"].to_string(index=False))
    print(frames["summary"])
    print(f"wrote {FIGURE} and {MARKDOWN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
