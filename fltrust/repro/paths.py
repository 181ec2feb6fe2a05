"""The root of the reproduction's files: the fltrust checkout.

The paper folders (``papers_repro/``: configurations, the papers' numbers, committed results and
RESULTS.md), ``notebooks/``, ``figures/`` and ``runs/`` are files of the checkout, not of the Python
package, so a package installed from a wheel has to be told where they are. :func:`repo_root` is
the one place that decides; every ``fltrust.repro`` module takes its folders from it.

The root is, in this order:

1. the ``root`` argument;
2. ``$FLTRUST_REPO`` (it must hold ``papers_repro/``);
3. the checkout the package was imported from (a source tree or an editable install), when it
   holds ``papers_repro/``;
4. the current directory or its nearest parent holding ``papers_repro/`` (a wheel used from
   inside a checkout);
5. else the current directory: nothing fails on import, and the first file the reproduction
   reads names the path it looked for.

Example
-------
::

    FLTRUST_REPO=~/src/fltrust fltrust repro fairness --quick   # a wheel install, run from anywhere
"""

from __future__ import annotations

import os
from pathlib import Path

from fltrust.config import ConfigError

__all__ = ["MARKER", "REPO_ENV", "is_checkout", "repo_root"]

REPO_ENV = "FLTRUST_REPO"
"""Environment variable naming the checkout."""

MARKER = "papers_repro"
"""The folder that makes a directory a checkout for the reproduction."""

_PACKAGE_CHECKOUT = Path(__file__).resolve().parents[2]
"""The folder above the ``fltrust`` package: the checkout in a source tree, ``site-packages`` in a wheel install."""


def is_checkout(folder: str | os.PathLike[str]) -> bool:
    """True when ``folder`` holds ``papers_repro/`` (:data:`MARKER`)."""
    return (Path(folder) / MARKER).is_dir()


def repo_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The checkout whose ``papers_repro/``, ``notebooks/``, ``figures/`` and ``runs/`` the reproduction uses.

    Parameters
    ----------
    root : str or path-like, optional
        Use this folder (``~`` is expanded); the default follows the order of the module docstring:
        ``$FLTRUST_REPO``, the package's own checkout, the current directory's checkout, the current
        directory.

    Returns
    -------
    Path
        An absolute path.

    Raises
    ------
    fltrust.config.ConfigError
        If ``$FLTRUST_REPO`` is set to a folder without ``papers_repro/``.
    """
    if root is not None:
        return Path(root).expanduser().resolve()
    env = os.environ.get(REPO_ENV)
    if env:
        path = Path(env).expanduser().resolve()
        if not is_checkout(path):
            raise ConfigError(f"{REPO_ENV}={env} has no {MARKER}/ folder; set it to the fltrust checkout or unset it")
        return path
    if is_checkout(_PACKAGE_CHECKOUT):
        return _PACKAGE_CHECKOUT
    cwd = Path.cwd().resolve()
    return next((folder for folder in (cwd, *cwd.parents) if is_checkout(folder)), cwd)
