r"""Energy and carbon footprint of a run (nebula's *sustainability* pillar), with CodeCarbon offline.

nebula, the later evolution of FederatedTrust (trust spec 10, docs/references.md#trust-10), adds a sixth-plus-one
pillar, *sustainability*, with three notions: the carbon intensity of the energy used (``energy_source``),
the hardware's efficiency (``hardware_efficiency``) and the federation's complexity
(``federation_complexity``: rounds, model size, sample rate, clients, local steps, dataset size).
nebula reads CodeCarbon's ``emissions.csv`` for the first two. We do the same, offline:

- :class:`EnergyTracker` wraps :class:`codecarbon.OfflineEmissionsTracker` (no network, no API:
  the country's grid carbon intensity comes from CodeCarbon's packaged energy-mix table for
  ``country_iso_code``, which the configuration declares). Energy is integrated over the tracked
  span (the run's rounds, ``tracking_mode="process"``); emissions = energy x intensity.
- **Method, stated**: CodeCarbon *measures* power with Intel RAPL (CPU), NVIDIA NVML (GPU) or
  powermetrics (Apple) when it can read them; otherwise it *estimates* the CPU power from the
  processor's TDP scaled by the process's CPU load, and RAM power always from a per-GB model.
  :func:`classify_power_source` turns CodeCarbon's hardware modes into ``"meter"``,
  ``"partial"`` (some parts metered) or ``"estimate"``; the FactSheet and the report say which.

Scores (extended definitions, nebula-style normalisation):

- ``carbon_intensity`` (g CO2eq/kWh) = emissions / energy; ``scaled_score`` over nebula's
  [20, 795], descending (20 = the cleanest grids, 795 = the dirtiest in nebula's table).
- ``run_emissions`` (kg CO2eq of the run): nebula scores hardware power-performance from CPU/GPU
  benchmark tables that are not available offline; we score the measured/estimated emissions of
  the run instead, on decades as nebula scores sizes: ``breakpoints`` descending over
  [1e-6, 1e-5, ..., 10] kg (<= 1e-6 kg scores 1, > 10 kg scores 0, 1/7 per decade; our choice:
  a tiny CPU test run emits about 1e-7 kg, a GPU day a few kg).
- ``federation_complexity``: nebula's six config metrics as nebula defines them.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from fltrust.core.io import to_plain

__all__ = [
    "METERED_CPU_MODES",
    "known_country",
    "EnergyResult",
    "EnergyTracker",
    "carbon_intensity",
    "classify_power_source",
]

log = logging.getLogger("fltrust")

METERED_CPU_MODES = frozenset({"intel_rapl", "intel_power_gadget", "windows_emi", "apple_powermetrics"})
"""CodeCarbon CPU modes that read a power meter; ``cpu_load`` and ``constant`` are TDP estimates."""


def carbon_intensity(emissions_kg: float, energy_kwh: float) -> float:
    """Grid carbon intensity in g CO2eq per kWh: ``1000 * emissions / energy`` (NaN for no energy).

    Parameters
    ----------
    emissions_kg : float
        CO2-equivalent emissions in kg.
    energy_kwh : float
        Energy in kWh.

    Returns
    -------
    float

    Examples
    --------
    >>> carbon_intensity(0.5, 2.0)
    250.0
    """
    emissions, energy = float(emissions_kg), float(energy_kwh)
    if not (math.isfinite(emissions) and math.isfinite(energy)) or energy <= 0:
        return float("nan")
    return 1000.0 * emissions / energy


def known_country(country_iso_code: str) -> bool | None:
    """Tell whether CodeCarbon's offline energy-mix table has the country.

    CodeCarbon silently falls back to a world-average intensity for an unknown code; the tracker
    says so in its method text.

    Parameters
    ----------
    country_iso_code : str
        ISO 3166-1 alpha-3 code (``metrics.trust.country_iso_code``), any case.

    Returns
    -------
    bool or None
        Whether the table lists the code; ``None`` when CodeCarbon or its table cannot be read.
    """
    try:
        from codecarbon.input import DataSource

        return str(country_iso_code).upper() in DataSource().get_global_energy_mix_data()
    except Exception:  # noqa: BLE001 - no CodeCarbon or no readable table: unknown
        return None


def classify_power_source(cpu_modes: list[str], gpu_metered: bool = False, apple_metered: bool = False) -> tuple[str, str]:
    """Whether the energy figure comes from power meters or from an estimate.

    Parameters
    ----------
    cpu_modes : list of str
        CodeCarbon's CPU tracking modes (``"intel_rapl"``, ``"cpu_load"``, ``"constant"``, ...).
    gpu_metered : bool
        A GPU is tracked through NVML (a meter).
    apple_metered : bool
        Apple silicon tracked through powermetrics (a meter).

    Returns
    -------
    label : {"meter", "partial", "estimate"}
    explanation : str

    Examples
    --------
    >>> classify_power_source(["cpu_load"])[0], classify_power_source(["intel_rapl"])[0]
    ('estimate', 'meter')
    >>> classify_power_source(["cpu_load"], gpu_metered=True)[0]
    'partial'
    """
    cpu_metered = bool(cpu_modes) and all(m in METERED_CPU_MODES for m in cpu_modes)
    parts = []
    if cpu_modes:
        parts.append("CPU " + ("metered (" if cpu_metered else "ESTIMATED (") + ", ".join(cpu_modes) + ")")
    if gpu_metered:
        parts.append("GPU metered (NVML)")
    if apple_metered:
        parts.append("Apple SoC metered (powermetrics)")
    parts.append("RAM estimated (CodeCarbon per-GB model)")
    metered_any = cpu_metered or gpu_metered or apple_metered
    cpu_estimated = bool(cpu_modes) and not cpu_metered
    label = ("partial" if cpu_estimated else "meter") if metered_any else "estimate"
    return label, "; ".join(parts)


@dataclass
class EnergyResult:
    """Energy and emissions of a tracked span.

    Attributes
    ----------
    energy_kwh, emissions_kg : float
        Total energy (CPU + GPU + RAM) and CO2-equivalent emissions; NaN when tracking failed.
    carbon_intensity_g_per_kwh : float
        emissions / energy.
    duration_s : float
        Tracked wall time.
    power_source : str
        ``"meter"``, ``"partial"``, ``"estimate"`` or ``"n/a"`` (tracking failed).
    method : str
        How the numbers were obtained, in words (always names CodeCarbon offline and the country).
    country_iso_code : str
    cpu_model : str
    hardware : list of str
        CodeCarbon's hardware descriptions.
    error : str or None
        Why tracking failed.
    """

    energy_kwh: float
    emissions_kg: float
    carbon_intensity_g_per_kwh: float
    duration_s: float
    power_source: str
    method: str
    country_iso_code: str
    cpu_model: str = ""
    hardware: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def is_estimate(self) -> bool:
        """True unless every tracked component was metered."""
        return self.power_source != "meter"

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a plain dict.

        Returns
        -------
        dict
            The fields by name with NaN values as ``None``, and ``is_estimate``.
        """
        return {**to_plain(asdict(self)), "is_estimate": self.is_estimate}


