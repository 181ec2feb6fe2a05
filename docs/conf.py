"""Sphinx configuration of the fltrust documentation (``make docs``).

The build is offline and reads only the repository: the API reference comes from the docstrings
(numpydoc), the committed executed notebooks are rendered without being executed (myst-nb), the
configuration reference and the two paper pages are generated from the code and the committed
results at build time (``docs/_ext/fltrust_docs.py``), and the intersphinx inventories of Python,
NumPy, PyTorch, pandas and Flower are written from the installed packages (see that module).
Warnings are errors (``-W --keep-going``); references to ``fltrust.`` objects are checked
(nitpicky), references to other projects are not.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(DOCS / "_ext"))

import fltrust  # noqa: E402
from fltrust_docs import INVENTORIES, intersphinx_mapping_for  # noqa: E402

project = "fltrust"
author = "the fltrust developers"
copyright = "2026, the fltrust developers"  # noqa: A001 - Sphinx's name
release = version = fltrust.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into _static: the formulas render without a network
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "fltrust_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints", "jupyterlab.png",
                    "_generated/fairness_modes.md", "_generated/trust_modes.md", "_generated/trust_scoring.md"]
templates_path = ["_templates"]

# -- notebooks: rendered as committed, never executed ----------------------------------------
nb_execution_mode = "off"
nb_output_stderr = "show"  # the derivations show the library's warnings on purpose
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_ref_domains = ["std"]  # a Markdown link [..](#x) is a page target, never a Python object named x
suppress_warnings = [
    # the notebooks' cells print through matplotlib's and pandas' own mimetypes; myst-nb picks one
    "mystnb.unknown_mime_type",
]

# -- API reference ---------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
# every public name a module defines (with a docstring), not only its __all__: the docstrings refer to
# module constants and helpers; names a package __init__ re-exports stay documented where they are defined
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_attributes_as_param_list = False  # each attribute a target, so :attr: references resolve
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- references ------------------------------------------------------------------------------
nitpicky = True
nitpick_ignore = [
    # type variables (of the generic registries, the memo, FedSV's players): not objects a reader looks up
    ("py:obj", "fltrust.registry.T"),
    ("py:obj", "fltrust.trust.scoring.registry.Entry"),
    ("py:obj", "fltrust.trust.measures.memo.T"),
    ("py:obj", "fltrust.metrics.shapley.federated.PlayerT"),
]
nitpick_ignore_regex = [
    # only fltrust's own references are checked; other projects resolve through intersphinx when
    # their inventory has the name and stay plain text otherwise
    (r"py:.*", r"(?!fltrust\.|~fltrust\.).*"),
]
intersphinx_mapping = intersphinx_mapping_for(DOCS / "_build" / "inventories")
intersphinx_timeout = 1

# -- output ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"fltrust {release}"
html_theme_options = {
    "navigation_depth": 3,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
html_copy_source = False
__all__ = ["INVENTORIES"]
