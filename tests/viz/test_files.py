"""fltrust.viz.files.save_png: a palette PNG of the figure, smaller than matplotlib's own."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from fltrust.viz.files import save_png


@pytest.fixture
def fig():
    fig, axes = plt.subplots(2, 2, figsize=(6, 5))
    rng = np.random.default_rng(0)
    for ax in axes.flat:
        for _ in range(6):
            ax.plot(np.cumsum(rng.normal(size=30)))
    yield fig
    plt.close(fig)


def test_the_file_is_a_palette_png_of_the_figures_pixels_and_smaller(fig, tmp_path):
    path = save_png(fig, tmp_path / "sub" / "f.png", dpi=80)
    fig.savefig(tmp_path / "plain.png", dpi=80, bbox_inches="tight")

    ours, plain = Image.open(path), Image.open(tmp_path / "plain.png")
    assert ours.mode == "P" and len(ours.getcolors(256)) <= 256
    assert ours.size == plain.size
    assert path.stat().st_size < (tmp_path / "plain.png").stat().st_size
    # every pixel stays close to matplotlib's (a palette of 256 colours over a few line colours)
    diff = np.abs(np.asarray(ours.convert("RGB"), int) - np.asarray(plain.convert("RGB"), int))
    assert np.percentile(diff, 99) <= 16


def test_a_palette_outside_2_256_is_refused(fig, tmp_path):
    with pytest.raises(ValueError, match="colors must be 2-256"):
        save_png(fig, tmp_path / "f.png", colors=300)
