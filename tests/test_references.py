"""Every spec and bug reference in the repository is defined in ``docs/references.md``.

Docstrings, comments, notebooks and reports cite the project's re-implementation notes as
"fairness spec §6.6", "trust spec 7.3", "spec §9, item 3" (the paper follows from the file when
the word is left out) and the FederatedTrust prototype bugs as "B1" ... "B16". Each citation
must resolve to an anchor of ``docs/references.md`` (``#fairness-6-6``, ``#trust-7-3``,
``#fairness-9-item-3``, ``#trust-b11``), and no file may point at the notes' old location outside
the repository. A module's comments and docstrings link every entry they cite at least once
(``trust spec §3.10 (docs/references.md#trust-3-10)``), so a reader can follow a citation from the
module itself; no module carries a general pointer to the page instead. Citations of the data
mirror's provenance name a section of ``data/PROVENANCE.md`` (``data/PROVENANCE.md#n-baiot-a1``).
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "references.md"
SCANNED = ("fltrust", "notebooks", "tests", "papers_repro", "examples", "benchmarks", "README.md")
"""Folders (and files) whose text is searched for citations."""
NO_OUTSIDE = ("fltrust", "notebooks", "tests", "papers_repro", "README.md")
"""Folders (and files) that must not cite the notes by a path outside the repository."""
SUFFIXES = (".py", ".md", ".ipynb", ".yaml", ".yml", ".toml", ".txt", ".cfg")
SELF = Path(__file__).resolve()
SKIPPED_PARTS = frozenset({"runs", "__pycache__", ".ipynb_checkpoints", ".pytest_cache"})
"""Generated folders (git-ignored run folders and caches) are not searched."""
VENDORED = REPO / "tests" / "trust" / "golden"
"""The prototype's own example files (only their README is ours)."""

_NUMBER = r"\d+(?:\.\d+)*"
_SEP = r"[ \t]*(?:,|\band\b|-|\u2013)[ \t]*§?[ \t]*"
SPEC = re.compile(
    rf"\b(?:(?P<paper>fairness|trust)\s+)?spec(?:'s)?(?![\w])[\s-]*(?:sections?\s+|\(\s*)?§?\s*"
    rf"(?P<numbers>{_NUMBER}(?:{_SEP}{_NUMBER})*)",
    re.IGNORECASE,
)
"""``[fairness|trust] spec[ section|§]N[.M][, N and N-N]``; the paper word is optional."""
DEFINITION = re.compile(r"^[ \t]*(?:class|def)[ \t]+(?P<name>\w+)", re.MULTILINE)
"""A Python class or function header: in a module about both papers, its name says which one."""
BARE = re.compile(rf"§\s*(?P<numbers>{_NUMBER})")
"""A section sign without the word "spec" (``(§2 notions, §8 protocol)``)."""
ITEM = re.compile(r",?\s+items?\s+(?P<item>\d+)")
"""``§9, item 3``: a numbered item of a section (only fairness spec §9 has items cited)."""
BUG = re.compile(r"\bB(?P<bug>\d{1,2})\b")
"""A FederatedTrust prototype bug id, B1 ... B16."""
OUTSIDE = re.compile(r"shared/specs|specs/(?:federatedtrust|fairness_analytics)|\b(?:federatedtrust|fairness_analytics)\.md\b")
"""The notes' old location beside the checkout (``../shared/specs/...``)."""
ANCHOR = re.compile(r'<a id="(?P<id>[a-z0-9-]+)"></a>')
LINK = re.compile(r"docs/references\.md#(?P<first>[a-z0-9-]+)(?P<more>(?:,[ \t]*\n?[ \t]*#[a-z0-9-]+)*)")
"""A link to entries of the page: ``docs/references.md#trust-3-10``, ``docs/references.md#fairness-6-5, #fairness-6-7``."""
BOILERPLATE = re.compile(r"Spec and bug references\b.{0,80}are defined in", re.DOTALL)
"""The line modules used to carry instead of linking their citations."""
DATA_PAGE = REPO / "data" / "PROVENANCE.md"
DATA_CITATION = re.compile(r"(?P<path>[\w./]*)PROVENANCE(?![_\w])(?P<md>\.md)?(?:#(?P<anchor>[a-z0-9-]+))?")
"""A citation of the data mirror's provenance: ``data/PROVENANCE.md#n-baiot-a1`` (a bare ``PROVENANCE``
or a ``PROVENANCE.md`` elsewhere is a file the kit's users do not have)."""


