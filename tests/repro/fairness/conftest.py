"""A tiny, made-up stand-in for the fairness authors' raw result files, in their published layout.

:func:`write_authors_files` (fixture ``write_authors``) writes the three files (v1-v3) of one condition under
``<root>/ffa_results/Results/``; the values are simple functions of the repeat r (0-based) and the
list position p (0..29), so that the Table 3 window value can be computed by hand:

- f_j = 0.01 p, f_g = 0.5, f_r = 0.2 + 0.1 r, f_o = 0.8 from position 14 on and 0.0 before;
- ``accuracy`` = f_o for each of the 5 participants; ``gains`` = 2 x accuracy; ``shap`` = 0.5 for
  every client; ``avg_eop`` = {"1": -0.1} per participant;
- ``rounds`` are labelled 0..29 in v1 and v3 and 1..30 in v2 (as one of the authors' files), so a
  reader that went by label instead of list position would shift v2's window.

These are not the authors' numbers (those are read only by the ``realdata`` tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fltrust.repro.fairness.authors import authors_file_names
from fltrust.repro.fairness.conditions import DATASETS


def authors_payload(condition: str, repeat: int) -> dict:
    """One made-up result file of ``condition`` (0-based ``repeat``), as the authors' scripts lay it out."""
    key = "_".join(condition.split("_")[1:-1])
    setup = DATASETS[key]
    rounds = 30
    f_o = [0.8 if p >= 14 else 0.0 for p in range(rounds)]
    return {
        "rounds": list(range(1, rounds + 1)) if repeat == 1 else list(range(rounds)),
        "general_fairness": {
            "f_j": [0.01 * p for p in range(rounds)],
            "f_g": [0.5] * rounds,
            "f_r": [0.2 + 0.1 * repeat] * rounds,
            "f_o": f_o,
        },
        "config": {"num_clients": setup.num_clients, "local_epochs": setup.local_epochs, "num_rounds": rounds,
                   "batch_size": 32, "selection_rate": setup.fraction_fit, "sensitive_attributes": [1]},
        "per_client_data": {
            "shap": [[0.5] * setup.num_clients for _ in range(rounds)],
            "accuracy": [[f_o[p]] * 5 for p in range(rounds)],
            "avg_eop": [[{"1": -0.1}] * 5 for _ in range(rounds)],
            "gains": [[2 * f_o[p]] * 5 for p in range(rounds)],
        },
    }


def write_authors_files(root: Path, condition: str, edit=None) -> list[Path]:
    """The three files of ``condition`` under ``root/ffa_results/Results``; ``edit(repeat, payload)``
    may change a payload before it is written. Returns the paths (v1, v2, v3)."""
    folder = root / "ffa_results" / "Results"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for repeat, name in enumerate(authors_file_names(condition)):
        payload = authors_payload(condition, repeat)
        if edit is not None:
            edit(repeat, payload)
        path = folder / name
        path.write_text(json.dumps(payload))
        paths.append(path)
    return paths


FIXTURE_CONDITION = "fedavg_nslkdd_100c_iid"
"""The condition the fixture root holds."""


@pytest.fixture
def authors_root(tmp_path: Path) -> Path:
    """A data root holding the made-up authors' files of :data:`FIXTURE_CONDITION` only."""
    root = tmp_path / "authors-root"
    write_authors_files(root, FIXTURE_CONDITION)
    return root


@pytest.fixture
def write_authors():
    """:func:`write_authors_files`, for tests that write their own (or malformed) files."""
    return write_authors_files
