"""The query plan: which queries to send, in which order (pure).

Order by cost and yield (Klein & Nelson 2014): the title first (≈ 69 % top-1 alone), then
tags, then the 5- and 7-term lexical signatures, then anchor-based queries (Martinez-Romo &
Araujo: the anchor alone, then the anchor expanded by each top term of the context, the URL,
the memento and the linking page), then URL terms, then the link-neighbourhood signature as
a last resort. Stages are run in order; the pipeline stops as soon as a candidate is
confirmed moved, so later (more expensive, less precise) stages only run when needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Every method label the pipeline knows; `--method` in eval restricts to one of them.
ALL_METHODS = (
    "REDIRECT", "INFER", "PICK", "SITE", "CDX", "TI", "TA", "LS5", "LS7", "ANC", "ANC+",
    "URL", "LNLS", "LINKS", "ELSEWHERE",
)
# The queries of the lost page's topic rather than its name: tags, lexical signatures, the
# anchor and its expansions, the linking page's signature (their hits are read less deep:
# `recovery.candidates.query_depth`).
TOPIC_METHODS = frozenset({"TA", "LS5", "LS7", "ANC", "ANC+", "LNLS"})
# Eval's method names (FORMAT/issue) → the pipeline's labels.
METHOD_ALIASES = {
    "ANC+EXPANSION": "ANC+",
    "ARCHIVE-ONLY": "ARCHIVE",
    "FULL": "full",
}


@dataclass(frozen=True)
class PlannedQuery:
    method: str
    text: str
    stage: int


@dataclass
class QueryEvidence:
    """Textual evidence the plan draws on (all optional)."""

    title: str = ""
    tags: Sequence[str] = ()
    ls5: Sequence[str] = ()
    ls7: Sequence[str] = ()
    anchor: str = ""
    anchor_usable: bool = False  # False for stop anchors ("click here", the URL itself)
    expansion_terms: dict[str, Sequence[str]] = field(default_factory=dict)  # source → terms
    url_terms: Sequence[str] = ()
    lnls: Sequence[str] = ()


def _words(text: str) -> list[str]:
    return text.split()


def _dedupe(queries: Iterable[PlannedQuery]) -> list[PlannedQuery]:
    seen: set[str] = set()
    kept: list[PlannedQuery] = []
    for q in queries:
        key = " ".join(q.text.lower().split())
        if len(key) < 3 or key in seen:
            continue
        seen.add(key)
        kept.append(q)
    return kept


def plan_queries(
    evidence: QueryEvidence,
    *,
    methods: frozenset[str] | None = None,
    expansion_per_source: int = 2,
    max_queries: int = 24,
) -> list[PlannedQuery]:
    """Queries in the order they should be issued, each with its method and stage."""

    def allowed(method: str) -> bool:
        return methods is None or method in methods

    planned: list[PlannedQuery] = []
    if evidence.title and allowed("TI"):
        planned.append(PlannedQuery("TI", evidence.title, 1))
    if evidence.tags and allowed("TA"):
        planned.append(PlannedQuery("TA", " ".join(list(evidence.tags)[:5]), 2))
    if evidence.ls5 and allowed("LS5"):
        planned.append(PlannedQuery("LS5", " ".join(evidence.ls5), 2))
    if evidence.ls7 and allowed("LS7"):
        planned.append(PlannedQuery("LS7", " ".join(evidence.ls7), 3))
    anchor = " ".join(evidence.anchor.split())
    if anchor and evidence.anchor_usable:
        if allowed("ANC"):
            planned.append(PlannedQuery("ANC", anchor, 2))
        if allowed("ANC+"):
            anchor_words = {w.lower() for w in _words(anchor)}
            for source, terms in evidence.expansion_terms.items():
                del source  # the order of sources is the caller's (context, URL, memento, page)
                added = 0
                for term in terms:
                    if added >= expansion_per_source:
                        break
                    if term.lower() in anchor_words:
                        continue
                    planned.append(PlannedQuery("ANC+", f"{anchor} {term}", 3))
                    added += 1
    if evidence.url_terms and allowed("URL"):
        planned.append(PlannedQuery("URL", " ".join(list(evidence.url_terms)[:6]), 3))
    if evidence.lnls and allowed("LNLS"):
        planned.append(PlannedQuery("LNLS", " ".join(list(evidence.lnls)[:4]), 4))
    planned = _dedupe(planned)
    planned.sort(key=lambda q: q.stage)  # stable: keeps the cost order within a stage
    return planned[:max_queries]
