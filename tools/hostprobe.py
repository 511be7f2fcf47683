"""Soft-404 probing once per URL shape per run, and a one-request check for scans.

`check_link` probes a random sibling of every live HTML page: one extra request per link.
A scan of thousands of links on a few hosts asks the same question over and over — how does
this site answer a URL that cannot exist? — so `SiblingProber` asks it once per host and
path shape (directory + extension + query keys; Bar-Yossef's sibling test compares against
a random URL *of the same shape*) and shares the answer, with concurrent askers waiting on
the same probe. `scan_check` is the scanner's check: one GET (a scan's targets are mostly
HTML, for which `check_link`'s HEAD would be followed by a GET anyway), judged by
`tools.check.classify` with the shared sibling answer.
"""

from __future__ import annotations

import asyncio
import posixpath
from urllib.parse import parse_qsl, urlsplit

from pagetrail.tools.check import (
    Observation,
    Observations,
    _observe,
    classify,
    parking_evidence,
    redirected_to_root,
    sibling_url,
)
from pagetrail.tools.fetch import Fetcher
from pagetrail.tools.models import CheckResult
from pagetrail.tools.urls import validate_url

HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_SHAPES_PER_HOST = 16  # beyond this, a host's probes are shared by all its URLs


def shape_of(url: str) -> tuple[str, str, str, str]:
    """(scheme+host, directory, extension, sorted query keys): URLs a site treats alike."""
    parts = urlsplit(url)
    directory, last = posixpath.split(parts.path or "/")
    ext = posixpath.splitext(last)[1].lower()
    keys = ",".join(sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}))
    return f"{parts.scheme}://{parts.netloc.lower()}", directory, ext, keys


def needs_sibling(url: str, page: Observation) -> bool:
    """The conditions under which check_link probes a sibling (a live HTML page, not root)."""
    return (not page.error and page.status is not None and 200 <= page.status < 300
            and not page.squid_error and page.content_type in HTML_TYPES
            and not redirected_to_root(url, page.final_url, page.chain)
            and not parking_evidence(page.title, page.text, page.final_url)["parked"])


class SiblingProber:
    """One soft-404 probe per URL shape per run, shared by every URL of that shape."""

    def __init__(self, fetcher: Fetcher, *, polite: bool = True) -> None:
        self.fetcher = fetcher
        self.polite = polite
        self.probes = 0
        self._answers: dict[tuple[str, str, str, str],
                            asyncio.Future[tuple[str | None, Observation | None]]] = {}
        self._shapes_per_host: dict[str, int] = {}

    def _key(self, url: str) -> tuple[str, str, str, str]:
        key = shape_of(url)
        if key in self._answers:
            return key
        if self._shapes_per_host.get(key[0], 0) >= MAX_SHAPES_PER_HOST:
            return key[0], "*", "", ""
        self._shapes_per_host[key[0]] = self._shapes_per_host.get(key[0], 0) + 1
        return key

    async def sibling_for(self, url: str) -> tuple[str | None, Observation | None]:
        """(probe URL, what the site answered to it), fetched once per shape."""
        key = self._key(url)
        future = self._answers.get(key)
        if future is None:
            future = self._answers[key] = asyncio.get_running_loop().create_future()
            try:
                probe = sibling_url(url)
                observed = None
                if probe:
                    self.probes += 1
                    observed = await _observe(self.fetcher, "GET", probe, self.polite)
                future.set_result((probe, observed))
            except BaseException as exc:
                # Let waiters see the failure, and let a later URL of the shape try again.
                self._answers.pop(key, None)
                future.set_exception(exc)
                future.exception()  # mark retrieved: waiters re-raise it themselves
                raise
        return await asyncio.shield(future)


def judge(url: str, page: Observation, sibling: tuple[str | None, Observation | None] | None
          ) -> CheckResult:
    """The verdict for a page already fetched (a crawled page or a checked link)."""
    obs = Observations(url=url, page=page)
    if sibling is not None:
        obs.sibling_url, obs.sibling = sibling
    return classify(obs)


async def scan_check(url: str, fetcher: Fetcher, prober: SiblingProber, *,
                     polite: bool = True) -> CheckResult:
    """Check one URL with one GET plus the shared sibling probe of its shape."""
    url = validate_url(url)
    page = await _observe(fetcher, "GET", url, polite)
    sibling = await prober.sibling_for(url) if needs_sibling(url, page) else None
    return judge(url, page, sibling)
