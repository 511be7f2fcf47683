"""What a recovery's stages share: a frozen context and a findings accumulator.

`Context` is what every stage reads and none changes: the dead URL (validated: `DeadURL`),
settings, fetcher, store, budget, the link's evidence (`Reference`, `QueryEvidence`, the
direct evidence), the search service and its engines sorted by scope. `Findings` is what
flows between the stages: candidates, failures, the queries asked, the ranking, and what
more than one stage reads. What keeps a stage from doing twice what it did once is the
stage's own (stages are objects made per recovery: `chain.Chain`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pagetrail.tools import policy
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
class DirectEvidence:
    """The dead URL's direct evidence, read with the link's evidence (the ranking's reference
    weighs it; `stages.direct` makes it candidates): a person's picks and "not it"s, the
    archives' redirects of the dead URL, the site's rewrite rules' proposals (URL, support)."""

    picks: tuple[str, ...] = ()
    rejected: frozenset[str] = frozenset()  # normalised URLs a person said "not it"
    redirects: tuple[ArchivedRedirect, ...] = ()
    proposals: tuple[tuple[str, float], ...] = ()

    @property
    def rule_support(self) -> dict[str, float]:
        """Normalised URL → the support of the rule proposing it."""
        return {normalize_url(url): support for url, support in self.proposals}


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
    direct: DirectEvidence = DirectEvidence()
    # The anchor is one common word and there is no archived copy (`answer.weak_anchor`):
    # the answer's list is clamped, and the learned answer never stops the chain.
    weak_anchor: bool = False

    def allowed(self, method: str) -> bool:
        return self.methods is None or method in self.methods


@dataclass
class Pages:
    """The candidates' pages read so far (`candidates.read`): which, and the links on them
    (the link graph the neighbourhood follows)."""

    fetched: set[str] = field(default_factory=set)  # normalised URLs requested
    outlinks: dict[str, list[Link]] = field(default_factory=dict)  # fetched page → its links


@dataclass
class SearchNotes:
    """What the answer tells of the search (its `evidence["search"]`, the eval's figures):
    figures the stages note, and the web queries that could not be asked."""

    figures: dict[str, object] = field(default_factory=dict)
    unasked: list[str] = field(default_factory=list)


@dataclass
class Clock:
    """Where a recovery is (its progress callback) and the seconds spent per stage."""

    progress: ProgressFn | None = None
    timings: dict[str, float] = field(default_factory=dict)
    current: tuple[str, float] | None = None

    def enter(self, stage: str) -> None:
        """Account the time since the last stage change to that stage."""
        now = time.monotonic()
        if self.current is not None:
            name, since = self.current
            self.timings[name] = round(self.timings.get(name, 0.0) + now - since, 3)
        self.current = (stage, now)

    async def report(self, stage: str, done: int = 0, total: int | None = None,
                     message: str = "") -> None:
        self.enter(stage)
        if self.progress is None:
            return
        result = self.progress(stage, done, total, message)
        if inspect.isawaitable(result):
            await result


class Candidates(dict[str, CandidateEvidence]):
    """The candidates by normalised URL, never the dead URL itself, at most `limit`."""

    def __init__(self, dead_url: str, limit: int) -> None:
        super().__init__()
        self.dead_key = exact_url_key(dead_url)
        self.limit = limit

    def add(self, method: str, hit: Hit) -> CandidateEvidence | None:
        # Only the very same URL is excluded: http→https or a www. change can be the move.
        if exact_url_key(hit.url) == self.dead_key:
            return None
        key = normalize_url(hit.url)
        evidence = self.get(key)
        if evidence is None:
            if len(self) >= self.limit:
                return None
            evidence = self[key] = CandidateEvidence(
                url=hit.url, title=hit.title, snippet=hit.snippet
            )
        evidence.hits.append((method, hit.engine, max(1, hit.rank)))
        return evidence


# How a failure is recorded (`Findings.fail`): every time, once (an equal one already
# recorded is not repeated), or once per engine (the first failure of an engine stands for
# its others: a rate-limited engine fails every query of a round).
Once = Literal["never", "equal", "engine"]


@dataclass
class Findings:
    """What flows between the stages: the candidates, the failures, the queries asked, the
    latest ranking — and what more than one stage reads (the pages read and their links,
    the sites whose own map was read), the search's notes and the clock. A stage's own
    bookkeeping stays in the stage (`stages`)."""

    candidates: Candidates
    failures: list[EngineFailure] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    ranked: list[Candidate] = field(default_factory=list)  # the latest ranking
    pages: Pages = field(default_factory=Pages)
    listed_sites: set[str] = field(default_factory=set)  # sites whose own map was read
    notes: SearchNotes = field(default_factory=SearchNotes)
    clock: Clock = field(default_factory=Clock)

    @classmethod
    def start(cls, url: DeadURL, budget: Budget, progress: ProgressFn | None = None,
              ) -> Findings:
        # Candidates beyond three times the fetch budget are never read: not kept either.
        return cls(Candidates(url, budget.max_candidates * 3), clock=Clock(progress))

    def enter(self, stage: str) -> None:
        self.clock.enter(stage)

    async def report(self, stage: str, done: int = 0, total: int | None = None,
                     message: str = "") -> None:
        await self.clock.report(stage, done, total, message)

    def add_hit(self, method: str, hit: Hit) -> CandidateEvidence | None:
        return self.candidates.add(method, hit)

    def fail(self, failure: EngineFailure, *, once: Once = "never") -> None:
        """Record a source's failure: the one way a failure enters the answer."""
        if once == "equal" and failure in self.failures:
            return
        if once == "engine" and any(f.engine == failure.engine for f in self.failures):
            return
        self.failures.append(failure)
