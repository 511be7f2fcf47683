"""What a recovery's stages share: a frozen context and a findings accumulator.

`Context` is what every stage reads and none changes: the dead URL (validated: `DeadURL`),
settings, fetcher, store, budget, the link's evidence (`Reference`, `QueryEvidence`), the
search service and its engines sorted by scope. `Findings` is what the stages add to:
candidates, failures, the queries asked, and the bookkeeping that keeps a stage from doing
twice what it did once (pages fetched, sites listed, slugs transplanted).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from pagetrail.tools import policy
from pagetrail.tools.archive.memento import CaptureListings
from pagetrail.tools.engines.base import (
    CaptureLister,
    Engine,
    Scope,
    SearchContext,
    SiteLister,
    scope_of,
)
from pagetrail.tools.models import ArchivedRedirect, Candidate, EngineFailure, Hit, Link, Query
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.urls import normalize_url, site_of, validate_url
from pagetrail.tools.ranking.rank import CandidateEvidence, Reference, exact_url_key
from pagetrail.tools.settings import Settings

if TYPE_CHECKING:
    from pagetrail.tools.engines.service import SearchService
    from pagetrail.tools.evidence.queryplan import QueryEvidence
    from pagetrail.tools.recovery.memory import Store

ProgressFn = Callable[[str, int, int | None, str], Any]


class DeadURL(str):
    """A URL that passed `urls.validate_url` (scheme, host, no credentials): validated once,
    where a recovery starts, and carried as this type from then on."""

    __slots__ = ()

    def __new__(cls, url: str) -> DeadURL:
        return str.__new__(cls, url if isinstance(url, DeadURL) else validate_url(url))

    @property
    def site(self) -> str:
        return site_of(self)


@dataclass(frozen=True)
class Request:
    """One recovery as asked: the dead URL and what came with it (the link's own evidence),
    and what it runs with."""

    url: DeadURL
    settings: Settings
    fetcher: Fetcher
    store: Store | None
    methods: frozenset[str] | None
    source_url: str | None = None  # the page that linked to it (validated)
    anchor: str = ""
    context: str = ""  # words around the link
    link_date: datetime | None = None  # when the link was made

    def allowed(self, method: str) -> bool:
        return self.methods is None or method in self.methods


@dataclass
class Budget:
    """Limits of one recovery (defaults: tools/policy.py, which reads Settings')."""

    max_queries: int = policy.MAX_QUERIES
    max_candidates: int = policy.MAX_CANDIDATES
    seconds: float = policy.RECOVERY_SECONDS
    hits_per_query: int = policy.HITS_PER_QUERY
    fetch_per_query: int = policy.FETCH_PER_QUERY

    @classmethod
    def from_settings(cls, settings: Settings) -> Budget:
        return cls(max_queries=settings.max_queries, max_candidates=settings.max_candidates,
                   seconds=settings.recovery_seconds)


class Ask(NamedTuple):
    """One query to ask: by which method, what text, of which engines, on which site."""

    method: str
    text: str
    engines: list[str]
    site: str | None = None


@dataclass
class Asks:
    """What a stage added and wants asked: `now` together with the other stages of its step, `then`
    (pages only: `asking.complement`) after all of them, in stage order. Each under its own
    SearchContext (None: the recovery's)."""

    now: list[Ask] = field(default_factory=list)
    then: list[Ask] = field(default_factory=list)
    context: SearchContext | None = None
    added: int = 0  # candidates the stage added itself (no query)


@dataclass(frozen=True)
class Engines:
    """The recovery's engines by the scope they declare (`engines.base.scope_of`)."""

    scopes: dict[str, Scope]  # engine name → scope, in the service's order
    site_local: list[str]  # "site"/"archive" engines asked for the dead host
    lister: SiteLister | None  # the "site" engine that reads a site's map, if any
    # "archive" engines that remember the captures of the hosts they listed
    capture_listers: tuple[CaptureLister, ...] = ()

    @classmethod
    def of(cls, engines: list[Engine], *, host_silent: bool) -> Engines:
        scopes = {e.name: scope_of(e) for e in engines}
        return cls(
            scopes=scopes,
            # a silent dead host would only make the site engine wait out its timeouts
            site_local=[name for name, scope in scopes.items() if scope == "archive"
                        or (scope == "site" and not host_silent)],
            lister=next((e for e in engines if scopes[e.name] == "site"
                         and isinstance(e, SiteLister)), None),
            capture_listers=tuple(e for e in engines if scopes[e.name] == "archive"
                                  and isinstance(e, CaptureLister)),
        )

    def of_scope(self, *scopes: Scope) -> list[str]:
        return [name for name, scope in self.scopes.items() if scope in scopes]

    @property
    def web(self) -> list[str]:
        return self.of_scope("web")

    @property
    def index(self) -> list[str]:
        return self.of_scope("index")

    @property
    def listers(self) -> list[str]:
        """Every engine that lists a host (for a host the site may have moved to): the
        site's own map before the archive's captures."""
        return self.of_scope("site") + self.of_scope("archive")

    def counts_as_web(self, engine: str) -> bool:
        """A failure of this engine leaves a web query unasked (what is not a known
        site, archive or index engine: a web engine, the search cache)."""
        return self.scopes.get(engine, "web") == "web"

    def method(self, name: str) -> str:
        """The query method a site-local engine's queries are counted under."""
        return "SITE" if self.scopes.get(name) == "site" else "CDX"


@dataclass(frozen=True)
class Context:
    """What every stage reads and none changes."""

    url: DeadURL
    settings: Settings
    fetcher: Fetcher
    budget: Budget
    store: Store | None
    methods: frozenset[str] | None
    reference: Reference
    evidence: QueryEvidence
    service: SearchService
    engines: Engines
    search: SearchContext  # the dead URL and its break date, for site and archive engines
    host_silent: bool  # the dead URL's host never answered (timeout)
    site_gone: bool  # the dead URL's host no longer serves its site (DNS, parked)
    site_query: str  # what to look for in a site's map: the title, the anchor or URL words
    listing_queries: list[str]  # the site query and the URL's words, without repeats

    def allowed(self, method: str) -> bool:
        return self.methods is None or method in self.methods


@dataclass
class Findings:
    """What the stages found so far (one recovery's mutable state)."""

    url: DeadURL
    budget: Budget
    progress: ProgressFn | None = None
    queries: list[Query] = field(default_factory=list)
    failures: list[EngineFailure] = field(default_factory=list)
    candidates: dict[str, CandidateEvidence] = field(default_factory=dict)  # normalised url
    ranked: list[Candidate] = field(default_factory=list)  # the latest ranking
    fetched: set[str] = field(default_factory=set)
    timings: dict[str, float] = field(default_factory=dict)  # seconds spent per stage
    listings: CaptureListings = field(default_factory=CaptureListings)  # one CDX call a run
    archived_redirects: list[ArchivedRedirect] = field(default_factory=list)
    outlinks: dict[str, list[Link]] = field(default_factory=dict)  # fetched page → its links
    linked_from: set[str] = field(default_factory=set)  # pages whose links were followed
    listed_sites: set[str] = field(default_factory=set)  # sites whose own map was read
    transplanted: set[str] = field(default_factory=set)  # guessed addresses: siblings' folders, new homes
    sibling_redirects_read: bool = False  # the dead URL's siblings checked for redirects
    unasked: list[str] = field(default_factory=list)  # web queries that could not be asked
    answer_sites: list[str] = field(default_factory=list)  # origins of sites that held answers
    answer_sites_read: bool = False
    search_evidence: dict[str, object] = field(default_factory=dict)  # the eval's figures
    _stage: tuple[str, float] | None = None

    def enter(self, stage: str) -> None:
        """Account the time since the last stage change to that stage."""
        now = time.monotonic()
        if self._stage is not None:
            name, since = self._stage
            self.timings[name] = round(self.timings.get(name, 0.0) + now - since, 3)
        self._stage = (stage, now)

    async def report(self, stage: str, done: int = 0, total: int | None = None,
                     message: str = "") -> None:
        self.enter(stage)
        if self.progress is None:
            return
        result = self.progress(stage, done, total, message)
        if inspect.isawaitable(result):
            await result

    def add_hit(self, method: str, hit: Hit) -> CandidateEvidence | None:
        # Only the very same URL is excluded: http→https or a www. change can be the move.
        if exact_url_key(hit.url) == exact_url_key(self.url):
            return None
        key = normalize_url(hit.url)
        evidence = self.candidates.get(key)
        if evidence is None:
            if len(self.candidates) >= self.budget.max_candidates * 3:
                return None
            evidence = self.candidates[key] = CandidateEvidence(
                url=hit.url, title=hit.title, snippet=hit.snippet
            )
        evidence.hits.append((method, hit.engine, max(1, hit.rank)))
        return evidence

    def fail(self, failure: EngineFailure) -> None:
        """A source's failure, once per recovery."""
        if failure not in self.failures:
            self.failures.append(failure)