def default_paper(path: Path) -> str | None:
    """The paper a bare "spec N" in ``path`` refers to, or ``None`` when the file is about both."""
    rel = path.relative_to(REPO).as_posix()
    if rel.startswith("fltrust/"):
        rel = rel[len("fltrust/"):]
    parts = rel.split("/")
    trust = any(p in ("trust", "federatedtrust") or "trust" in p.split(".")[0].split("_") for p in parts)
    fairness = any(
        p in ("metrics", "fairness", "fairness_analytics") or "fairness" in p.split(".")[0].split("_") for p in parts
    )
    if trust == fairness:
        return None
    return "trust" if trust else "fairness"


def _numbers(text: str) -> list[str]:
    """Section numbers of a list such as ``2, 3 and 9`` or ``4-6`` (integer ranges expanded)."""
    out: list[str] = []
    for match in re.finditer(rf"({_NUMBER})(?:[ \t]*[-\u2013][ \t]*§?[ \t]*({_NUMBER}))?", text):
        first, last = match.group(1), match.group(2)
        out.append(first)
        if last:
            if first.isdigit() and last.isdigit():
                out += [str(n) for n in range(int(first) + 1, int(last) + 1)]
            else:
                out.append(last)
    return out


def anchor(paper: str, section: str) -> str:
    """``anchor("trust", "7.3") == "trust-7-3"``."""
    return f"{paper}-{section.replace('.', '-')}"


def citations(text: str, paper: str | None) -> Iterator[tuple[int, str]]:
    """``(line, anchor)`` of every citation in ``text``; anchor ``"?-N"`` when the paper is unknown.

    >>> sorted(set(a for _, a in citations("(trust spec 3.3, 3.8 and 5; B4)", None)))
    ['trust-3-3', 'trust-3-8', 'trust-5', 'trust-b4']
    >>> sorted(a for _, a in citations("see spec §9, item 3 and §2.4", "fairness"))
    ['fairness-2-4', 'fairness-9', 'fairness-9-item-3']
    >>> [a for _, a in citations("spec 12.4", None)]
    ['?-12-4']
    """
    covered: list[tuple[int, int]] = []

    def line(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    def enclosing(pos: int) -> str | None:
        """The paper named by the nearest class or function header above ``pos``, else its class."""
        headers = list(DEFINITION.finditer(text, 0, pos))
        nearest = headers[-1:] + [m for m in reversed(headers) if m.group(0).lstrip().startswith("class")][:1]
        for header in nearest:
            for candidate in ("fairness", "trust"):
                if candidate in header.group("name").lower():
                    return candidate
        return None

    def emit(match: re.Match, which: str | None) -> Iterator[tuple[int, str]]:
        which = which or enclosing(match.start())
        numbers = _numbers(match.group("numbers"))
        for number in numbers:
            yield line(match.start()), anchor(which or "?", number)
        item = ITEM.match(text, match.end())
        if item and numbers and numbers[-1] == "9":
            yield line(match.start()), f"{which or '?'}-9-item-{item.group('item')}"

    for match in SPEC.finditer(text):
        covered.append((match.start(), match.end()))
        given = match.group("paper")
        yield from emit(match, given.lower() if given else paper)
    for match in BARE.finditer(text):
        if not any(start <= match.start() < end for start, end in covered):
            yield from emit(match, paper)
    for match in BUG.finditer(text):
        yield line(match.start()), f"trust-b{match.group('bug')}"


def scanned_files(roots: tuple[str, ...]) -> Iterator[Path]:
    """The files under ``roots`` whose text is ours (sources, docs, notebooks, definitions)."""
    for name in roots:
        root = REPO / name
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in paths:
            rel = path.relative_to(REPO)
            if (
                path.is_file()
                and path.suffix in SUFFIXES
                and path.resolve() != SELF
                and not SKIPPED_PARTS.intersection(rel.parts)
                and not path.name.endswith(".out.ipynb")  # executed copies (git-ignored)
                and not (rel.parts[0] == "papers_repro" and "notebooks" in rel.parts)  # likewise
                and not (path.parent == VENDORED and path.name != "README.md")
            ):
                yield path


def source_texts(path: Path) -> list[tuple[str, str]]:
    """``(where, text)`` of a file: its whole text, or for a notebook each cell's source (not outputs)."""
    rel = path.relative_to(REPO).as_posix()
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return [(rel, text)]
    cells = json.loads(text)["cells"]
    return [(f"{rel} cell {i}", "".join(cell["source"])) for i, cell in enumerate(cells, 1)]


def linked(text: str) -> set[str]:
    """The anchors ``text`` links, a section counted as linked with one of its items.

    >>> sorted(linked("spec 6.7 and 9, item 7 (docs/references.md#fairness-6-7, #fairness-9-item-7)"))
    ['fairness-6-7', 'fairness-9', 'fairness-9-item-7']
    """
    out = set()
    for match in LINK.finditer(text):
        out.add(match["first"])
        out.update(re.findall(r"#([a-z0-9-]+)", match["more"]))
    return out | {name.split("-item-")[0] for name in out if "-item-" in name}


def prose_lines(text: str) -> set[int]:
    """Line numbers of a Python source's comments and docstrings (not its other strings: a program's output).

    >>> sorted(prose_lines("\'\'\'Doc,\\nmore.\'\'\'\\nx = 'B3'  # B4\\ny = 1\\n"))
    [1, 2, 3]
    """
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type != tokenize.NL]
    lines = set()
    for i, token in enumerate(tokens):
        starts_line = i == 0 or tokens[i - 1].type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        after = tokens[i + 1].type if i + 1 < len(tokens) else tokenize.ENDMARKER
        ends_line = after in (tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.COMMENT)
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and starts_line and ends_line):
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def unlinked(text: str, path: Path) -> set[str]:
    """The entries a Python module's comments and docstrings cite but the module never links."""
    prose = prose_lines(text)
    return {name for line, name in citations(text, default_paper(path)) if line in prose} - linked(text)


