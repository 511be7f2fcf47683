"""Result types of the engine (pydantic), shared by the CLI, the MCP server and the bot.

Their JSON schema is the public schema of pagetrail's answers (`SCHEMA_VERSION`).
Text that came from archives or candidate pages is untrusted data: it is clipped and
carried in data fields, never interpreted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

SCHEMA_VERSION = 1

Verdict = Literal[
    "ok", "redirected", "dead", "soft404", "unreachable", "transient", "blocked", "refused"
]
DEAD_VERDICTS: frozenset[str] = frozenset({"dead", "soft404", "unreachable"})
Kind = Literal["moved", "replacement", "archived"]


class Hop(BaseModel):
    """One step of a redirect chain."""

    url: str
    status: int
    location: str | None = None


class Blocked(BaseModel):
    """Who or what stood between pagetrail and the page (tools/linkcheck/walls.py): a bot
    wall, a challenge, a rate limit, a client-dependent refusal. Says nothing of death."""

    by: str  # cloudflare, akamai, aws_waf, datadome, perimeterx, imperva, linkedin, ...
    evidence: str = ""


class CheckResult(BaseModel):
    """The verdict of one link check (ok, dead, soft404, …) with its evidence."""

    url: str
    verdict: Verdict
    status: int | None = None
    final_url: str | None = None
    chain: list[Hop] = Field(default_factory=list)
    reason: str = ""
    evidence: dict[str, object] = Field(default_factory=dict)
    checked_at: datetime | None = None
    confirmed: bool = False  # only the scanner confirms deaths (repeated failures over time)
    drift: Drift | None = None  # asked for (check --drift): a working link vs its archived copy
    blocked: Blocked | None = None  # verdict "blocked": who refused us, and the evidence
    # A redirect that is not a move (login, sso, consent, home, locale_home, interstitial):
    # tools/linkcheck/redirects.py. None when there was no redirect or it is the page's own.
    redirect_kind: str | None = None

    @computed_field  # type: ignore[prop-decorator]  # serialised: `"drifted": true`
    @property
    def drifted(self) -> bool:
        return self.drift is not None and self.drift.drifted

    @property
    def is_dead(self) -> bool:
        return self.verdict in DEAD_VERDICTS


class Link(BaseModel):
    """An outgoing link of a page: URL, anchor text and the words around it."""

    url: str
    anchor: str = ""
    context: str = ""


class Document(BaseModel):
    """A parsed HTML page (memento, candidate or linking page)."""

    url: str
    title: str = ""  # the <title> with the site name split off
    raw_title: str = ""  # the <title> as written (Klein & Nelson queried it whole)
    site_name: str = ""
    text: str = ""
    description: str = ""
    keywords: list[str] = Field(default_factory=list)
    canonical: str | None = None
    lang: str = ""
    links: list[Link] = Field(default_factory=list)
    og: dict[str, str] = Field(default_factory=dict)  # og:* and article:* meta tags


class Memento(BaseModel):
    """An archived copy of a URL (RFC 7089): capture time, replay URL, parsed page."""

    original_url: str
    memento_url: str  # replay URL of the capture
    raw_url: str  # `id_` URL: the capture without the replay banner
    datetime: datetime
    archive: str
    status: int | None = None
    location: str | None = None  # for captured redirects
    mimetype: str = ""  # from the archive's CDX index, when it has one
    document: Document | None = None


class ArchivedRedirect(BaseModel):
    """An archived capture of a URL that redirects to another URL."""

    original_url: str
    target_url: str
    datetime: datetime
    status: int
    memento_url: str


class Term(BaseModel):
    """A signature term with its weight."""

    term: str
    score: float


class Signature(BaseModel):
    """A page's lexical signature: TF-IDF LS5/LS7, KLD terms and URL terms."""

    url: str
    title: str = ""
    ls5: list[str] = Field(default_factory=list)
    ls7: list[str] = Field(default_factory=list)
    terms: list[Term] = Field(default_factory=list)  # TF-IDF ranked
    kld_terms: list[Term] = Field(default_factory=list)
    url_terms: list[str] = Field(default_factory=list)
    lang: str = ""


class Tag(BaseModel):
    """A word attached to a URL (meta keyword, social tag), ghost when gone live."""

    tag: str
    source: str  # "meta" | "hn" | ...
    ghost: bool = False  # no longer on the current page


