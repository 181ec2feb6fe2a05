"""Pages the fltrust documentation generates at build time, and its offline intersphinx inventories.

Nothing here is copied by hand: every page below is rewritten from the repository on each build,
into ``docs/_generated/`` (ignored by git).

- ``_generated/configuration.md``: every YAML section of :class:`fltrust.config.ExperimentConfig`,
  each key with its type, default, allowed values (from the field's ``Literal`` type, or from the
  section's ``choice(...)`` check) and its description (the section's numpydoc ``Attributes``).
- ``_generated/papers/<paper>.md``: the committed ``papers_repro/<paper>/RESULTS.md`` (generated
  from the committed result files by the reproduction's summary notebook) followed by the
  committed figures of that paper.
- ``_generated/cli.md``: ``fltrust --help`` and every subcommand's, from the argument parser.
- ``_generated/{fairness_modes,trust_modes,trust_scoring}.md``: every mode's switch values, from
  :mod:`fltrust.names` (the user guides include them).
- ``_generated/notebooks/``: the committed executed notebooks students read (the derivations and
  the two papers' executed summaries), rendered by myst-nb without being executed.

Intersphinx inventories. The build runs offline, so the inventories of Python, NumPy, PyTorch,
pandas and Flower cannot be downloaded. :func:`write_inventories` writes one ``objects.inv`` per
project from the installed packages instead: every public class and function of the modules in
:data:`INVENTORIES`, each linked by that project's own URL scheme for its API pages (for example
``https://numpy.org/doc/stable/reference/generated/numpy.mean.html``). A name the scheme does not
cover links to the project's page of that name, which may not exist; only fltrust's own
references are checked (``nitpicky`` in ``conf.py``).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import shutil
import typing
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1]
REPO = DOCS.parent
GENERATED = DOCS / "_generated"

INVENTORIES: dict[str, dict[str, Any]] = {
    "python": {
        "url": "https://docs.python.org/3/",
        "modules": ["builtins", "collections.abc", "dataclasses", "json", "logging", "os", "pathlib", "threading",
                    "typing", "warnings", "contextlib", "functools", "hashlib", "argparse", "io", "types"],
        "page": lambda module, name: ("library/functions.html" if module == "builtins" and name[:1].islower()
                                      else "library/stdtypes.html" if module == "builtins"
                                      else f"library/{module}.html"),
        "anchor": True,
    },
    "numpy": {"url": "https://numpy.org/doc/stable/", "modules": ["numpy", "numpy.random"],
              "page": lambda module, name: f"reference/generated/{module}.{name}.html"},
    "torch": {"url": "https://docs.pytorch.org/docs/stable/",
              "modules": ["torch", "torch.nn", "torch.utils.data", "torch.optim"],
              "page": lambda module, name: f"generated/{module}.{name}.html"},
    "pandas": {"url": "https://pandas.pydata.org/docs/", "modules": ["pandas"],
               "page": lambda module, name: f"reference/api/{module}.{name}.html"},
    "flwr": {"url": "https://flower.ai/docs/framework/",
             "modules": ["flwr.app", "flwr.clientapp", "flwr.serverapp", "flwr.serverapp.strategy", "flwr.simulation",
                         "flwr.server.strategy"],
             "page": lambda module, name: f"ref-api/{module}.{name}.html"},
}
"""Per intersphinx key: the project's documentation root, the modules whose public names enter
its inventory, and the page of one name (relative to the root)."""


# -- intersphinx --------------------------------------------------------------------------------
def _public(module_name: str) -> Iterable[tuple[str, str, str]]:
    """``(full name, role, module)`` of a module's public classes and functions."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name, None)
        if inspect.isclass(obj):
            yield f"{module_name}.{name}", "py:class", module_name
        elif callable(obj):
            yield f"{module_name}.{name}", "py:function", module_name


def write_inventories(folder: Path) -> dict[str, Path]:
    """Write ``<folder>/<key>.inv`` for every project of :data:`INVENTORIES`.

    Parameters
    ----------
    folder : Path
        Where the inventories go (created).

    Returns
    -------
    dict of str to Path
        Intersphinx key -> inventory file.
    """
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for key, spec in INVENTORIES.items():
        lines = []
        for full, role, module in _public_names(spec["modules"]):
            name = full[len(module) + 1:]
            page = spec["page"](module, name)
            display = name if module == "builtins" else full
            anchor = f"#{display}" if spec.get("anchor") else ""
            lines.append(f"{display} {role} 1 {page}{anchor} -")
        header = (f"# Sphinx inventory version 2\n# Project: {key}\n# Version: installed\n"
                  "# The remainder of this file is compressed using zlib.\n").encode()
        path = folder / f"{key}.inv"
        path.write_bytes(header + zlib.compress(("\n".join(sorted(set(lines))) + "\n").encode()))
        out[key] = path
    return out


