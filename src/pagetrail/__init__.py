"""pagetrail — find where a dead web link went.

The engine is `pagetrail.tools` (its facade for faces: `pagetrail.tools.api`), the store
`pagetrail.store`, the faces `pagetrail.cli`, `pagetrail.server` and `pagetrail.bot`.
This top-level package lives in `src/pagetrail/` rather than `pagetrail/` so that a
checkout's root on `sys.path` (`python -m pytest`) never shadows the installed mapping.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pagetrail")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
