"""The N-BaIoT stand-in vs real figure (fltrust.viz.n_baiot) and the writer of the committed files
(fltrust.repro.trust.n_baiot_compare.write_standin_comparison)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fltrust.data import DatasetError, n_baiot
from fltrust.data.cache import CACHE_ENV
from fltrust.viz.fairness import PlotInputError
from fltrust.repro.trust.n_baiot_compare import write_standin_comparison
from fltrust.viz.n_baiot import plot_standin_vs_real


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def stats() -> pd.DataFrame:
    """Two features x two classes x two sources; q05 = 10 f + c - 1, q50 = 10 f + c, q95 = 10 f + c + 1 (+ s/10)."""
    rows = []
    for s, source in enumerate(["real", "stand-in"]):
        for f, feature in enumerate(["MI_dir_L5_weight", "HH_L5_magnitude"]):
            for c, name in enumerate(["benign", "attack"]):
                mid = 10 * f + c + s / 10
                rows.append({"source": source, "feature": feature, "class": name, "n": 5, "mean": mid + 0.5,
                             "std": 1.0, "q05": mid - 1, "q50": mid, "q95": mid + 1})
    return pd.DataFrame(rows)


def test_plot_draws_each_quantile_range(stats):
    fig, axes = plot_standin_vs_real(stats)

    visible = [ax for ax in axes.flat if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["MI_dir_L5_weight", "HH_L5_magnitude"]
    assert len(axes.flat) == 3 and not axes.flat[2].get_visible()
    # per panel: 4 bars (2 classes x 2 sources), each from q05 to q95 of its row
    spans = sorted((float(seg[0, 1]), float(seg[1, 1]))
                   for coll in visible[1].collections for seg in coll.get_segments())
    expected = sorted((r.q05, r.q95) for r in stats[stats["feature"] == "HH_L5_magnitude"].itertuples())
    np.testing.assert_allclose(spans, expected)
    medians = sorted(float(line.get_ydata()[0]) for line in visible[0].get_lines() if line.get_marker() == "o")
    assert medians == pytest.approx(sorted(stats[stats["feature"] == "MI_dir_L5_weight"]["q50"]))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["real: 5-95 %", "stand-in: 5-95 %", "median", "mean"]
    assert fig._suptitle.get_text().startswith("[SYNTHETIC data]")


def test_plot_rejects_incomplete_tables(stats):
    with pytest.raises(PlotInputError, match=r"lacks columns \['q95'\]"):
        plot_standin_vs_real(stats.drop(columns="q95"))
    with pytest.raises(PlotInputError, match=r"no rows for features \['H_L0.01_mean'\]"):
        plot_standin_vs_real(stats, features=["H_L0.01_mean"])


def _labelled_csv(path, rows, normal):
    header = ",".join(list(n_baiot.FEATURE_NAMES) + ["Normal"])
    body = "\n".join(",".join([repr(float(v)) for v in row] + [str(n)]) for row, n in zip(rows, normal))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "\n" + body + "\n")


def test_writer_makes_the_figure_and_the_table(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    _labelled_csv(tmp_path / "root" / "n_baiot" / "real_partial" / "2.benign+mirai.syn.csv",
                  rng.gamma(2.0, 30.0, (40, 115)), [1] * 25 + [0] * 15)

    frames = write_standin_comparison(tmp_path / "root", figure=tmp_path / "fig.png", markdown=tmp_path / "t.md",
                                      n_train=300, seed=0)

    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (tmp_path / "t.md").read_text()
    assert "40 rows (25 benign, 15 attack)" in text and "Ecobee_Thermostat: benign 25, mirai.syn 15" in text
    assert len(frames["distances"]) == 2 * 115 * 2  # two stand-ins, every feature, both classes
    assert frames["overview"]["features"].tolist() == [115] * 4


def test_writer_refuses_files_that_differ_from_the_known_ones(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    _labelled_csv(tmp_path / "n_baiot" / "real_partial" / "1.benign+gafgyt.scan.Danmini_Doorbell.csv",
                  np.ones((4, 115)), [1, 1, 0, 0])

    with pytest.raises(DatasetError, match=r"Danmini_Doorbell\.csv: sha256 \w+ differs from the known b6103be3"):
        write_standin_comparison(tmp_path, figure=tmp_path / "fig.png", markdown=tmp_path / "t.md", n_train=300)
    assert not (tmp_path / "t.md").exists()
