"""Load and validate a testbed world directory (FORMAT.md, versions 1 and 2).

Validation happens before anything is served, and every problem names its file and line
(`live.jsonl:17: blob missing: ab/ab12….html.gz`). Blob bodies are read lazily: loading checks
that each blob file exists but decompresses nothing.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pagetrail.tools.errors import WorldError
from pagetrail.tools.net.urls import canonical_host

FORMAT_VERSIONS = (1, 2)
HOST_STATES = frozenset({"up", "nxdomain", "refused", "timeout", "tls_error"})
NOT_FOUND_MODES = frozenset({"404", "410", "soft404", "home_redirect", "parked"})
CATEGORIES = frozenset({"moved_same_host", "moved_new_host", "replaced", "gone", "alive"})
EXPECT_KINDS = frozenset({"moved", "replacement", "archived", "none", "alive"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class HostSpec:
    name: str
    state: str
    not_found: str = "404"
    latency_ms: int = 0
    flaky: float = 0.0
    not_found_blob: str | None = None

    @property
    def serves_pages(self) -> bool:
        """Whether the host's own pages are served: it is up and not parked (a parked host
        answers every path, known or not, with its parking page)."""
        return self.state == "up" and self.not_found != "parked"


@dataclass(frozen=True)
class LiveResource:
    url: str
    status: int
    headers: dict[str, str]
    blob: str | None
    indexed: bool = True  # version 2: false = the search engine never returns it
    popularity: int = 0  # version 2: in-links the search engine believes the page has


@dataclass(frozen=True)
class RateLimit:
    per_second: float
    burst: int


@dataclass(frozen=True)
class SearchSpec:
    """world.json `search` (version 2); None fields keep version-1 behaviour."""

    results_per_page: int | None = None
    max_pages: int | None = None
    rate_limit: RateLimit | None = None
    popularity_weight: float = 0.0


@dataclass(frozen=True)
class SocialPost:
    url: str
    title: str
    tags: tuple[str, ...]
    points: int
    created: str | None


@dataclass(frozen=True)
class Case:
    id: str
    url: str
    category: str
    expect_kind: str
    expect_urls: tuple[str, ...]
    raw: dict[str, Any]


@dataclass
class World:
    path: Path
    name: str
    then: str
    now: str
    archive_collection: str
    hosts: dict[str, HostSpec]
    resources: dict[str, LiveResource]
    social: list[SocialPost] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    format: int = 1
    search: SearchSpec = field(default_factory=SearchSpec)
    _by_key: dict[str, LiveResource] = field(default_factory=dict, repr=False)
    _hosts_by_key: dict[str, HostSpec] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {resource_key(r.url): r for r in self.resources.values()}
        # A world may name an internationalised host in Unicode; clients send IDNA ASCII.
        self._hosts_by_key = {canonical_host(name): spec for name, spec in self.hosts.items()}

    @property
    def warcs(self) -> list[Path]:
        folder = world_dir(self.path, "archive")
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.name.endswith((".warc", ".warc.gz")))

    def host(self, name: str) -> HostSpec | None:
        return self._hosts_by_key.get(canonical_host(name))

    def lookup(self, url: str) -> LiveResource | None:
        """The live resource at `url`: exact match, then by resource_key()."""
        return self.resources.get(url) or self._by_key.get(resource_key(url))

    def blob_path(self, blob: str) -> Path:
        return world_dir(self.path, "blobs") / blob

    def read_blob(self, blob: str) -> bytes:
        """The body of a blob, decompressed."""
        with gzip.open(self.blob_path(blob), "rb") as handle:
            return handle.read()

    def host_root(self, host: str) -> LiveResource | None:
        for scheme in ("https", "http"):
            found = self.lookup(f"{scheme}://{host}/")
            if found is not None:
                return found
        return None


_LINK_FILE_MAX = 4096


def world_dir(root: Path, name: str) -> Path:
    """`blobs/` or `archive/` of a world. Worlds may share them (dev2 uses dev's through
    relative symbolic links); a checkout without symlink support turns such a link into a
    small file holding the relative target, which is followed here the same way, as long
    as it stays among the worlds (beside `root`)."""
    path = root / name
    if path.is_dir() or not path.is_file() or path.stat().st_size > _LINK_FILE_MAX:
        return path
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return path
    target = (root / text).resolve()
    if not text or "\n" in text or not target.is_dir() or \
            not target.is_relative_to(root.resolve().parent):
        return path
    return target


def resource_key(url: str) -> str:
    """Loose key for matching a requested URL against live.jsonl.

    Lower-case scheme and host (IDNA ASCII), default port dropped, empty path = "/", fragment
    dropped. Scheme, "www." and a trailing slash stay significant: those are different
    resources on a real web (a site that drops its trailing slashes leaves the old URLs dead,
    as a world may say; FORMAT.md lists resources by URL, and any other path is not found).
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    host = canonical_host(parts.hostname or "")
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = parts.path or "/"
    return urlunsplit((scheme, netloc, path, parts.query, ""))