class Hit(BaseModel):
    """One search result: URL, title, snippet, the engine and its rank."""

    url: str
    title: str = ""
    snippet: str = ""
    rank: int = 0
    engine: str = ""


class Query(BaseModel):
    """One search query the recovery ran, with its hits."""

    text: str
    method: str
    engine: str = ""
    site: str | None = None
    hits: list[Hit] = Field(default_factory=list)
    error: str | None = None


class Scores(BaseModel):
    """Every component score behind a candidate's rank (0–1 unless stated)."""

    content_cosine: float | None = None
    content_kld: float | None = None  # KL divergence, lower is closer (not 0–1)
    title_similarity: float | None = None
    anchor_dice: float | None = None
    url_similarity: float = 0.0
    same_site: bool = False
    query_votes: int = 0
    best_rank: int | None = None
    rrf: float = 0.0
    pick: float = 0.0
    rule_support: float = 0.0
    redirect: float = 0.0  # 1 when an archived redirect of the dead URL pointed here
    # Added by the ranking module (tools/ranking/rank.py):
    content_lm: float | None = None  # 1 − KLD/KLD_null: KLD turned into a 0–1 similarity
    content_resemblance: float | None = None  # shingle (w=4) resemblance to the memento
    context_similarity: float | None = None  # weighted share of anchor/context/URL terms found
    final: float = 0.0  # the combined score candidates are ranked by (before calibration)
    junk: str = ""  # why the candidate is penalised (e.g. "site_root"), empty when it is not
    # Weighed after the calibration (rank.rank_candidates), kept so a refit can redo it:
    listing: float = 0.0  # how much the page is a list of links (policy.listing_degree)
    offshoot: bool = False  # the dead address plus words, no direct evidence (offshoots)
    text_shortfall: float = 0.0  # how far its text is behind the best other's (textref)
    # Set when the learned ranking re-ordered the list (ranking.learned, recovery.answer): its
    # probability that this is the right page, and what the hand ranking said (so an eval's
    # rows train again on the hand ranking's view: `learned.hand_order`).
    learned: float | None = None
    hand_confidence: float | None = None
    hand_rank: int | None = None


class Candidate(BaseModel):
    """A candidate new home of a dead link: kind, confidence, scores and evidence."""

    url: str
    title: str = ""
    kind: Kind
    confidence: float
    scores: Scores = Field(default_factory=Scores)
    methods: list[str] = Field(default_factory=list)
    evidence: str = ""  # one line a person can read


class EngineFailure(BaseModel):
    """A search engine that failed for one query, and why."""

    engine: str
    error: str
    # What kind of failure (tools/engines/failures.py): quota, rate_limited, challenge,
    # refused, timeout, transient, unavailable, partial (some engines behind a metasearch
    # did not answer; the others' hits stand), internal, store. None: not named.
    kind: str | None = None


class Drift(BaseModel):
    """A link that works, compared with its archived copy (tools/linkcheck/drift.py): `drifted` when
    the main text of the live page is no longer the text that was linked."""

    url: str
    drifted: bool
    similarity: float  # content_similarity(archived main text, live main text), 0–1
    threshold: float  # drifted when similarity < threshold (or the titles are unrelated)
    title_similarity: float | None = None  # None when a title is missing
    memento: Memento  # the capture compared against (its parsed document left out)
    archived_title: str = ""
    live_title: str = ""
    final_url: str | None = None  # where the live request ended (after redirects)


CheckResult.model_rebuild()  # Drift is defined after CheckResult


class Recovery(BaseModel):
    """Where a dead link went: the answer, its reason and the ranked candidates."""

    schema_version: int = SCHEMA_VERSION
    url: str
    check: CheckResult | None = None
    answer: Literal[
        "alive", "redirected", "unverified", "moved", "replacement", "archived", "none"
    ]
    reason: str = ""
    memento: Memento | None = None
    evidence: dict[str, object] = Field(default_factory=dict)
    queries: list[Query] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    related_archived: list[dict[str, object]] = Field(default_factory=list)
    failures: list[EngineFailure] = Field(default_factory=list)
    # Sources every one of which failed, so the answer is no evidence either way: "search"
    # (no search engine asked answered), "archives" (no archive answered). The reason names
    # them (tools/recovery/answer.py, docs/realweb.md).
    all_failed: list[Literal["search", "archives"]] = Field(default_factory=list)
    drift: Drift | None = None  # for a link that works: compared with its archived copy
    requests: int = 0
    seconds: float = 0.0
    cached: bool = False

    @computed_field  # type: ignore[prop-decorator]  # serialised: `"drifted": true` in answers
    @property
    def drifted(self) -> bool:
        return self.drift is not None and self.drift.drifted


