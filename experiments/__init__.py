"""gradlab's library: gradient variants, the MuZero toy task, the runner and the reports.

``SOURCES``: the package's ``.py`` files as one SHA-256 (:mod:`experiments.base.sources`), read
here, before anything else of the package is imported, so it names the code this process runs;
None if a file could not be read. The graph store keys traced graphs by it.
"""

from experiments.base.sources import fingerprint_or_none as _fingerprint_or_none

SOURCES: str | None = _fingerprint_or_none()

__all__ = ["SOURCES"]
