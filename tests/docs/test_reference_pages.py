"""docs/references.md and docs/run_record.md name only code, settings and files that exist.

Every backticked name on the two pages is read as what it looks like and looked up:

- ``fltrust.a.b.c`` (optionally called, ``fltrust.runs.load_run(path)``): imported, then its
  attributes followed; the keyword arguments of a call must be parameters of the callable;
- ``Name(kw=...)`` / ``name(kw=...)``: ``Name`` is found in the modules of :data:`NAMESPACES`
  (the packages whose names the pages use without a prefix), and its keywords as above;
- ``section.key`` or ``section.key: value`` with a section of :class:`fltrust.config.ExperimentConfig`:
  the key must be a field of that section;
- a path under ``fltrust/``, ``tests/``, ``papers_repro/``, ``notebooks/`` or ``docs/``: it must exist.

Other backticked text (values, file formats, the prototype's own names) is not checked.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = ("docs/references.md", "docs/run_record.md")
NAMESPACES = (
    "fltrust.settings", "fltrust.names", "fltrust.config", "fltrust.runs", "fltrust.core.records", "fltrust.flower",
    "fltrust.metrics", "fltrust.metrics.fairness", "fltrust.metrics.shapley", "fltrust.trust", "fltrust.trust.observer",
    "fltrust.trust.report", "fltrust.trust.scoring", "fltrust.trust.scoring.operations", "fltrust.trust.factsheet",
    "fltrust.trust.measures.statistics", "fltrust.repro.fairness.run",
)
"""Modules whose names the pages write without a prefix (``score_factsheet(...)``, ``TrustSettings(...)``)."""
NOT_OURS = frozenset({"Normalize", "ToTensor", "to_dict", "torch.load", "clever_u", "os.replace", "sha256"})
"""Callables of other libraries (or methods written bare) that the pages name."""
TICK = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"^(?P<name>fltrust(?:\.\w+)+)(?P<call>\(.*\))?$")
CALL = re.compile(r"^(?P<name>[A-Za-z_]\w*(?:\.\w+)*)\((?P<args>.*)\)$")
PATH = re.compile(r"^(?:fltrust|tests|papers_repro|notebooks|docs)/[\w./*-]+$")


def resolve(dotted: str):
    """The object ``fltrust.a.b.c`` names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def keywords(args: str) -> list[str]:
    return re.findall(r"(?<![\w.\"'])(\w+)\s*=(?!=)", args)


def unknown_keywords(obj, names: list[str]) -> list[str]:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return []
    return [n for n in names if n not in params]


def config_key_exists(path: str) -> bool:
    from fltrust.config import ExperimentConfig

    obj = ExperimentConfig()
    for part in path.split("."):
        if not dataclasses.is_dataclass(obj) or part not in {f.name for f in dataclasses.fields(obj)}:
            return False
        obj = getattr(obj, part)
    return True


def problems(text: str) -> list[str]:
    """``"line: `name`: why"`` for every backticked name of ``text`` that does not exist."""
    from fltrust.config import ExperimentConfig

    sections = "|".join(f.name for f in dataclasses.fields(ExperimentConfig))
    config_key = re.compile(rf"^(?P<key>(?:{sections})(?:\.\w+)+)(?::\s*.*)?$")
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for tick in TICK.findall(line):
            tick = tick.strip()
            where = f"{number}: `{tick}`"
            if match := DOTTED.match(tick):
                try:
                    obj = resolve(match["name"])
                except (ImportError, AttributeError) as exc:
                    found.append(f"{where}: {type(exc).__name__}: {exc}")
                    continue
                if bad := unknown_keywords(obj, keywords(match["call"] or "")):
                    found.append(f"{where}: no parameter {', '.join(bad)}")
            elif match := CALL.match(tick):
                head, *rest = match["name"].split(".")
                if match["name"] in NOT_OURS or head in NOT_OURS:
                    continue
                homes = [m for m in NAMESPACES if hasattr(importlib.import_module(m), head)]
                if not homes:
                    found.append(f"{where}: {head} is in none of {NAMESPACES}")
                    continue
                obj = getattr(importlib.import_module(homes[0]), head)
                try:
                    for attr in rest:
                        obj = getattr(obj, attr)
                except AttributeError as exc:
                    found.append(f"{where}: {exc}")
                    continue
                if bad := unknown_keywords(obj, keywords(match["args"])):
                    found.append(f"{where}: {homes[0]}.{match['name']} has no parameter {', '.join(bad)}")
            elif match := config_key.match(tick):
                if not config_key_exists(match["key"]):
                    found.append(f"{where}: no such configuration key")
            elif PATH.match(tick) and ".." not in tick:
                if not any(REPO.glob(tick)):
                    found.append(f"{where}: no such file")
    return found


@pytest.mark.parametrize("page", PAGES)
def test_the_page_names_only_what_exists(page):
    # Arrange
    text = (REPO / page).read_text(encoding="utf-8")
    # Act
    found = problems(text)
    # Assert
    assert TICK.search(text)
    assert not found, f"{page} names what the code does not have:\n" + "\n".join(found)


def test_a_stale_name_is_caught():
    # Arrange: an option that moved from the observer to its settings, a renamed key, a gone module
    text = (
        "`TrustObserver(entropy_method=...)` `TrustSettings(entropy_method=...)` `metrics.trust.entropy_method`\n"
        "`metrics.fairness.mode: faithful` `fltrust.trust.gone.function` `fltrust/trust/observer.py` `tests/gone.py`\n"
    )
    # Act
    found = problems(text)
    # Assert
    assert [f.split(":")[0] + ":" + f.split("`")[1] for f in found] == [
        "1:TrustObserver(entropy_method=...)",
        "1:metrics.trust.entropy_method",
        "2:fltrust.trust.gone.function",
        "2:tests/gone.py",
    ]