def defined_anchors() -> set[str]:
    return set(ANCHOR.findall(PAGE.read_text(encoding="utf-8")))


def unresolved(paths: list[Path], defined: set[str]) -> list[str]:
    """``"file:line: anchor"`` of every citation in ``paths`` that ``defined`` lacks."""
    out = []
    for path in paths:
        for where, text in source_texts(path):
            for lineno, name in citations(text, default_paper(path)):
                if name not in defined:
                    out.append(f"{where}:{lineno}: {name}")
    return out


def test_page_anchors_are_unique() -> None:
    # Arrange
    ids = ANCHOR.findall(PAGE.read_text(encoding="utf-8"))
    # Assert
    assert ids, f"{PAGE} defines no anchors"
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_every_citation_is_defined() -> None:
    # Arrange
    paths = list(scanned_files(SCANNED))
    # Act
    missing = unresolved(paths, defined_anchors())
    # Assert
    assert paths, "no files scanned"
    assert not missing, (
        "citations without an entry in docs/references.md (add the entry, or write 'fairness spec' / "
        "'trust spec' where the paper is '?'):\n" + "\n".join(missing)
    )


def test_every_link_is_defined() -> None:
    # Arrange
    defined = defined_anchors()
    # Act
    bad = [f"{where}: #{name}" for path in scanned_files(SCANNED) for where, text in source_texts(path)
           for name in sorted(linked(text) - defined)]
    # Assert
    assert not bad, "links to entries docs/references.md does not have:\n" + "\n".join(bad)


def test_every_module_links_the_entries_it_cites() -> None:
    # Arrange: a module's reader follows its citations from the module itself (its comments and docstrings;
    # the strings it prints or logs are output)
    modules = [p for p in scanned_files(SCANNED) if p.suffix == ".py"]
    # Act
    offenders = []
    for path in modules:
        missing = unlinked(path.read_text(encoding="utf-8"), path)
        if missing:
            offenders.append(f"{path.relative_to(REPO)}: {', '.join(sorted(missing))}")
    # Assert
    assert modules
    assert not offenders, (
        "cite as 'trust spec §3.10 (docs/references.md#trust-3-10)' at least once per module:\n" + "\n".join(offenders)
    )


def test_an_unlinked_citation_is_caught() -> None:
    # Arrange: the first citation of B7 links it, the second need not; B4 is never linked; "B9" is output
    module = REPO / "fltrust" / "trust" / "_probe_not_a_module.py"
    text = (
        '"""Unknown keys (B7, docs/references.md#trust-b7) and entropy (B4)."""\n\n'
        '# B7 again\n'
        'NOTE = "fix B9"\n'
    )
    # Act
    missing = unlinked(text, module)
    # Assert
    assert missing == {"trust-b4"}


