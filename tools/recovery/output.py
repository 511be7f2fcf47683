"""Formats of a Recovery: a human table, Robust Links HTML (pure)."""

from __future__ import annotations

import html
from datetime import datetime

from pagetrail.tools.models import Recovery


def best_live(recovery: Recovery):  # type: ignore[no-untyped-def]
    return next((c for c in recovery.candidates if c.kind != "archived"), None)


def robust_link(recovery: Recovery, text: str | None = None) -> str:
    """Robust Links HTML (robustlinks.mementoweb.org) for the chosen answer.

    href is the live answer when there is one (else the original URL); data-originalurl the
    dead URL; data-versionurl/-date the archived copy when there is one.
    """
    live = best_live(recovery) if recovery.answer in ("moved", "replacement", "redirected") else None
    href = live.url if live else recovery.url
    attrs = [("href", href)]
    if live:
        attrs.append(("data-originalurl", recovery.url))
    if recovery.memento is not None:
        attrs.append(("data-versionurl", recovery.memento.memento_url))
        attrs.append(("data-versiondate", recovery.memento.datetime.strftime("%Y-%m-%d")))
    label = text or (live.title if live and live.title else href)
    return _anchor(attrs, label)


def robust_anchor(href: str, version_url: str, version_date: datetime, text: str = "") -> str:
    """A Robust Link to a page that works, with the archived copy it should be read as (a
    drifted link): `<a href=LIVE data-versionurl=MEMENTO data-versiondate=YYYY-MM-DD>`."""
    return _anchor([("href", href), ("data-versionurl", version_url),
                    ("data-versiondate", version_date.strftime("%Y-%m-%d"))], text or href)


def _anchor(attrs: list[tuple[str, str]], label: str) -> str:
    """Attribute values and the label come from pages and archives: escaped."""
    rendered = " ".join(f'{k}="{html.escape(v, quote=True)}"' for k, v in attrs)
    return f"<a {rendered}>{html.escape(label)}</a>"


def summary_line(recovery: Recovery) -> str:
    """A recovery in two short lines: the URL, then its check verdict, answer and reason."""
    verdict = recovery.check.verdict if recovery.check else "?"
    return f"{recovery.url}\n  check: {verdict}  answer: {recovery.answer} — {recovery.reason}"
