"""Reading the result files that the paper notebooks write (one JSON per condition or experiment)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class ResultsError(ValueError):
    """A result file written by a paper notebook is unreadable or incomplete."""


def load_result_files(folder: str | Path, pattern: str, required_keys: tuple[str, ...], writer: str) -> list[dict[str, Any]]:
    """Read every ``folder/pattern`` result JSON, checking ``required_keys``.

    A missing folder gives an empty list (nothing has run yet). ``writer`` names the function
    that writes such files, for the error message.

    Raises
    ------
    ResultsError
        If a file is not valid JSON or lacks a required key (the message says to rerun it).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    results = []
    for path in sorted(folder.glob(pattern)):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{path} is not valid JSON ({exc}); delete it and rerun it") from exc
        missing = [k for k in required_keys if not isinstance(data, dict) or k not in data]
        if missing:
            raise ResultsError(f"{path} lacks {missing}; it was not written by {writer} -- delete it and rerun it")
        results.append(data)
    return results