def test_no_module_points_readers_to_the_page_in_general() -> None:
    # Arrange
    carriers = []
    # Act
    for path in scanned_files(("fltrust", "tests", "benchmarks", "examples", "papers_repro")):
        if path.suffix == ".py" and BOILERPLATE.search(path.read_text(encoding="utf-8")):
            carriers.append(str(path.relative_to(REPO)))
    # Assert
    assert not carriers, "link each citation instead of the general pointer:\n" + "\n".join(carriers)


def test_an_undefined_citation_is_caught() -> None:
    # Arrange: a module citing a section the page does not define
    module = REPO / "fltrust" / "trust" / "_probe_not_a_module.py"
    text = '"""Scored as trust spec 12.4 says; see also trust spec 7.3 and B11."""\n'
    # Act
    found = [name for _, name in citations(text, default_paper(module))]
    missing = [name for name in found if name not in defined_anchors()]
    # Assert
    assert found == ["trust-12-4", "trust-7-3", "trust-b11"]
    assert missing == ["trust-12-4"]


def test_bare_citations_take_the_paper_of_their_folder() -> None:
    # Arrange
    cases = {
        "fltrust/metrics/jain.py": "fairness",
        "fltrust/repro/fairness/report.py": "fairness",
        "fltrust/repro/trust/report.py": "trust",
        "fltrust/trust/scoring/engine.py": "trust",
        "notebooks/federatedtrust/summary.ipynb": "trust",
        "tests/repro/trust/test_repro_trust.py": "trust",
        "fltrust/data/femnist.py": None,
        "fltrust/config/paper_metrics.py": None,
    }
    # Act
    got = {path: default_paper(REPO / path) for path in cases}
    # Assert
    assert got == cases


def test_a_bare_citation_in_a_module_about_both_papers_takes_its_class() -> None:
    # Arrange: fltrust/config/paper_metrics.py holds both papers' settings
    text = 'class TrustConfig:\n    """``"fixed"`` (every spec-9 fix)"""\n\nclass FairnessConfig:\n    """as coded, spec 4"""\n'
    # Act
    found = [name for _, name in citations(text, default_paper(REPO / "fltrust" / "config" / "paper_metrics.py"))]
    # Assert
    assert found == ["trust-9", "fairness-4"]


def test_no_reference_points_outside_the_repository() -> None:
    # Arrange
    offenders = []
    # Act
    for path in scanned_files(NO_OUTSIDE):
        for lineno, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(text):
                offenders.append(f"{path.relative_to(REPO)}:{lineno}: {text.strip()[:100]}")
    # Assert
    assert not offenders, "cite docs/references.md instead:\n" + "\n".join(offenders)


def data_citation_problems(text: str, markdown: bool, defined: set[str]) -> list[tuple[int, str]]:
    """``(line, problem)`` of each provenance citation in ``text`` that a reader of the kit cannot follow.

    Code must name a section (``data/PROVENANCE.md#femnist``); a Markdown page may link the whole page.
    A quoted ``"PROVENANCE.md"`` is a file name in code (opening the page), not a citation.

    >>> data_citation_problems("(data/PROVENANCE.md#femnist) 'PROVENANCE.md'", False, {"femnist"})
    []
    >>> data_citation_problems("see PROVENANCE A1\\nits PROVENANCE.md\\ndata/PROVENANCE.md#n-baiot-a9", False, {"femnist"})
    [(1, "'PROVENANCE'"), (2, "'PROVENANCE.md'"), (3, "'data/PROVENANCE.md#n-baiot-a9': no such section")]
    """
    out = []
    for match in DATA_CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if match[0] == "PROVENANCE.md" and text[match.start() - 1:match.start()] in ("'", '"'):
            continue
        if match["path"] not in ("data/", "../data/") or not match["md"] or (match["anchor"] is None and not markdown):
            out.append((line, repr(match[0])))
        elif match["anchor"] is not None and match["anchor"] not in defined:
            out.append((line, f"{match[0]!r}: no such section"))
    return out


def test_every_data_provenance_citation_resolves() -> None:
    # Arrange
    defined = set(ANCHOR.findall(DATA_PAGE.read_text(encoding="utf-8")))
    # Act
    bad = [f"{where}:{line}: {problem}" for path in scanned_files(SCANNED) for where, text in source_texts(path)
           for line, problem in data_citation_problems(text, path.suffix in (".md", ".ipynb"), defined)]
    # Assert
    assert defined >= {"cifar10", "femnist", "nsl-kdd", "n-baiot", "ffa-results"}
    assert not bad, "cite a section of data/PROVENANCE.md (data/PROVENANCE.md#<id>):\n" + "\n".join(bad)
