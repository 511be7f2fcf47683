"""Is it the web, or is it us? pagetrail's own network is not the web (#26 item 8).

A link whose host does not resolve is unreachable — unless nothing resolves: on a machine
with no DNS, no route or no network at all, every host fails the same local way, and
calling the link "unreachable" (or recording it as dead) would be a lie. When a request
fails with such a local-looking fault (`local_fault`), `network_down` asks a second,
independent and well-known address once per Fetcher (the probe: PAGETRAIL_NETWORK_PROBE_URL,
by default the first configured archive's origin) through the same fetch layer. If the probe
fails the same way, the network is down: `NetworkDown` is raised, no verdict is given, and
nothing is recorded (the CLI exits 3). If the probe answers — any HTTP status — the failure
is the link's own (NXDOMAIN of that host: "unreachable").
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from pagetrail.tools.errors import (
    FetchFailed,
    InvalidURL,
    PagetrailError,
    RefusedAddress,
    TooManyRedirects,
)

if TYPE_CHECKING:
    from pagetrail.tools.net.fetch import Fetcher

# OS messages of a connect() that never left this machine (Linux, BSD/macOS, Windows).
NO_ROUTE = ("network is unreachable", "no route to host", "errno 101", "errno 113",
            "errno 51", "errno 65", "host is unreachable", "winerror 10051",
            "winerror 10065", "network unreachable")
NETWORK_DOWN_EXIT = 3  # `pagetrail check` / `recover` exit status when the network is down


class NetworkDown(PagetrailError):
    """Nothing at all could be reached from here (no DNS resolution, no route): pagetrail's
    own network is down, so no verdict is given on the link."""

    code = "network_down"


def local_fault(kind: str | None, message: str) -> str | None:
    """"dns" or "no_route" when a fetch failure may be this machine's rather than the
    host's (decided by the probe), else None."""
    if kind == "dns":
        return "dns"
    text = message.lower()
    if any(marker in text for marker in NO_ROUTE):
        return "no_route"
    return None


def probe_url(archives: list[str], configured: str | None = None) -> str | None:
    """The probe's address: the setting, else the origin of the first configured archive."""
    if configured and configured.strip():
        return configured.strip()
    for archive in archives:
        parts = urlsplit(archive.strip())
        if parts.scheme in ("http", "https") and parts.hostname:
            netloc = parts.netloc.rsplit("@", 1)[-1]  # no credentials in the probe
            return urlunsplit((parts.scheme, netloc, "/", "", ""))
    return None


# One probe per Fetcher (a run): its answer, or the task still asking.
_probes: weakref.WeakKeyDictionary[Fetcher, str | None] = weakref.WeakKeyDictionary()


async def network_down(fetcher: Fetcher, fault: str) -> str | None:
    """Why the network is down (a sentence), or None when the probe answered. `fault` is
    what the failed request showed ("dns", "no_route"). Asked once per Fetcher."""
    if fetcher in _probes:
        return _probes[fetcher]
    settings = fetcher.settings
    target = probe_url(list(settings.archives), settings.network_probe_url)
    verdict: str | None = None
    if target is not None:
        try:
            await fetcher.head(target, retry=False, endpoint=True, follow_redirects=False)
        except FetchFailed as exc:
            probe_fault = local_fault(exc.kind, str(exc)) or (
                "timeout" if exc.kind == "timeout" else None)
            if probe_fault is not None:
                verdict = (f"the network is down: {fault} failure for the link, and the probe "
                           f"{_host(target)} failed too ({exc})")
        except (RefusedAddress, InvalidURL, TooManyRedirects):
            verdict = None  # the probe could not be asked: no claim about the network
    _probes[fetcher] = verdict
    return verdict


def _host(url: str) -> str:
    return urlsplit(url).hostname or url
