"""Figure files: a palette PNG, about a third the size of matplotlib's RGBA PNG for line plots.

Reproduction figures are committed (``figures/``) and embedded in the executed summary notebooks; a
figure of 24 panels with a few dozen line colours loses nothing visible at 256 colours, and its file
and the notebook that shows it shrink about three times (Figures 5-8: 0.51-0.67 MB -> 0.16-0.22 MB).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from fltrust.core.io import atomic_write_bytes

__all__ = ["save_png"]


def save_png(fig: Any, path: str | Path, *, dpi: int = 100, colors: int = 256) -> Path:
    """Save ``fig`` as a PNG of at most ``colors`` colours (Pillow's median-cut palette), atomically.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, saved with ``bbox_inches="tight"``.
    path : str or Path
        The PNG file; its folder is created.
    dpi : int
        Resolution of the file.
    colors : int
        Palette size, 2-256.

    Returns
    -------
    Path
        ``path``, to show in a notebook with ``IPython.display.Image(filename=...)``.

    Examples
    --------
    >>> import tempfile
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from PIL import Image
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = save_png(fig, Path(folder) / "line.png", dpi=50)
    ...     Image.open(path).mode
    'P'
    >>> plt.close(fig)
    """
    from PIL import Image

    if not 2 <= colors <= 256:
        raise ValueError(f"colors must be 2-256 (a PNG palette), got {colors}")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    buffer.seek(0)
    image = Image.open(buffer).convert("RGB").quantize(colors=colors)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, out.getvalue())
    return path