def load_world(path: str | Path) -> World:
    """Read and validate a world directory; raise WorldError naming FILE:LINE on the first problem."""
    root = Path(path)
    if not root.is_dir():
        raise WorldError(f"{root}: not a directory")
    meta = _load_meta(root)
    hosts = _load_hosts(root, meta)
    resources = _load_live(root, hosts, version=meta["format"])
    world = World(
        path=root,
        name=str(meta.get("name") or root.name),
        then=str(meta.get("then") or ""),
        now=str(meta.get("now") or ""),
        archive_collection=str(meta["archive_collection"]),
        hosts=hosts,
        resources=resources,
        format=meta["format"],
        search=_load_search(meta) if meta["format"] >= 2 else SearchSpec(),
    )
    _check_roots(world)
    world.social = _load_social(root)
    world.cases = _load_cases(root, world)
    return world


# --- world.json ---------------------------------------------------------------------------

def _load_meta(root: Path) -> dict[str, Any]:
    file = root / "world.json"
    if not file.is_file():
        raise WorldError("world.json: missing")
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", 1)
        raise WorldError(f"world.json:{line}: invalid JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise WorldError("world.json:1: top level must be an object")
    version = meta.get("format")
    if isinstance(version, bool) or version not in FORMAT_VERSIONS:
        known = " or ".join(map(str, FORMAT_VERSIONS))
        raise WorldError(f"world.json:1: unknown format {version!r}: this runner serves format "
                         f"{known}")
    collection = meta.get("archive_collection", "world")
    if not isinstance(collection, str) or not collection.replace("-", "").replace("_", "").isalnum():
        raise WorldError(f"world.json:1: archive_collection must be a simple name, got {collection!r}")
    meta["archive_collection"] = collection
    if not isinstance(meta.get("hosts"), dict):
        raise WorldError("world.json:1: 'hosts' must be an object")
    return meta


def _number(where: str, value: Any, *, minimum: float, integer: bool = False) -> float:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or value < minimum:
        raise WorldError(f"{where} must be {'an integer' if integer else 'a number'} ≥ {minimum:g}")
    return value


def _load_search(meta: dict[str, Any]) -> SearchSpec:
    """Version 2's `search` block: every field optional (absent = version-1 behaviour)."""
    block = meta.get("search")
    if block is None:
        return SearchSpec()
    where = "world.json: search"
    if not isinstance(block, dict):
        raise WorldError(f"{where}: must be an object")
    per_page = block.get("results_per_page")
    pages = block.get("max_pages")
    limit = block.get("rate_limit")
    rate: RateLimit | None = None
    if limit is not None:
        if not isinstance(limit, dict):
            raise WorldError(f"{where}.rate_limit: must be an object")
        per_second = _number(f"{where}.rate_limit.per_second", limit.get("per_second"),
                             minimum=1e-9)
        burst = limit.get("burst", max(1, int(per_second)))
        rate = RateLimit(float(per_second),
                         int(_number(f"{where}.rate_limit.burst", burst, minimum=1, integer=True)))
    return SearchSpec(
        results_per_page=None if per_page is None else int(
            _number(f"{where}.results_per_page", per_page, minimum=1, integer=True)),
        max_pages=None if pages is None else int(
            _number(f"{where}.max_pages", pages, minimum=1, integer=True)),
        rate_limit=rate,
        popularity_weight=float(_number(f"{where}.popularity_weight",
                                        block.get("popularity_weight", 0.0), minimum=0)),
    )


def _load_hosts(root: Path, meta: dict[str, Any]) -> dict[str, HostSpec]:
    hosts: dict[str, HostSpec] = {}
    for name, spec in meta["hosts"].items():
        where = f"world.json: host {name!r}"
        if not isinstance(spec, dict):
            raise WorldError(f"{where}: must be an object")
        state = spec.get("state")
        if state not in HOST_STATES:
            raise WorldError(f"{where}: state must be one of {sorted(HOST_STATES)}, got {state!r}")
        not_found = str(spec.get("not_found", "404"))
        if not_found not in NOT_FOUND_MODES:
            raise WorldError(
                f"{where}: not_found must be one of {sorted(NOT_FOUND_MODES)}, got {not_found!r}"
            )
        blob = spec.get("not_found_blob")
        if not_found == "soft404" and not blob:
            raise WorldError(f"{where}: soft404 needs not_found_blob")
        if blob is not None and not (world_dir(root, "blobs") / str(blob)).is_file():
            raise WorldError(f"{where}: not_found_blob missing: blobs/{blob}")
        latency = spec.get("latency_ms", 0)
        flaky = spec.get("flaky", 0)
        if not isinstance(latency, int | float) or latency < 0:
            raise WorldError(f"{where}: latency_ms must be a number ≥ 0")
        if not isinstance(flaky, int | float) or not 0 <= flaky <= 1:
            raise WorldError(f"{where}: flaky must be a fraction in [0, 1]")
        key = name.lower().rstrip(".")
        hosts[key] = HostSpec(key, state, not_found, int(latency), float(flaky),
                              str(blob) if blob else None)
    return hosts


# --- jsonl files --------------------------------------------------------------------------

def _jsonl(root: Path, name: str, *, required: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """(\"FILE:LINE\", object) for every non-blank line of a JSON-lines file."""
    file = root / name
    if not file.is_file():
        if required:
            raise WorldError(f"{name}: missing")
        return
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{name}:{number}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise WorldError(f"{where}: invalid JSON: {exc.msg}") from exc
            if not isinstance(item, dict):
                raise WorldError(f"{where}: each line must be a JSON object")
            yield where, item


def _check_url(where: str, value: Any, label: str = "url") -> str:
    if not isinstance(value, str):
        raise WorldError(f"{where}: {label} must be a string")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise WorldError(f"{where}: {label} is malformed: {value!r}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WorldError(f"{where}: {label} must be an absolute http(s) URL: {value!r}")
    return value


def _load_live(root: Path, hosts: dict[str, HostSpec], *,
               version: int = 1) -> dict[str, LiveResource]:
    resources: dict[str, LiveResource] = {}
    blobs = world_dir(root, "blobs")
    for where, item in _jsonl(root, "live.jsonl", required=True):
        url = _check_url(where, item.get("url"))
        host = (urlsplit(url).hostname or "").lower()
        spec = hosts.get(host)
        if spec is None:
            raise WorldError(f"{where}: host {host!r} is not listed in world.json")
        if spec.state != "up":
            raise WorldError(f"{where}: host {host!r} is {spec.state}, it cannot serve resources")
        status = item.get("status")
        if not isinstance(status, int) or not 100 <= status <= 599:
            raise WorldError(f"{where}: status must be an HTTP status code, got {status!r}")
        headers = item.get("headers") or {}
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise WorldError(f"{where}: headers must be an object of strings")
        blob = item.get("blob")
        if 300 <= status < 400 and status != 304:
            if not any(k.lower() == "location" for k in headers):
                raise WorldError(f"{where}: redirect without a Location header")
        elif not blob:
            raise WorldError(f"{where}: status {status} needs a blob")
        if blob is not None:
            if not isinstance(blob, str) or ".." in Path(blob).parts or blob.startswith("/"):
                raise WorldError(f"{where}: blob must be a relative path inside blobs/")
            if not (blobs / blob).is_file():
                raise WorldError(f"{where}: blob missing: blobs/{blob}")
        if url in resources:
            raise WorldError(f"{where}: duplicate url {url}")
        indexed, popularity = True, 0
        if version >= 2:  # version-1 worlds keep version-1 behaviour whatever they carry
            indexed = item.get("indexed", True)
            if not isinstance(indexed, bool):
                raise WorldError(f"{where}: indexed must be true or false")
            popularity = int(_number(f"{where}: popularity", item.get("popularity", 0),
                                     minimum=0, integer=True))
        resources[url] = LiveResource(url, status, dict(headers), blob, indexed, popularity)
    return resources


def _check_roots(world: World) -> None:
    """FORMAT: every `up` host has its root page (http or https, maybe a redirect)."""
    for name, spec in world.hosts.items():
        if spec.state == "up" and world.host_root(name) is None:
            raise WorldError(f"live.jsonl: host {name!r} is up but has no root page")


def _load_social(root: Path) -> list[SocialPost]:
    posts: list[SocialPost] = []
    for where, item in _jsonl(root, "social.jsonl", required=False):
        url = _check_url(where, item.get("url"))
        title = item.get("title")
        if not isinstance(title, str):
            raise WorldError(f"{where}: title must be a string")
        tags = item.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise WorldError(f"{where}: tags must be a list of strings")
        points = item.get("points", 0)
        if not isinstance(points, int):
            raise WorldError(f"{where}: points must be an integer")
        created = item.get("created")
        if created is not None and not isinstance(created, str):
            raise WorldError(f"{where}: created must be an ISO date string")
        posts.append(SocialPost(url, title, tuple(tags), points, created))
    return posts


def _load_cases(root: Path, world: World) -> list[Case]:
    cases: list[Case] = []
    seen: set[str] = set()
    for where, item in _jsonl(root, "cases.jsonl", required=False):
        case_id = item.get("id")
        if not isinstance(case_id, str) or not case_id:
            raise WorldError(f"{where}: id must be a non-empty string")
        if case_id in seen:
            raise WorldError(f"{where}: duplicate id {case_id!r}")
        seen.add(case_id)
        url = _check_url(where, item.get("url"))
        source = item.get("source")
        if source is not None:
            if not isinstance(source, dict):
                raise WorldError(f"{where}: source must be an object or null")
            source_url = _check_url(where, source.get("url"), "source.url")
            if world.host(urlsplit(source_url).hostname or "") is None:
                raise WorldError(f"{where}: source.url host is not listed in world.json")
        category = item.get("category")
        if category not in CATEGORIES:
            raise WorldError(f"{where}: category must be one of {sorted(CATEGORIES)}")
        expect = item.get("expect")
        if not isinstance(expect, dict):
            raise WorldError(f"{where}: expect must be an object")
        kind = expect.get("kind")
        if kind not in EXPECT_KINDS:
            raise WorldError(f"{where}: expect.kind must be one of {sorted(EXPECT_KINDS)}")
        urls = expect.get("urls") or []
        if not isinstance(urls, list):
            raise WorldError(f"{where}: expect.urls must be a list")
        for answer in urls:
            _check_url(where, answer, "expect.urls entry")
            if world.lookup(answer) is None:
                raise WorldError(f"{where}: expect.urls entry is not in live.jsonl: {answer}")
        drifted = expect.get("drifted")
        if drifted is not None and (not isinstance(drifted, bool) or kind != "alive"):
            raise WorldError(f"{where}: expect.drifted must be true or false, on alive cases only")
        if kind in ("moved", "replacement") and not urls:
            raise WorldError(f"{where}: expect.kind {kind} needs at least one expect.urls entry")
        cases.append(Case(case_id, url, category, kind, tuple(urls), item))
    return cases