# The facade's answers (tools.api): what the faces receive.


class TagsResult(BaseModel):
    """The tags of a URL."""

    url: str
    tags: list[Tag] = Field(default_factory=list)


class SearchResult(BaseModel):
    """One query's hits from every engine asked, with the engines that failed."""

    query: str
    site: str | None = None
    hits: list[Hit] = Field(default_factory=list)  # every engine's hits, each with its rank
    failures: list[EngineFailure] = Field(default_factory=list)
    cached: list[str] = Field(default_factory=list)  # engines answered from the cache
    notes: list[str] = Field(default_factory=list)  # configured engines that were skipped


class UnreachableCandidate(BaseModel):
    """A candidate page that could not be fetched for ranking, and why."""

    url: str
    error: str


class RankResult(BaseModel):
    """Candidate pages scored against the dead page's content, best first."""

    reference: str  # "memento of <url>" or "text"
    has_content: bool  # enough reference text to compare page content
    candidates: list[Candidate] = Field(default_factory=list)
    unreachable: list[UnreachableCandidate] = Field(default_factory=list)


class RelatedArchived(BaseModel):
    """One archived page on the same topic as the lost URL — related, never a replacement."""

    kind: Literal["related"] = "related"
    url: str  # the related site's home page (from the user's training data)
    memento_url: str  # its capture closest to the requested date
    datetime: datetime
    captures: int  # good captures of it in the archives
    score: float  # Equation 1 of seed 004, 0–1
    components: dict[str, float | None]  # temporal, popularity, uri_similarity, archival_quality


class RelatedResult(BaseModel):
    """Archived pages on the lost URL's topic: related pages, never replacements."""

    url: str
    at: datetime | None = None
    note: str  # says these are related pages, not replacements: show it with them
    category: str  # the lost URL's first-level topic
    category_source: str  # "classifier" or "ontology" (its host is in the training data)
    confidence: float
    items: list[RelatedArchived] = Field(default_factory=list)
    candidates_in_category: int = 0  # hosts of that topic in the training data
    looked_up: int = 0  # of which were looked up in the archives (cost bound)
    archived: int = 0  # of which the archives hold a good capture
    weights: dict[str, float] = Field(default_factory=dict)
    failures: list[str] = Field(default_factory=list)  # lookups that failed (url: code)


class RememberedRecovery(BaseModel):
    """A recovery the store remembers (the answer as given, slimmed) and when it was made."""

    recovered_at: datetime
    recovery: Recovery


class PickResult(BaseModel):
    """A recorded pick: the replacement a person chose (or turned down)."""

    dead_url: str
    chosen_url: str
    rejected: bool = False
    note: str = ""
    recorded_at: datetime


class WatchList(BaseModel):
    """A channel's watched targets."""

    channel: str
    targets: list[str]


class WatchChange(BaseModel):
    """The result of watching or unwatching a target for a channel."""

    channel: str
    target: str
    changed: bool  # False: it was already watched (add) or not watched (remove)


class SiteScanJob(BaseModel):
    """A site scan started as a job (on the workers when a broker is configured)."""

    job_id: str
    # queued: enqueued, not started; running: a worker is on it; unknown: no such job here
    status: Literal["queued", "running", "done", "failed", "unknown"]
    target: str = ""
    digest: dict[str, Any] | None = None  # the scan's digest (sections clipped) when done
    error: str = ""


CaptureStatus = Literal["success", "error", "pending", "skipped", "refused", "no_keys"]


class CaptureResult(BaseModel):
    """The outcome of one Save Page Now capture request."""

    url: str
    status: CaptureStatus
    memento_url: str = ""
    captured_at: datetime | None = None
    job_id: str = ""
    message: str = ""


class ArchiveResult(BaseModel):
    """Save Page Now's answer for each URL asked to be archived."""

    captures: list[CaptureResult] = Field(default_factory=list)
