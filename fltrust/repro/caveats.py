"""The caveat lines printed under a reproduction result (condition and experiment notebooks).

One place for the wording, so that a fairness condition and a trust experiment say the same
thing about quick runs, synthetic stand-ins and deviations from the paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["caveat_lines"]


def caveat_lines(result: Mapping[str, Any], *, quick: bool) -> list[str]:
    """What a reader must know before comparing ``result`` with the paper.

    Parameters
    ----------
    result : mapping
        A result file's content (``results/<condition>.json`` or ``results/<experiment>.json``):
        its ``synthetic`` flag, optional ``dataset`` name and ``deviations`` list are read.
    quick : bool
        Whether the run was a quick (smoke-test) run.

    Returns
    -------
    list of str
        One line each: quick run, synthetic stand-in (naming the dataset when the result has
        one), then every deviation.

    Examples
    --------
    >>> caveat_lines({"synthetic": True, "dataset": "n_baiot", "deviations": ["20 of 50 rounds"]}, quick=False)
    ... # doctest: +NORMALIZE_WHITESPACE
    ['SYNTHETIC data: the n_baiot files were missing and a generated stand-in replaced them; the
    model-dependent numbers say nothing about the real data and are not comparable with the paper.',
     'deviation: 20 of 50 rounds']
    >>> caveat_lines({"synthetic": False, "deviations": []}, quick=True)
    ['QUICK run: a smoke test, not comparable with the paper.']
    """
    lines = []
    if quick:
        lines.append("QUICK run: a smoke test, not comparable with the paper.")
    if result.get("synthetic"):
        dataset = result.get("dataset")
        which = f"the {dataset} files were" if dataset else "the real files were"
        lines.append(f"SYNTHETIC data: {which} missing and a generated stand-in replaced them; the model-dependent "
                     "numbers say nothing about the real data and are not comparable with the paper.")
    lines.extend(f"deviation: {deviation}" for deviation in result.get("deviations", ()))
    return lines
