"""The fairness settings: the one settings type, the switches of each mode, the authors' attribute lists.

:class:`FairnessSettings` is defined in :mod:`fltrust.settings` (with the trust settings) and
re-exported here; :data:`MODE_DEFAULTS` holds every switch's value in each mode (spec 9, docs/references.md#fairness-9)
and :func:`default_sensitive_attributes` the attribute list A the authors used per dataset and
strategy (spec 2.4 and 4, docs/references.md#fairness-2-4, #fairness-4), which
``metrics.fairness.sensitive_attributes: null`` resolves to.
"""

from __future__ import annotations

from typing import Any

from fltrust.metrics.jain import MetricInputError
from fltrust.names import FAIRNESS_MODE_DEFAULTS, STRATEGIES
from fltrust.settings import FairnessSettings

__all__ = ["FairnessSettings", "MODE_DEFAULTS", "default_sensitive_attributes"]

MODE_DEFAULTS = FAIRNESS_MODE_DEFAULTS
"""Value of every switch in each mode (spec 9); defined with the other modes' defaults in
:mod:`fltrust.names`."""


_ALL_TEN = list(range(10))
_AUTHORS_ATTRIBUTES: dict[str, Any] = {
    "cifar10": _ALL_TEN,  # "all classes"
    "femnist": _ALL_TEN,  # "digits" 0-9 of 62 classes
    "nsl_kdd": {"fedavg": [1], "ditto": [0], "qfedavg": _ALL_TEN},  # any other strategy: FedAvg's
}


def default_sensitive_attributes(dataset_name: str, strategy_name: str) -> list[int]:
    """Return the authors' sensitive-attribute list for a dataset and strategy (spec 2.4 and 4).

    CIFAR-10 and FEMNIST: ``[0..9]`` (all classes / the digits). NSL-KDD: FedAvg ``[1]``, Ditto
    ``[0]``, q-FedAvg ``[0..9]`` (a copy-paste bug of the authors' scripts, kept for
    faithfulness); FedMedian, FedProx and the robust rules (Krum, Multi-Krum, trimmed mean,
    Bulyan), which the paper did not run, use FedAvg's ``[1]``.
    ``synthetic_*`` datasets use the list of the dataset they stand in for.

    Parameters
    ----------
    dataset_name : str
        ``data.name`` (``"cifar10"``, ``"femnist"``, ``"nsl_kdd"`` or their ``synthetic_*`` stand-ins).
    strategy_name : str
        ``strategy.name``; only NSL-KDD's lists depend on it.

    Returns
    -------
    list of int
        The attribute list A (label positions) the authors' code used.

    Raises
    ------
    MetricInputError
        For datasets the fairness paper did not use (N-BaIoT): set
        ``metrics.fairness.sensitive_attributes`` explicitly.
    """
    base = dataset_name.removeprefix("synthetic_")
    if base not in _AUTHORS_ATTRIBUTES:
        raise MetricInputError(
            f"no default sensitive attributes for dataset {dataset_name!r} (the fairness paper used "
            f"{sorted(_AUTHORS_ATTRIBUTES)}); set metrics.fairness.sensitive_attributes to a list of labels"
        )
    choice = _AUTHORS_ATTRIBUTES[base]
    if isinstance(choice, dict):
        if strategy_name not in STRATEGIES:
            raise MetricInputError(
                f"no default sensitive attributes for strategy {strategy_name!r} on {dataset_name!r}; "
                f"known: {sorted(STRATEGIES)}; set metrics.fairness.sensitive_attributes"
            )
        choice = choice.get(strategy_name, choice["fedavg"])
    return list(choice)

