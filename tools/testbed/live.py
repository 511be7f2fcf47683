"""What the live web answers *now*, per world.json host behaviour and live.jsonl.

The proxy (transport) asks `LiveWeb.answer(url, method, accept_gzip)` for each request; the
answer is a Reply, or HANG for a host that accepts and never answers (`timeout`).

Choices where FORMAT.md leaves room (documented for test writers):
- A host not listed in world.json, or `nxdomain`: Squid's 503 `ERR_DNS_FAIL 0`.
- `refused`: Squid's 503 `ERR_CONNECT_FAIL 111`.
- `tls_error`: over https the certificate fails verification (see tls.py); plain http answers
  a 301 to the https URL, as sites that force TLS do, so following it meets the bad cert.
- `parked`: every path, known or not, gets the parking page (not_found_blob if given, else
  the host's root page, else a generic page), status 200.
- `flaky`: the n-th request to a host is answered 503 when a hash of (world, host, n) falls
  under the fraction — pseudo-random but the same on every run.
- Bodies are sent gzip-encoded as stored when the client accepts gzip, else decompressed.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from typing import Final
from urllib.parse import urlsplit

from pagetrail.tools.testbed.httpio import Reply, html_response
from pagetrail.tools.testbed.social import HN_API_HOST, SocialIndex
from pagetrail.tools.testbed.world import HostSpec, LiveResource, World

HANG: Final = None  # answer() result meaning: say nothing, ever


def squid_error(code: str, url: str) -> Reply:
    """The answer Squid gives when it cannot reach the origin (status 503)."""
    explanation = {
        "ERR_DNS_FAIL 0": "Unable to determine IP address from host name",
        "ERR_CONNECT_FAIL 111": "Connection refused",
    }.get(code, "The requested URL could not be retrieved")
    response = html_response(503, "ERROR: The requested URL could not be retrieved",
                             f"{explanation} while trying to retrieve {url}")
    response.headers += [("Server", "squid"), ("Mime-Version", "1.0"),
                         ("X-Squid-Error", code), ("X-Cache", "MISS from testbed-proxy")]
    return response


def unreachable_answer(spec: HostSpec | None, url: str) -> Reply | None:
    """Squid's answer for a host that cannot be reached at all, or None if it can."""
    if spec is None or spec.state == "nxdomain":
        return squid_error("ERR_DNS_FAIL 0", url)
    if spec.state == "refused":
        return squid_error("ERR_CONNECT_FAIL 111", url)
    return None


class LiveWeb:
    def __init__(self, world: World) -> None:
        self.world = world
        self.social = SocialIndex(world.social)
        self._requests_per_host: Counter[str] = Counter()
        self.requests = 0

    def spec(self, host: str) -> HostSpec | None:
        return self.world.host(host)

    def is_service_host(self, host: str) -> bool:
        """Hosts the testbed itself plays (the HN API) unless the world defines them."""
        return host == HN_API_HOST and self.world.host(host) is None

    async def answer(self, url: str, method: str = "GET", *,
                     accept_gzip: bool = False) -> Reply | None:
        self.requests += 1
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
        if self.is_service_host(host):
            return self.social.answer_url(url)
        spec = self.spec(host)
        unreachable = unreachable_answer(spec, url)
        if unreachable is not None:
            return unreachable
        assert spec is not None
        if spec.state == "timeout":
            return HANG
        if spec.latency_ms:
            await asyncio.sleep(spec.latency_ms / 1000)
        if spec.state == "tls_error" and parts.scheme == "http":
            return Reply(301, [("Location", "https://" + url[len("http://"):])])
        if self._flaky_fault(spec):
            return html_response(503, "Service Unavailable", "Please try again later.",
                                 [("Retry-After", "1")])
        return self._resource_answer(spec, url, accept_gzip)

    def _flaky_fault(self, spec: HostSpec) -> bool:
        if spec.flaky <= 0:
            return False
        self._requests_per_host[spec.name] += 1
        seed = f"{self.world.name}|{spec.name}|{self._requests_per_host[spec.name]}"
        draw = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) / 0x1_0000_0000
        return draw < spec.flaky

    def _resource_answer(self, spec: HostSpec, url: str, accept_gzip: bool) -> Reply:
        if spec.not_found == "parked":
            return self._body_response(200, {"Content-Type": "text/html; charset=utf-8"},
                                       self._parking_blob(spec), accept_gzip,
                                       fallback=self._generic_parking(spec))
        resource = self.world.lookup(url)
        if resource is not None:
            return self._serve(resource, accept_gzip)
        return self._not_found(spec, url, accept_gzip)

    def _serve(self, resource: LiveResource, accept_gzip: bool) -> Reply:
        return self._body_response(resource.status, resource.headers, resource.blob, accept_gzip)

    def _body_response(self, status: int, headers: dict[str, str], blob: str | None,
                       accept_gzip: bool, fallback: Reply | None = None) -> Reply:
        if blob is None:
            if fallback is not None:
                return fallback
            return Reply(status, list(headers.items()))
        pairs = [(k, v) for k, v in headers.items() if k.lower() != "content-encoding"]
        if accept_gzip:
            body = self.world.blob_path(blob).read_bytes()
            return Reply(status, [*pairs, ("Content-Encoding", "gzip"),
                                     ("Vary", "Accept-Encoding")], body)
        return Reply(status, pairs, self.world.read_blob(blob))

    def _not_found(self, spec: HostSpec, url: str, accept_gzip: bool) -> Reply:
        mode = spec.not_found
        if mode == "soft404":
            return self._body_response(200, {"Content-Type": "text/html; charset=utf-8"},
                                       spec.not_found_blob, accept_gzip)
        if mode == "home_redirect":
            parts = urlsplit(url)
            return Reply(302, [("Location", f"{parts.scheme}://{parts.netloc}/")])
        if mode == "410":
            return html_response(410, "410 Gone", "This page has been removed.")
        return html_response(404, "404 Not Found", "The page you requested was not found.")

    def _parking_blob(self, spec: HostSpec) -> str | None:
        if spec.not_found_blob:
            return spec.not_found_blob
        root = self.world.host_root(spec.name)
        return root.blob if root is not None and root.status == 200 else None

    @staticmethod
    def _generic_parking(spec: HostSpec) -> Reply:
        return html_response(200, f"{spec.name} - This domain may be for sale",
                             "This domain name may be for sale. Related searches.")