def _public_names(modules: list[str]) -> Iterable[tuple[str, str, str]]:
    for module in modules:
        yield from _public(module)


def intersphinx_mapping_for(folder: Path) -> dict[str, tuple[str, str]]:
    """The ``intersphinx_mapping`` of ``conf.py``: every project read from its local inventory.

    Parameters
    ----------
    folder : Path
        Where :func:`write_inventories` writes them.

    Returns
    -------
    dict of str to tuple of (str, str)
        Key -> (documentation root, local inventory file).
    """
    paths = write_inventories(folder)
    return {key: (INVENTORIES[key]["url"], str(paths[key])) for key in INVENTORIES}


# -- the configuration reference ----------------------------------------------------------------
def _choices_in_post_init(cls: type) -> dict[str, tuple[Any, ...]]:
    """Field -> allowed values, read from ``choice(section, field, value, allowed)`` calls."""
    try:
        source = inspect.getsource(cls.__post_init__)  # type: ignore[attr-defined]
    except (AttributeError, OSError, TypeError):
        return {}
    module = importlib.import_module(cls.__module__)
    out: dict[str, tuple[Any, ...]] = {}
    for node in ast.walk(ast.parse(source.strip() if source.startswith(" ") else source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "choice" and len(node.args) == 4:
            field_name = node.args[1]
            if isinstance(field_name, ast.Constant):
                try:
                    out[field_name.value] = tuple(eval(compile(ast.Expression(node.args[3]), "<choice>", "eval"),
                                                       vars(module)))  # noqa: S307 - the package's own source
                except Exception:  # noqa: BLE001 - an expression of instance values: no fixed list
                    continue
    return out


def _literal_values(hint: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        values = [v for arg in typing.get_args(hint) for v in (_literal_values(arg) or ())]
        return tuple(values) or None
    return None


def _type_text(hint: Any) -> str:
    text = getattr(hint, "__name__", None) if not typing.get_args(hint) else None
    text = text or str(hint).replace("typing.", "")
    for name in ("fltrust.names.", "fltrust.config.", "NoneType"):
        text = text.replace(name, "None" if name == "NoneType" else "")
    return text


def _attribute_docs(cls: type) -> dict[str, str]:
    from numpydoc.docscrape import ClassDoc

    out: dict[str, str] = {}
    for item in ClassDoc(cls, config={"show_class_members": False})["Attributes"]:
        text = " ".join(" ".join(item.desc).split())
        for name in item.name.split(","):
            out[name.strip()] = text
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_text(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
    else:
        return "required"
    if dataclasses.is_dataclass(value):
        return "(section)"
    return f"`{value!r}`"


def configuration_page() -> str:
    """Markdown of every section and key of :class:`fltrust.config.ExperimentConfig`.

    Returns
    -------
    str
        The page.
    """
    from fltrust.config import ExperimentConfig

    lines = ["# Configuration reference", "",
             "One YAML file per experiment; every section below is optional and every key has the default shown. "
             "Unknown keys and values outside the allowed ones are errors that name the key. This page is generated "
             "from the configuration's dataclasses (`fltrust/config/`) at every documentation build.", ""]

    def section(cls: type, path: str) -> None:
        hints = typing.get_type_hints(cls)
        docs = _attribute_docs(cls)
        choices = _choices_in_post_init(cls)
        nested = []
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        lines.extend([f"## `{path}`", "", summary, "", "| key | type | default | allowed | meaning |",
                      "|---|---|---|---|---|"])
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            if dataclasses.is_dataclass(hint):
                nested.append((hint, f"{path}.{f.name}"))
                lines.append(f"| `{f.name}` | section | | | see [`{path}.{f.name}`](#{path}-{f.name}) |"
                             .replace(".", "-", 0))
                continue
            allowed = _literal_values(hint) or choices.get(f.name)
            allowed_text = ", ".join(f"`{v!r}`" for v in allowed) if allowed else ""
            lines.append(f"| `{f.name}` | {_md_cell(_type_text(hint))} | {_md_cell(_default_text(f))} | "
                         f"{_md_cell(allowed_text)} | {_md_cell(docs.get(f.name, ''))} |")
        lines.append("")
        for cls_, sub in nested:
            section(cls_, sub)

    for f in dataclasses.fields(ExperimentConfig):
        section(typing.get_type_hints(ExperimentConfig)[f.name], f.name)
    return "\n".join(lines) + "\n"


# -- the paper pages and the notebooks ----------------------------------------------------------
PAPERS = {
    "fairness": ("Federated Fairness Analytics", "papers_repro/fairness_analytics", "figures/fairness"),
    "trust": ("FederatedTrust", "papers_repro/federatedtrust", "figures/trust"),
}
NOTEBOOKS = {
    "fairness_derivations.ipynb": "notebooks/fairness/derivations.ipynb",
    "trust_derivations.ipynb": "notebooks/federatedtrust/derivations.ipynb",
    "fairness_summary.ipynb": "papers_repro/fairness_analytics/summary.ipynb",
    "trust_summary.ipynb": "papers_repro/federatedtrust/summary.ipynb",
}


def paper_page(key: str) -> str:
    """Markdown of one paper's page: its committed RESULTS.md, then its committed figures.

    Parameters
    ----------
    key : str
        ``"fairness"`` or ``"trust"``.

    Returns
    -------
    str
        The page (figures are copied beside it by :func:`write_pages`).
    """
    title, folder, figures = PAPERS[key]
    results = (REPO / folder / "RESULTS.md").read_text()
    body = results.split("\n", 1)[1] if results.startswith("# ") else results
    lines = [f"# {title}", "", f"Generated from the committed `{folder}/RESULTS.md` and `{figures}/`; "
             f"regenerate them with `fltrust repro {key if key == 'trust' else 'fairness'}` "
             "(see {doc}`../../guides/reproductions`).", "", body.strip(), "", "## Figures", ""]
    for png in sorted((REPO / figures).glob("*.png")):
        lines += [f"### {png.stem}", "", f"![{png.stem}](figures/{png.name})", ""]
    return "\n".join(lines) + "\n"


def write_pages() -> None:
    """Rewrite ``docs/_generated/`` from the repository (called when a build starts)."""
    for folder in ("papers", "notebooks"):  # _generated/api is autosummary's
        shutil.rmtree(GENERATED / folder, ignore_errors=True)
    (GENERATED / "papers" / "figures").mkdir(parents=True)
    (GENERATED / "notebooks").mkdir(parents=True)
    (GENERATED / "configuration.md").write_text(configuration_page())
    (GENERATED / "cli.md").write_text(cli_page())
    for name, text in mode_tables().items():
        (GENERATED / name).write_text(text)
    for key, (_, _, figures) in PAPERS.items():
        (GENERATED / "papers" / f"{key}.md").write_text(paper_page(key))
        for png in (REPO / figures).glob("*.png"):
            shutil.copy2(png, GENERATED / "papers" / "figures" / png.name)
    for name, source in NOTEBOOKS.items():
        # a notebook links docs/ from two folders down; its copy here sits two folders below docs/
        text = (REPO / source).read_text().replace("](../../docs/", "](../../")
        (GENERATED / "notebooks" / name).write_text(text)


_HTML_ANCHOR = __import__("re").compile(r'^(#+ )<a id="([\w-]+)"></a>', __import__("re").M)


def html_anchors_as_targets(app, docname: str, source: list[str]) -> None:
    """``source-read`` handler: a heading that carries an HTML anchor (``## <a id="trust-9"></a>...``,
    how docs/references.md marks the sections its citations name, readable on a code host too) also
    gets a MyST target of that name, so ``[...](#trust-9)`` resolves in the site."""
    source[0] = _HTML_ANCHOR.sub(lambda m: f"({m.group(2)})=\n{m.group(1)}", source[0])


def skip_type_aliases(app, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """``autodoc-skip-member`` handler: module-level generic aliases (``Params = list[np.ndarray]``)
    are described by a ``py:data`` entry in their module's docstring (autodoc cannot sign them), and
    type variables are left out."""
    if what == "module" and (type(obj).__name__ == "GenericAlias" or isinstance(obj, typing.TypeVar)):
        return True  # type variables are no objects a reader looks up (numpydoc cannot parse them either)
    return None


def setup(app) -> dict[str, Any]:
    """Sphinx entry point: regenerate the pages before the sources are read."""
    app.connect("builder-inited", lambda _app: write_pages())
    app.connect("missing-reference", resolve_reexport)
    app.connect("source-read", html_anchors_as_targets)
    app.connect("autodoc-skip-member", skip_type_aliases)
    app.connect("autodoc-process-docstring", escape_absolute_values)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# -- the modes' tables --------------------------------------------------------------------------
def mode_tables() -> dict[str, str]:
    """Markdown tables of every mode's switch values, from :mod:`fltrust.names`.

    Returns
    -------
    dict of str to str
        ``"fairness_modes.md"`` and ``"trust_modes.md"`` -> table.
    """
    from fltrust import names

    def table(defaults: dict[str, dict[str, Any]], first: str) -> str:
        modes = list(defaults)
        keys = list(dict.fromkeys(k for d in defaults.values() for k in d))
        rows = [f"| {first} | " + " | ".join(f"`{m}`" for m in modes) + " |", "|---" * (len(modes) + 1) + "|"]
        for key in keys:
            cells = []
            for mode in modes:
                value = defaults[mode].get(key)
                if isinstance(value, tuple):
                    value = ", ".join(value) if value else "none"
                cells.append(f"`{value}`" if value is not None else "")
            rows.append(f"| `{key}` | " + " | ".join(cells) + " |")
        return "\n".join(rows) + "\n"

    return {
        "fairness_modes.md": table(names.FAIRNESS_MODE_DEFAULTS, "switch (`metrics.fairness.`)"),
        "trust_modes.md": table(names.TRUST_MODE_DEFAULTS, "statistic switch"),
        "trust_scoring.md": table(names.TRUST_SCORING_DEFAULTS, "scoring"),
    }


# -- the command line ---------------------------------------------------------------------------
def cli_page() -> str:
    """Markdown of ``fltrust --help`` and every subcommand's help, from :func:`fltrust.cli.build_parser`.

    Returns
    -------
    str
        The page.
    """
    import argparse
    import os

    from fltrust.cli import build_parser

    os.environ.setdefault("COLUMNS", "100")
    lines = ["# Command line", "", "`fltrust` (or `python -m fltrust`); generated from the parser at every build. "
             "Exit codes: 0 ok, 1 a run diverged or some batch conditions failed, 2 usage, configuration or data "
             "error, 3 filesystem error, 4 run folder in use or corrupt, 70 internal error, 130 interrupted.", ""]

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        title = " ".join(["fltrust", *words])
        lines.extend([f"## `{title}`" if words else "## `fltrust`", "", "```text", parser.format_help().rstrip(),
                      "```", ""])
        for action in parser._actions:  # argparse keeps its subparsers here
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])

    walk(build_parser(), [])
    return "\n".join(lines) + "\n"


# -- references to re-exported names ------------------------------------------------------------
def _canonical_names(target: str) -> list[str]:
    """Where the object a dotted ``fltrust.`` name reaches is defined (``fltrust.flower.instrument``
    -> ``fltrust.flower.app.instrument``): its class or function's own module, or for plain data the
    submodules of the named package that bind the same object."""
    import sys

    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return []
        break
    else:
        return []
    if inspect.ismodule(obj):
        return [obj.__name__]
    names = []
    owner = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(owner, str) and isinstance(qualname, str) and owner.startswith("fltrust"):
        names.append(f"{owner}.{qualname}")
    package, name = ".".join(parts[:-1]), parts[-1]
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith(package + ".") and getattr(module, name, None) is obj:
            names.append(f"{module_name}.{name}")
    return names


def resolve_reexport(app, env, node, contnode):
    """``missing-reference`` handler: point a reference to a re-exported fltrust name at the page
    where the object is documented (the module that defines it)."""
    from sphinx.util.nodes import make_refnode

    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("fltrust."):
        return None
    objects = env.get_domain("py").objects
    for name in _canonical_names(target):
        entry = objects.get(name)
        if entry is not None:
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name)
    return None


_LITERAL = __import__("re").compile(r"(``.+?``|:\w+:`[^`]+`|`[^`]+`_?)")
_BARS = __import__("re").compile(r"(?<![\\\w|])\|(?=\S)([^|\n]*?\S)\|(?![\w|])")


def escape_absolute_values(app, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """``autodoc-process-docstring`` handler: ``|x|`` in fltrust's docstrings is an absolute value
    or a set size (``|Δ F_T| <= 0.05``, ``|S_k|``), never an RST substitution; escape its bars.
    Inline literals and roles keep theirs; so do line blocks and table rows (a line opening with "| ")."""
    if not name.startswith("fltrust"):
        return
    for k, line in enumerate(lines):
        if line.lstrip().startswith("| ") or line.strip() == "|":  # a line block or a table row
            continue
        parts = _LITERAL.split(line)
        lines[k] = "".join(part if i % 2 else _BARS.sub(r"\\|\1\\|", part) for i, part in enumerate(parts))
