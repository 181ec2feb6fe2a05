"""The code blocks of docs/extending.md that its tests (tests/docs/test_extending_*.py) run."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def guide_blocks(section: str, marker: str) -> list[tuple[str, str]]:
    """``(language, code)`` of the block after each ``marker`` in the guide's ``section``, in order."""
    text = GUIDE.read_text()
    part = text[text.index(section):]
    end = part.find("\n## ", len(section))
    part = part if end < 0 else part[:end]
    blocks = []
    for after in part.split(marker)[1:]:
        found = re.search(r"```(\w+)\n(.*?)```", after, re.S)
        assert found, f"no code block after the marker {marker!r} in {GUIDE}"
        blocks.append((found.group(1), found.group(2)))
    return blocks
