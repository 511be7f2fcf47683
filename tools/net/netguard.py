"""SSRF guard: which addresses a user-given URL (and every redirect hop) may reach.

pagetrail fetches URLs that strangers give it, so a URL must not make it talk to the machine
it runs on, the private network behind it, or a cloud metadata service. A host is refused
when it is (or resolves to) a loopback, private, link-local, multicast, reserved,
unspecified, shared (CGNAT) or cloud-metadata address, or is a name that means "this
machine" (localhost, *.localhost, metadata.google.internal, ...).

Exempt: `settings.allow_hosts` (`host` or `host:port`: the whole host, or that port of it,
for every request) and the *origins* (scheme, host, port) of configured endpoints (archives,
searxng_url, hn_api_url, proxy) — the operator chose those. An endpoint exempts only its own
origin, never other ports of its host, and only for pagetrail's own requests to it
(`check_url(url, endpoints=True)`, which the fetcher passes for `get(..., endpoint=True)`:
archive, search and HN calls); a user's URL, a search result or a redirect from an ordinary
page into an endpoint origin is checked like any URL.

With a proxy, target names are not resolved here (the proxy resolves them and its errors are
classified by check_link); literal addresses and local names are still refused.

DNS rebinding: a name may resolve to a public address when checked and to a private one when
connected. Without a proxy, `GuardedNetworkBackend` closes that gap: it resolves, checks and
connects to the *checked* address in one step (the TLS server name stays the host name), so
the address that was checked is the address that is used. The up-front `check_url` remains
for clear errors before any connection is opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import httpcore

from pagetrail.tools.errors import FetchFailed, RefusedAddress
from pagetrail.tools.net.urls import DEFAULT_PORTS, validate_url
from pagetrail.tools.settings import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata endpoints (AWS, GCP, Azure, OpenStack: 169.254.169.254; AWS IPv6; ECS task
# metadata; Alibaba Cloud). Most are link-local anyway; named so the refusal says why.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200")
)
# Names that mean "this machine" or a metadata service without needing DNS to say so.
LOCAL_NAMES: frozenset[str] = frozenset(
    {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback",
     "metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"}
)
LOCAL_SUFFIXES: tuple[str, ...] = (".localhost", ".internal", ".local", ".home.arpa")

_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # CGNAT, RFC 6598
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def classify_address(ip: IPAddress) -> str | None:
    """Why `ip` must not be fetched ("loopback", "private", ...), or None if it is public."""
    if ip in METADATA_ADDRESSES:
        return "cloud-metadata"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return classify_address(embedded)
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("shared", isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED_ADDRESS_SPACE),
    )
    for label, hit in checks:
        if hit:
            return label
    if not ip.is_global:
        return "non-global"
    return None


def parse_ip_literal(host: str) -> IPAddress | None:
    """`host` as an address if it is one, including legacy IPv4 forms resolvers accept
    ("2130706433", "0x7f.1", "127.1") so they cannot smuggle loopback past a proxy."""
    text = host.strip("[]")
    try:
        return ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        pass
    if text and all(c in "0123456789abcdefxABCDEFX." for c in text) and text[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def is_local_name(host: str) -> bool:
    name = host.lower().rstrip(".")
    return name in LOCAL_NAMES or name.endswith(LOCAL_SUFFIXES)


Origin = tuple[str, str, int]  # (scheme, host, port), lower case, default port filled in


def origin_of(url: str) -> Origin | None:
    """(scheme, host, port) of an http(s) URL; None when it has none. A URL without a scheme
    (a bare `host:port` endpoint) counts as http."""
    try:
        parts = urlsplit(url if "//" in url else "//" + url)
        scheme = (parts.scheme or "http").lower()
        host = (parts.hostname or "").lower().rstrip(".")
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if not host or port is None or scheme not in DEFAULT_PORTS:
        return None
    return scheme, host, port


def endpoint_origins(settings: Settings) -> frozenset[Origin]:
    """Origins of the configured endpoints (archives, searxng_url, hn_api_url, spn_url,
    proxy)."""
    origins = set()
    for url in [*settings.archives, settings.searxng_url, settings.hn_api_url, settings.spn_url,
                settings.proxy]:
        origin = origin_of(url.strip()) if url and url.strip() else None
        if origin is not None:
            origins.add(origin)
    return frozenset(origins)


def allowed_hosts(settings: Settings) -> frozenset[str]:
    """`settings.allow_hosts` entries (`host` or `host:port`, lower case): exempt for every
    request. Configured endpoints are not here: they exempt their origin only
    (`endpoint_origins`)."""
    return frozenset(h.strip().lower().rstrip(".") for h in settings.allow_hosts if h.strip())


def host_is_allowed(host: str, port: int | None, allowed: frozenset[str]) -> bool:
    host = host.lower().rstrip(".").strip("[]")
    if host in allowed or f"[{host}]" in allowed:
        return True
    return port is not None and (f"{host}:{port}" in allowed or f"[{host}]:{port}" in allowed)


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, through the event loop's getaddrinfo."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _refuse(url: str, host: str, address: str, label: str) -> RefusedAddress:
    shown = host if host == address else f"{host} ({address})"
    return RefusedAddress(f"refused to fetch {shown}: {label} address", url=url)


def refuse_without_dns(host: str, url: str = "") -> str | None:
    """Raise RefusedAddress when `host` is refused before any lookup: a literal private,
    loopback, link-local or metadata address, or a local name. Otherwise the literal
    (public) address, or None for a name still to resolve."""
    literal = parse_ip_literal(host)
    if literal is not None:
        label = classify_address(literal)
        if label:
            raise _refuse(url or host, host, str(literal), label)
        return str(literal)
    if is_local_name(host):
        raise _refuse(url or host, host, host, "local name")
    return None


def refuse_local_host(url: str, settings: Settings) -> None:
    """The checks of `AddressGuard.check_url` that need no DNS, for a user's URL that must
    be refused at once (a chat command): allow_hosts exempt, as everywhere."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    if host_is_allowed(host, parts.port, allowed_hosts(settings)):
        return
    refuse_without_dns(host, url)


