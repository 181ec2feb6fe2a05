"""The derivation notebooks are committed executed, so that they read without running (e.g. on GitHub).

Regenerate them in place from the repository root after editing one (figures inline: no MPLBACKEND)::

    env -u MPLBACKEND PYTHONPATH=$PWD python -m jupyter nbconvert --to notebook --execute --inplace \\
        --ExecutePreprocessor.record_timing=False notebooks/fairness/derivations.ipynb notebooks/federatedtrust/derivations.ipynb

The tests that execute notebooks write to temporary folders; this file only reads the committed ones.
"""

from __future__ import annotations

import json
import re

import pytest

from fltrust.repro.batch import NOTEBOOKS

DERIVATIONS = ["fairness/derivations.ipynb", "federatedtrust/derivations.ipynb"]


@pytest.mark.parametrize("name", DERIVATIONS)
def test_derivation_notebook_is_committed_executed_with_an_inline_figure(name):
    # Prepare
    notebook = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    outputs = [o for c in code for o in c["outputs"]]

    # Assert: every code cell ran, in order, without an error, and a figure is stored as a PNG
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "execute the whole notebook once, top to bottom"
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    # no machine-specific paths in what is committed
    text = json.dumps(outputs)
    assert not re.search(r"(/home/|/root/|/tmp/|/work/|[A-Z]:\\\\Users)", text)
