"""What a search engine's failure was, named (#26 item 7): a quota spent for the day or the
month, a rate limit, a bot challenge, engines down behind a metasearch, a refused key.

Engines raise the errors below (or base's RateLimited / EngineTransient / EngineUnavailable);
`failure_kind` names any of them for `EngineFailure.kind`, so an answer that found nothing
because Google's daily quota was spent says so, engine by engine, instead of "no candidates".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pagetrail.tools.engines.base import (
    EngineTransient,
    HttpGetter,
    HttpResponse,
    raise_for_status,
    redact,
    response_json,
    translate_fetch_error,
)
from pagetrail.tools.errors import EngineUnavailable, PagetrailError, RateLimited
from pagetrail.tools.models import EngineFailure
from pagetrail.tools.net.netcheck import NetworkDown, local_fault, network_down

if TYPE_CHECKING:
    from pagetrail.tools.net.fetch import Fetcher


class QuotaExhausted(EngineUnavailable):
    """The engine's quota (per day, per month) is spent: not retried; `resets_in` seconds
    when the engine said."""

    code = "engine_quota"

    def __init__(self, message: str, *, resets_in: float | None = None) -> None:
        super().__init__(message)
        self.resets_in = resets_in


class EngineChallenged(EngineUnavailable):
    """The engine answered a bot challenge (a captcha page) instead of results."""

    code = "engine_challenge"


class EngineRefused(EngineUnavailable):
    """The engine refused the request as configured (a bad or unauthorised key, a
    SearXNG instance without the JSON format): fixed by configuration, not by waiting."""

    code = "engine_refused"


# EngineFailure.kind values (docs/realweb.md).
KINDS = ("quota", "rate_limited", "challenge", "refused", "timeout", "transient",
         "unavailable", "partial", "internal", "store")


def failure_kind(exc: PagetrailError) -> str:
    """The kind of an engine's failure, for `EngineFailure.kind`."""
    if isinstance(exc, QuotaExhausted):
        return "quota"
    if isinstance(exc, RateLimited):
        return "rate_limited"
    if isinstance(exc, EngineChallenged):
        return "challenge"
    if isinstance(exc, EngineRefused):
        return "refused"
    if isinstance(exc, EngineTransient):
        return "timeout" if "timed out" in str(exc) or "no answer within" in str(exc) \
            else "transient"
    return "unavailable"


class PartialHits(list):  # type: ignore[type-arg]
    """An engine's hits with the backends that did not answer (a metasearch such as
    SearXNG: `unresponsive` is [(backend, why), …]). The hits stand; the service names each
    silent backend as a `partial` failure and does not cache the incomplete answer."""

    def __init__(self, hits: object = (), unresponsive: list[tuple[str, str]] | None = None
                 ) -> None:
        super().__init__(hits)  # type: ignore[arg-type]
        self.unresponsive = list(unresponsive or [])


Explain = Callable[[int, Mapping[str, str], Any], PagetrailError | None]


def payload_of(response: HttpResponse) -> Any:
    """The JSON of an error answer, or None when it is not JSON."""
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):
        return None


async def fetch_api_json(fetcher: HttpGetter, engine: str, url: str, *,
                         headers: Mapping[str, str] | None = None,
                         secrets: Iterable[str | None] = (), explain: Explain) -> Any:
    """base.fetch_json, with the engine's own reading of its error answers first: `explain`
    (status, headers, decoded JSON or None) names a quota, a rate limit, a refusal; what it
    does not name goes to base.raise_for_status as before."""
    secrets = list(secrets)
    sent = {"Accept": "application/json", **(headers or {})}
    try:
        response = await fetcher.get(url, headers=sent, retry=False, endpoint=True)
    except EngineUnavailable:
        raise
    except PagetrailError as exc:
        raise translate_fetch_error(engine, exc, secrets) from None
    if response.status >= 400:
        named = explain(response.status, response.headers, payload_of(response))
        if named is not None:
            named.args = (redact(str(named), secrets),)  # an error body may echo the key
            raise named
    raise_for_status(engine, response)
    return response_json(engine, response)


def header_list(headers: Mapping[str, str], name: str) -> list[str]:
    """A comma-separated header's values (Brave's X-RateLimit-*: one per window)."""
    wanted = name.lower()
    value = next((str(v) for k, v in headers.items() if k.lower() == wanted), "")
    return [part.strip() for part in value.split(",") if part.strip()]


# An engine's failure that carries a fetch-layer DNS fault: the fetch layer's
# `fetch_failed: dns: …` or the address guard's `fetch_failed: cannot resolve <host>: …`
# (tools/net/fetch.py, tools/net/netguard.py); a no-route fault is read by `local_fault`.
_DNS_FAULT = re.compile(r"fetch_failed: (?:dns: |cannot resolve )")


async def raise_if_network_down(failures: Iterable[EngineFailure], fetcher: Fetcher) -> None:
    """Every engine failed and one failed the way a machine without network fails (no DNS,
    no route): ask the probe (tools/net/netcheck.py); NetworkDown when it fails too — the
    engines are not at fault, pagetrail's own network is. Called only when no engine
    answered."""
    for failure in failures:
        dns = _DNS_FAULT.search(failure.error) is not None
        fault = local_fault("dns" if dns else None, failure.error)
        if fault is None:
            continue
        down = await network_down(fetcher, fault)
        if down is not None:
            raise NetworkDown(down)
        return  # the probe answered: the engines' failures are theirs, as named