class EnergyTracker:
    """Start/stop wrapper around CodeCarbon's offline tracker that never breaks a run.

    Parameters
    ----------
    country_iso_code : str
        ISO 3166-1 alpha-3 code of where the machine runs (e.g. ``"CHE"``, ``"DEU"``, ``"USA"``);
        selects the grid carbon intensity from CodeCarbon's offline table.
    measure_power_secs : float
        Sampling interval of the power readings.

    Notes
    -----
    Any failure (CodeCarbon missing, unknown country code, no readable sensors at all) is caught:
    :meth:`stop` then returns an :class:`EnergyResult` with NaN values, ``power_source="n/a"``
    and the reason in ``error``; the metric is then missing (scores 0) and says why.
    """

    def __init__(self, country_iso_code: str, *, measure_power_secs: float = 5.0) -> None:
        self.country_iso_code = str(country_iso_code).upper()
        self.measure_power_secs = float(measure_power_secs)
        self._tracker: Any = None
        self._start = 0.0
        self._error: str | None = None

    @property
    def running(self) -> bool:
        """Whether :meth:`start` succeeded and :meth:`stop` was not called yet."""
        return self._tracker is not None

    def start(self) -> None:
        """Start tracking (a second call while running does nothing)."""
        if self._tracker is not None:
            return
        self._start = time.perf_counter()
        self._error = None
        try:
            from codecarbon import OfflineEmissionsTracker

            logging.getLogger("codecarbon").setLevel(logging.ERROR)  # after the import, which sets it

            tracker = OfflineEmissionsTracker(
                country_iso_code=self.country_iso_code, output_methods=[], log_level="error",
                measure_power_secs=self.measure_power_secs, tracking_mode="process", allow_multiple_runs=True,
            )
            if not hasattr(tracker, "start"):  # codecarbon's constructor swallows its own errors
                raise RuntimeError("CodeCarbon could not build an offline tracker")
            tracker.start()
            self._tracker = tracker
        except Exception as exc:  # noqa: BLE001 - energy tracking must never stop a run
            self._error = f"{type(exc).__name__}: {exc}"
            log.warning("sustainability: CodeCarbon offline tracking unavailable (%s)", self._error)

    def stop(self) -> EnergyResult:
        """Stop tracking and return the energy, emissions and how they were obtained.

        Returns
        -------
        EnergyResult
            NaN values, ``power_source`` ``"n/a"`` and the ``error`` when tracking never started or failed.
        """
        duration = time.perf_counter() - self._start if self._start else float("nan")
        method_head = f"CodeCarbon {self._version()} OfflineEmissionsTracker, country {self.country_iso_code}"
        tracker, self._tracker = self._tracker, None
        if tracker is None:
            reason = self._error or "tracking was not started"
            return EnergyResult(float("nan"), float("nan"), float("nan"), duration, "n/a",
                                f"{method_head}: not available ({reason})", self.country_iso_code, error=reason)
        if known_country(self.country_iso_code) is False:
            method_head += (" (UNKNOWN to CodeCarbon's offline table: its world-average intensity was used; "
                            "set metrics.trust.country_iso_code to an ISO 3166-1 alpha-3 code)")
        try:
            tracker.stop()
            data = tracker.final_emissions_data
            cpu_modes, gpu_metered, apple = [], False, False
            hardware = []
            for item in getattr(tracker, "_hardware", []):
                kind = type(item).__name__
                hardware.append(str(item.description()) if hasattr(item, "description") else kind)
                if kind == "CPU":
                    cpu_modes.append(str(getattr(item, "_mode", "unknown")))
                elif kind == "GPU":
                    gpu_metered = True
                elif kind == "AppleSiliconChip":
                    apple = True
            source, explanation = classify_power_source(cpu_modes, gpu_metered, apple)
            energy, emissions = float(data.energy_consumed), float(data.emissions)
            kind = {"meter": "measured by power meters", "partial": "partly metered, partly ESTIMATED",
                    "estimate": "ESTIMATED (no readable power meter: no RAPL/NVML)"}[source]
            method = (f"{method_head} (grid intensity from CodeCarbon's offline energy-mix table, no API call); "
                      f"power {kind}: {explanation}")
            return EnergyResult(energy, emissions, carbon_intensity(emissions, energy), float(data.duration),
                                source, method, self.country_iso_code, str(data.cpu_model or ""), hardware)
        except Exception as exc:  # noqa: BLE001 - energy tracking must never stop a run
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("sustainability: CodeCarbon failed at stop (%s)", reason)
            return EnergyResult(float("nan"), float("nan"), float("nan"), duration, "n/a",
                                f"{method_head}: failed ({reason})", self.country_iso_code, error=reason)

    @staticmethod
    def _version() -> str:
        try:
            import codecarbon

            return str(codecarbon.__version__)
        except Exception:  # noqa: BLE001 - any import failure reads as not installed
            return "(not installed)"
