r"""Operations: how a metric's raw value is computed from its factsheet fields (trust spec 2.2-2.3).

Input resolution and the operations: docs/references.md#trust-2-2, #trust-2-3.

A metric names its inputs as factsheet field paths (``"section/field"``); :func:`resolve_field`
reads them exactly as the prototype does, and the metric's operation is called with the values
as positional arguments. If the operation raises ``TypeError`` (for example ``None - 1``), the
scorer treats the raw value as missing (``None``), as the prototype does.

Each operation below is registered under its name with
:func:`~fltrust.trust.scoring.registry.operation` (a definitions file names it, the engine calls
it through :data:`~fltrust.trust.scoring.registry.OPERATIONS`); a user's own operation is one more
decorated function in their module.

=============================  ====================================================  =========
operation                      raw value                                             source
=============================  ====================================================  =========
``get_value``                  the field value                                       HEAD
``check_properties``           fraction of fields that are present                   HEAD
``get_global_privacy_risk``    1 / (1 + (N - 1) e^-eps) with DP, else 1               HEAD
``get_uniform_entropy``        ln N, entropy (nats) of a uniform choice of client    5796d0b
``get_capped_value``           min(v, 1)                                             fix B11
``check_client_selector``      0 for random/uniform sampling, 1 otherwise            fix B3
``first_present``              the first present input (measured, else declared)     extended
``mean_of_present``            mean of the inputs that are present numbers           extended
=============================  ====================================================  =========
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from fltrust.trust.scoring.registry import operation

MISSING_POLICIES = ("prototype", "strict")

RANDOM_SELECTORS = frozenset({"", "uniform", "random", "random_sampling", "uniform_sampling", "randomsampling"})
"""Client-selector names that mean plain random sampling (fix B3 scores them 0; docs/references.md#trust-b3)."""


def resolve_field(factsheet: Mapping[str, Any], field_path: str) -> Any:
    """Read one factsheet field by its ``"section/field"`` path (trust spec 2.2).

    The path is split on ``"/"`` and walked through the factsheet:

    - while the current value is a mapping the walk continues;
    - otherwise that value is returned, even if path segments remain;
    - a missing key returns ``None``, and so does a path that ends on a mapping.

    Parameters
    ----------
    factsheet : mapping
        Nested dict (trust spec 4, docs/references.md#trust-4).
    field_path : str
        For example ``"performance/test_acc_avg"``.

    Returns
    -------
    object or None
    """
    value: Any = factsheet
    for key in field_path.split("/"):
        if not isinstance(value, Mapping):
            return value
        if key not in value:
            return None
        value = value[key]
    return None if isinstance(value, Mapping) else value


@operation("get_value", arity=1)
def get_value(value: Any) -> Any:
    """Return the field value unchanged (prototype ``get_value``).

    Parameters
    ----------
    value : object
        The metric's one FactSheet field value.

    Returns
    -------
    object
        ``value``.
    """
    return value


def _is_nan(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def is_present(value: Any, missing: str = "prototype") -> bool:
    """Whether one factsheet field counts as filled in.

    Parameters
    ----------
    value : object
    missing : {"prototype", "strict"}
        ``"prototype"``: present unless ``None`` or ``""``; so NaN, ``False``, 0 and ``[]``
        are present (bug B2: the template's NaN defaults count as filled in; docs/references.md#trust-b2).
        ``"strict"`` (fix B2): ``None``, NaN, ``""`` and whitespace-only strings are missing;
        ``False``, 0 and ``[]`` stay present (they state something).

    Returns
    -------
    bool
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing={missing!r} is not allowed; choose one of {list(MISSING_POLICIES)}")
    if value is None:
        return False
    if isinstance(value, str):
        return value.strip() != "" if missing == "strict" else value != ""
    if missing == "strict" and _is_nan(value):
        return False
    return True


@operation("check_properties", arity=None, switches=("missing",))
def check_properties(*values: Any, missing: str = "prototype") -> float:
    r"""Fraction of the given fields that are present (prototype ``check_properties``).

    .. math:: \frac{1}{n} \sum_{i=1}^{n} [v_i \text{ present}]

    Parameters
    ----------
    *values : object
        The field values (at least one).
    missing : {"prototype", "strict"}
        What counts as missing; see :func:`is_present` (fix B2).

    Returns
    -------
    float
        In [0, 1]. Paper Table 2 "FactSheet completeness" metrics.
    """
    if not values:
        raise ValueError("check_properties needs at least one input field")
    return sum(1.0 for value in values if is_present(value, missing)) / len(values)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


@operation("get_global_privacy_risk", arity=3, switches=("coerce_types",))
def get_global_privacy_risk(dp: Any, epsilon: Any, num_clients: Any, *, coerce_types: bool = False) -> float:
    r"""Worst-case probability that an adversary singles out the target client (paper Sec. 3.1).

    .. math:: \mathrm{risk} = \frac{1}{1 + (N - 1)\, e^{-\varepsilon}} \ \text{with DP},
              \qquad 1 \ \text{without}

    Under epsilon-DP the posterior odds of "client i is the target" over any other client are at
    most e^eps, so with N candidates the posterior is at most this value (trust spec 2.3,
    "indistinguishability"). References: N = 100, eps = 6 gives 0.8032; N = 9, eps = 4 gives
    0.8722. The metric scores it with ``true_score`` desc, i.e. 1 - risk.

    Parameters
    ----------
    dp : bool
        ``configuration/differential_privacy``. The prototype tests ``dp is True``.
    epsilon : float
        ``configuration/dp_epsilon``; a missing or NaN epsilon means no DP guarantee (risk 1).
    num_clients : int
        ``participants/client_num``.
    coerce_types : bool
        Fix B14 (docs/references.md#trust-b14): accept numpy bools for ``dp``.

    Returns
    -------
    float
        Risk in (0, 1].

    Raises
    ------
    TypeError
        When DP is on and ``num_clients`` is not a number (the scorer then treats the raw value
        as missing, as the prototype does).
    """
    dp_on = isinstance(dp, (bool, np.bool_)) and bool(dp) if coerce_types else dp is True
    if not (dp_on and _is_number(epsilon) and not math.isnan(epsilon)):
        return 1.0
    if not _is_number(num_clients):
        raise TypeError(f"participants/client_num must be a number, got {num_clients!r}")
    return 1.0 / (1.0 + (float(num_clients) - 1.0) * math.exp(-float(epsilon)))


@operation("get_uniform_entropy", arity=1)
def get_uniform_entropy(num_clients: Any) -> float:
    r"""Entropy (nats) of guessing the target uniformly among N clients (commit 5796d0b).

    .. math:: H = \ln N

    The 5796d0b-era prototype scored "entropy" as ranges over this value; any N >= 3 exceeds
    1 and lands in the top bin (trust spec 7.3, docs/references.md#trust-7-3). The paper's Eq. 1 is the entropy of
    "which client is the target"; for a uniform target it is ln N (log2 N in bits).

    Parameters
    ----------
    num_clients : int
        ``participants/client_num``, at least 1.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``num_clients`` is not a number (scored as missing).
    """
    if not _is_number(num_clients):
        raise TypeError(f"participants/client_num must be a number, got {num_clients!r}")
    if math.isnan(num_clients):
        return math.nan
    if num_clients < 1:
        raise ValueError(f"participants/client_num={num_clients!r} must be at least 1")
    return math.log(float(num_clients))


@operation("get_capped_value", arity=1)
def get_capped_value(value: Any) -> Any:
    """Cap a coefficient of variation at 1: ``min(v, 1)`` (fix B11; docs/references.md#trust-b11).

    The prototype caps the selection, accuracy and class-imbalance CVs when it fills the
    factsheet, but not the feature-importance CV, and the 5796d0b-era code capped none; a CV
    above 1 scored with ``true_score`` desc gives a negative score. ``None`` and NaN pass
    through unchanged (they score 0).

    Parameters
    ----------
    value : float or None

    Returns
    -------
    float or None
    """
    if not _is_number(value):
        return value
    return value if math.isnan(value) else min(float(value), 1.0)


@operation("check_client_selector", arity=1)
def check_client_selector(selector: Any) -> float:
    """1 if a client selector other than random sampling is used, else 0 (fix B3).

    Paper Table 2 scores "use of a client selector scheme rather than random selection"; the
    prototype's ``check_properties`` scores any non-empty name, so "uniform" sampling gets 1.
    Names in :data:`RANDOM_SELECTORS` (case-insensitive) and missing values score 0.

    Parameters
    ----------
    selector : str or None
        ``participants/client_selector``.

    Returns
    -------
    float
    """
    if not isinstance(selector, str):
        return 0.0
    return 0.0 if selector.strip().lower() in RANDOM_SELECTORS else 1.0


@operation("first_present", arity=None)
def first_present(*values: Any) -> Any:
    """Return the first input that is present: not ``None``, not NaN, not an empty string (extended mode).

    Lets a metric prefer a measured value and fall back to a declared one, e.g. poisoning
    defence = measured recovery, else "a Byzantine-robust aggregator is used". ``None`` when none
    is present (the metric then scores 0 as missing).

    Parameters
    ----------
    *values : object
        The metric's field values, in the order of its inputs (at least one).

    Returns
    -------
    object or None
        The first value that is present under the strict rule of :func:`is_present`.

    Examples
    --------
    >>> first_present(float("nan"), None, 0.4, 1.0)
    0.4
    >>> first_present(None, True)
    True
    """
    if not values:
        raise ValueError("first_present needs at least one input field")
    return next((value for value in values if is_present(value, "strict")), None)


@operation("mean_of_present", arity=None)
def mean_of_present(*values: Any) -> Any:
    """Mean of the inputs that are present numbers (extended mode); ``None`` when there is none.

    Parameters
    ----------
    *values : object
        The metric's field values (at least one); ``None``, NaN, bools and non-numbers are skipped.

    Returns
    -------
    float or None

    Examples
    --------
    >>> mean_of_present(0.5, float("nan"), 1.0, None)
    0.75
    """
    if not values:
        raise ValueError("mean_of_present needs at least one input field")
    present = [float(v) for v in values if _is_number(v) and not math.isnan(v)]
    return sum(present) / len(present) if present else None