class AddressGuard:
    """Decides, per URL, whether pagetrail may connect; raises RefusedAddress if not."""

    def __init__(self, settings: Settings, *, resolve_timeout: float | None = None) -> None:
        self.allowed = allowed_hosts(settings)
        self.endpoints = endpoint_origins(settings)
        # What a connection sees of an origin (httpcore's connect_tcp knows no scheme).
        self._endpoint_sockets = frozenset((host, port) for _, host, port in self.endpoints)
        self.proxy = settings.proxy
        self.no_proxy = [h.strip().lower() for h in settings.no_proxy if h.strip()]
        self.resolve_timeout = resolve_timeout or settings.connect_timeout

    def uses_proxy(self, host: str, port: int | None) -> bool:
        return bool(self.proxy) and not bypasses_proxy(host, port, self.no_proxy)

    def is_allowed(self, host: str, port: int | None) -> bool:
        return host_is_allowed(host, port, self.allowed)

    def is_endpoint(self, url: str) -> bool:
        """Is `url` at the origin of a configured endpoint (archive, search, HN API, proxy)?"""
        origin = origin_of(url)
        return origin is not None and origin in self.endpoints

    def is_endpoint_socket(self, host: str, port: int) -> bool:
        return (host.lower().rstrip(".").strip("[]"), port) in self._endpoint_sockets

    async def check_url(self, url: str, *, endpoints: bool = False) -> list[str]:
        """Refuse `url` if its host is local/private; return the addresses checked (empty
        when not resolved here: allowed host, endpoint origin or proxied name).

        `endpoints=True`: the origins of configured endpoints are exempt too (requests the
        engines and archives make; the fetcher decides). The default is a user-given URL."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        exempt = endpoints and self.is_endpoint(url)
        return await self.check_host(host, port, url=url, exempt=exempt)

    async def check_host(self, host: str, port: int, *, url: str = "",
                         exempt: bool = False) -> list[str]:
        """`exempt`: the caller has established that host:port is an endpoint origin it may
        reach (see check_url); otherwise only allow_hosts are exempt."""
        if exempt or self.is_allowed(host, port):
            return []
        literal = refuse_without_dns(host, url)
        if literal is not None:
            return [literal]
        if self.uses_proxy(host, port):
            return []  # the proxy resolves; its answer for private targets is its own
        addresses = await self._resolve(host, port, url)
        for address in addresses:
            label = classify_address(ipaddress.ip_address(address.split("%")[0]))
            if label:
                raise _refuse(url or host, host, address, label)
        return addresses

    async def _resolve(self, host: str, port: int, url: str) -> list[str]:
        try:
            async with asyncio.timeout(self.resolve_timeout):
                addresses = await resolve_host(host, port)
        except TimeoutError as exc:
            raise FetchFailed(f"DNS lookup of {host} timed out", url=url, kind="timeout") from exc
        except (socket.gaierror, UnicodeError, OSError) as exc:
            raise FetchFailed(f"cannot resolve {host}: {exc}", url=url, kind="dns") from exc
        if not addresses:
            raise FetchFailed(f"cannot resolve {host}: no address", url=url, kind="dns")
        return addresses


def bypasses_proxy(host: str, port: int | None, no_proxy: Iterable[str]) -> bool:
    """curl-style no_proxy matching: exact host, host:port, domain suffix, or '*'."""
    host = host.lower().rstrip(".").strip("[]")
    for entry in no_proxy:
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        name, _, entry_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        name = name.strip("[]").lstrip("*").rstrip(".")
        if entry_port and port is not None and entry_port != str(port):
            continue
        if name.startswith("."):
            if host.endswith(name) or host == name[1:]:
                return True
        elif host == name or host.endswith("." + name):
            return True
    return False


def _has_port(entry: str) -> bool:
    if entry.startswith("["):
        return "]:" in entry
    return entry.count(":") == 1


class GuardedNetworkBackend:
    """httpcore network backend that checks the address it connects to (DNS pinning).

    Wraps the default backend: `connect_tcp(host)` resolves `host`, refuses private
    addresses (unless the host is allowed), then connects to the checked address itself.
    """

    def __init__(self, inner: Any, guard: AddressGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> Any:
        # Allowed hosts and proxied names come back empty: connect by name as asked. An
        # endpoint's host:port is exempt here: check_url has already refused any request that
        # may not reach it, and only the operator chose that name (no attacker rebinding).
        exempt = self._guard.is_endpoint_socket(host, port)
        addresses = await self._guard.check_host(host, port, url=f"//{host}:{port}",
                                                 exempt=exempt) or [host]
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout=timeout,
                                                     local_address=local_address,
                                                     socket_options=socket_options)
            except (OSError, httpcore.ConnectError) as exc:  # next address, as a resolver would
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        raise RefusedAddress("unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def ensure_fetchable(url: str, settings: Settings) -> str:
    """A URL a person or a model gave: validated (InvalidURL) and refused when it points at a
    private/loopback/link-local/metadata address (RefusedAddress), with no endpoint exemption.

    The one gate every face's user URLs pass (CLI, MCP through tools.api, Slack, scans), so
    the same mistake is the same error everywhere. A name that does not resolve is let
    through: dead hosts are what pagetrail recovers."""
    url = validate_url(url)
    with contextlib.suppress(FetchFailed):  # DNS failure: the engine says "unreachable"
        await AddressGuard(settings).check_url(url)
    return url
