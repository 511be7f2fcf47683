"""What pagetrail learns, beside the recovery: the site's URL rewrite rules inferred from its
known moves (`aliases`, FABLE), the URL topic classifier — training, evaluating, saving a
model (`classify`) — and the archived pages on the same topic it recommends (`related`).

The recovery calls them through this package only (import-linter keeps it so): `KnownMove`
and `infer_aliases` for the direct evidence and the siblings' redirects, `recommend_archived`
when nothing else helps. The lab's own uses (training, evaluation) import the modules.
Imports the layers below the recovery (content, archive, net) and nothing of it.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use (the classifier's libraries are heavy).
_EXPORTS: dict[str, str] = {
    "KnownMove": "pagetrail.tools.learning.aliases",
    "infer_aliases": "pagetrail.tools.learning.aliases",
    "recommend_archived": "pagetrail.tools.learning.related",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS

__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
