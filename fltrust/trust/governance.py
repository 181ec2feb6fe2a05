"""Old path of :mod:`fltrust.trust.measures.governance`, kept only for :mod:`fltrust.config`.

``fltrust/config.py`` (being split in parallel) imports :class:`DeclarationError` and
:func:`validate_declarations` from here; point that import (and its docstring's
``DECLARATIONS`` reference) at :mod:`fltrust.trust.measures.governance`, then delete this module.
"""

from fltrust.trust.measures.governance import DECLARATIONS, DeclarationError, validate_declarations

__all__ = ["DECLARATIONS", "DeclarationError", "validate_declarations"]
