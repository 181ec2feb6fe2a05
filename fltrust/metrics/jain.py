"""Jain's fairness index: the uniformity measure behind f_j and f_r.

Federated Fairness Analytics (paper Eq. 2) measures uniformity with Jain's fairness index
(JFI). Higher is more uniform: ``1`` means all values are equal. The index is used as it was
coded (fairness spec 2.1, docs/references.md#fairness-2-1): no clipping and no sign handling.

This module also holds :class:`MetricInputError`, the error every function of
:mod:`fltrust.metrics` raises on bad input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["MetricInputError", "jain_index"]


class MetricInputError(ValueError):
    """Bad input to a metric; the message names the argument and the fix."""


def jain_index(
    values: Sequence[float] | np.ndarray,
    *,
    empty: float = math.nan,
    all_zero: float = math.nan,
) -> float:
    r"""Jain's fairness index of a set of values.

    .. math::

        J(x) = \frac{\left(\sum_{i=1}^{m} x_i\right)^2}{m \sum_{i=1}^{m} x_i^2}

    Paper Eq. 2 (and Eqs. 7 and 10, which apply it to gains and reward ratios);
    fairness spec 2.1.

    Parameters
    ----------
    values : array-like of float, shape (m,)
        The values whose uniformity is measured (one per participating client).
    empty : float, default NaN
        Value returned for ``m = 0`` (the index is undefined).
    all_zero : float, default NaN
        Value returned when every value is exactly zero (``0/0``). The authors' code has no
        guard here (NaN, the faithful default); the corrected metrics pass ``1.0`` (all
        clients equal, fairness spec 9; docs/references.md#fairness-9).

    Returns
    -------
    float
        ``J`` in ``[0, 1]`` for finite input: ``1`` when all values are equal, ``1/m`` when
        exactly one value is non-zero. ``NaN`` when any value is NaN or infinite (a gain
        ``x/s`` with ``s = 0`` is infinite; the authors' code had no guard either).

    Notes
    -----
    The paper states :math:`J \in (0, 1]`, which holds for non-negative values only. As coded
    (and here) signs are not handled: for mixed signs ``J`` can be anything in ``[0, 1]``
    and is ``0`` when the values sum to zero. ``J(c x) = J(x)`` for any ``c != 0``, in
    particular ``J(-x) = J(x)``: a set of all-negative contributions looks perfectly fair.

    Examples
    --------
    >>> jain_index([1.0, 1.0, 1.0])
    1.0
    >>> round(jain_index([1.0, 0.0, 0.0]), 4)
    0.3333
    >>> jain_index([0.0, 0.0], all_zero=1.0)
    1.0
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise MetricInputError(f"jain_index: values must be one-dimensional, got shape {x.shape}")
    m = x.size
    if m == 0:
        return float(empty)
    if not np.all(np.isfinite(x)):
        return math.nan
    sum_sq = float(np.sum(x * x))
    if sum_sq == 0.0:
        return float(all_zero)
    return float(np.sum(x)) ** 2 / (m * sum_sq)
