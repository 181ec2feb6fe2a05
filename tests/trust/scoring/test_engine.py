"""The scoring package's wiring: what its engine imports, the logger it writes to, where provenance is defined.

The scores themselves are checked by the golden vectors (``tests/trust/test_scoring_golden.py``)
and the extended-mode tests (``tests/trust/test_extended_scoring.py``).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from fltrust.trust import factsheet, scoring
from fltrust.trust.scoring import engine

REPO = Path(__file__).resolve().parents[3]


def test_importing_the_scoring_engine_loads_neither_torch_nor_scipy() -> None:
    # Prepare: a fresh interpreter (this one has imported everything already)
    code = (
        "import sys; import fltrust.trust.scoring, fltrust.trust.factsheet.schema; "
        "print(sorted(m for m in ('torch', 'scipy', 'fltrust.trust.measures.statistics') if m in sys.modules))"
    )
    # Execute
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    # Assert
    assert out.strip() == "[]"


def test_missing_values_are_logged_under_the_package_logger(caplog) -> None:
    # Execute: only the scale field is filled, every other metric of the tree is missing
    with caplog.at_level(logging.WARNING, logger="fltrust.trust.scoring"):
        report = scoring.score_factsheet({"participants": {"client_num": 10}})
    # Assert: the name the trust observer and the reproduction silence
    missing = [r for r in caplog.records if "raw value is missing" in r.getMessage()]
    assert {r.name for r in missing} == {"fltrust.trust.scoring"}
    assert len(missing) == sum(1 for m in report.metrics() if m.raw_value is None)


def test_silencing_the_package_logger_silences_the_engine(caplog) -> None:
    # Prepare
    logger = logging.getLogger("fltrust.trust.scoring")
    # Execute
    logger.disabled = True
    try:
        with caplog.at_level(logging.WARNING, logger="fltrust.trust.scoring"):
            scoring.score_factsheet({"participants": {"client_num": 10}})
    finally:
        logger.disabled = False
    # Assert
    assert not [r for r in caplog.records if r.name.startswith("fltrust.trust.scoring")]


def test_the_provenance_section_is_the_factsheet_schemas() -> None:
    assert engine.PROVENANCE_SECTION is factsheet.PROVENANCE_SECTION is scoring.PROVENANCE_SECTION
    assert engine.PROVENANCE_STATUSES is factsheet.PROVENANCE_STATUSES is scoring.PROVENANCE_STATUSES
