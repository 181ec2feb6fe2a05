"""The Flower version fltrust supports, checked once (``import fltrust.flower`` calls it)."""

from __future__ import annotations

REQUIRED_FLOWER = "1.42"
"""The Flower minor version fltrust supports (any 1.42.x)."""


class FlowerVersionError(RuntimeError):
    """Flower is missing or is not the supported version (reported on one line, exit code 2)."""

    exit_code = 2


def require_flower() -> str:
    """Return the installed Flower version; raise :class:`FlowerVersionError` unless it is 1.42.x."""
    hint = f"install it with: pip install 'flwr[simulation]=={REQUIRED_FLOWER}.*'"
    try:
        import flwr
    except ImportError:
        raise FlowerVersionError(f"fltrust.flower needs Flower {REQUIRED_FLOWER}.x, which is not installed; {hint}") from None
    version = str(getattr(flwr, "__version__", "unknown"))
    if version.split(".")[:2] != REQUIRED_FLOWER.split("."):
        raise FlowerVersionError(f"fltrust.flower needs Flower {REQUIRED_FLOWER}.x but flwr {version} is installed; {hint}")
    return version
