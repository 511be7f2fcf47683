"""Run the recovery engine on every case of a world (per method), collecting results.

Concurrency is bounded by a semaphore; each run has a time limit; a run that fails is a
result with `error` set, never an aborted evaluation. Scoring is elsewhere
(`pagetrail.tools.eval.evaluate`): this module only turns recoveries into `CaseResult`s.

The engine is `pagetrail.tools.recovery.pipeline.recover`. Until that exists, a clearly labelled
*baseline* stands in (check the link, offer the archived copy) so that `pagetrail eval` runs
end to end; if even the check and memento modules are missing, every case records an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from pagetrail.tools.content.dates import parse_date
from pagetrail.tools.errors import InvalidArgument, InvalidDate, NoMemento
from pagetrail.tools.eval.costs import breakdown, endpoint_keys
from pagetrail.tools.eval.evaluate import FULL, Answer, CaseResult
from pagetrail.tools.eval.features import live_records
from pagetrail.tools.models import Candidate, Recovery
from pagetrail.tools.recovery.revisit import UNANSWERED, answered_afresh
from pagetrail.tools.settings import Settings

# Evaluation method names (the papers' per-method table), in table order. Each runs the
# pipeline restricted to one method label (`methods=` of recover); `full` runs everything.
# The label is the pipeline's own (queryplan.METHOD_ALIASES: ANC+expansion → ANC+,
# ARCHIVE-only → ARCHIVE: no search, only what the check and the archive give).
_TABLE = ("TI", "LS5", "LS7", "TA", "ANC", "ANC+expansion", "URL", "LNLS", "SITE", "ARCHIVE-only")
_FALLBACK_ALIASES = {"ANC+EXPANSION": "ANC+", "ARCHIVE-ONLY": "ARCHIVE"}


def _engine_label(name: str) -> str:
    try:
        from pagetrail.tools.evidence.queryplan import METHOD_ALIASES as aliases
    except ImportError:  # the pipeline is not installed: keep the same mapping
        aliases = _FALLBACK_ALIASES
    return aliases.get(name.upper(), name)


EVAL_METHODS: dict[str, frozenset[str] | None] = {
    **{name: frozenset({_engine_label(name)}) for name in _TABLE},
    FULL: None,
}
SINGLE_METHODS: tuple[str, ...] = tuple(m for m in EVAL_METHODS if m != FULL)


class RecoverFn(Protocol):
    """A recovery pipeline under evaluation (tools.recovery.pipeline.recover, or a baseline)."""

    def __call__(self, url: str, **kwargs: Any) -> Awaitable[Recovery]: ...


@dataclass(frozen=True)
class EngineChoice:
    engine: RecoverFn | None
    label: str  # "pipeline" | "baseline" | "unavailable"
    detail: str = ""


def expand_methods(option: str | None) -> list[str]:
    """`--method` → the runs to make: one method, `all` (each method alone, then full), or full."""
    if option is None or option == FULL:
        return [FULL]
    if option == "all":
        return [*SINGLE_METHODS, FULL]
    by_folded = {m.lower(): m for m in EVAL_METHODS}
    if option.lower() not in by_folded:
        raise InvalidArgument(f"unknown method {option!r}; one of: {', '.join(EVAL_METHODS)}, all")
    return [by_folded[option.lower()]]


# --- the engine ----------------------------------------------------------------------------


def _optional(module: str, name: str) -> Any | None:
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None
        raise
    except AttributeError:
        return None


def resolve_engine() -> EngineChoice:
    """The recovery pipeline an evaluation method runs, or why it is unavailable."""
    try:
        recover = _optional("pagetrail.tools.recovery.pipeline", "recover")
    except ImportError as exc:  # the pipeline is there but one of its parts is not (yet)
        recover, broken = None, f"pagetrail.tools.recovery.pipeline cannot be imported ({exc})"
    else:
        broken = "pagetrail.tools.recovery.pipeline is missing"
    if recover is not None:
        return EngineChoice(recover, "pipeline")
    try:
        check_link = _optional("pagetrail.tools.linkcheck.check", "check_link")
    except ImportError:
        check_link = None
    if check_link is not None:
        return EngineChoice(
            baseline_recover, "baseline",
            f"{broken}: BASELINE engine (check + archived copy only)",
        )
    return EngineChoice(None, "unavailable", f"{broken}, and so is pagetrail.tools.linkcheck.check")


def _supported_kwargs(function: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    """Only the keyword arguments `function` declares (the baseline tolerates API drift)."""
    params = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return kwargs
    return {k: v for k, v in kwargs.items() if k in params}


@contextlib.asynccontextmanager
async def _fetcher_for(settings: Settings | None, given: Any) -> AsyncIterator[Any]:
    if given is not None:
        yield given
        return
    # The fetch layer's Fetcher, noting who asked for each fetch (the report's cost breakdown).
    fetcher_class = _optional("pagetrail.tools.eval.recording", "RecordingFetcher")
    if fetcher_class is None:
        yield None
        return
    async with fetcher_class(settings) as fetcher:
        yield fetcher


async def baseline_recover(
    url: str,
    *,
    link_date: datetime | None = None,
    settings: Settings | None = None,
    fetcher: Any = None,
    **_ignored: Any,
) -> Recovery:
    """FALLBACK ENGINE, for evaluation only, used while the real pipeline is missing:
    check the link; a redirect is the answer; a dead link gets its archived copy, if any.
    No evidence, no search: its figures are a floor, not pagetrail's results."""
    check_link = _optional("pagetrail.tools.linkcheck.check", "check_link")
    fetch_memento = _optional("pagetrail.tools.archive.memento", "fetch_memento")
    assert check_link is not None  # resolve_engine() chose the baseline only if it exists
    async with _fetcher_for(settings, fetcher) as client:
        check = await check_link(url, **_supported_kwargs(check_link, settings=settings, fetcher=client))
        recovery = Recovery(url=url, check=check, answer="none", reason="baseline engine")
        if check.verdict == "ok":
            recovery.answer = "alive"
        elif check.verdict == "redirected" and check.final_url:
            recovery.answer = "redirected"
            recovery.candidates = [Candidate(url=check.final_url, kind="moved", confidence=0.9,
                                             methods=["REDIRECT"], evidence="the URL redirects here")]
        elif check.is_dead and fetch_memento is not None:
            with contextlib.suppress(NoMemento):  # no memento is an answer; a dead archive is not
                memento = await fetch_memento(url, **_supported_kwargs(
                    fetch_memento, at=link_date, settings=settings,
                    fetcher=client))
                if memento is not None:
                    recovery.memento = memento
                    recovery.answer = "archived"
        recovery.requests = int(getattr(client, "requests", 0) or 0)
        return recovery


# --- one run → one result ------------------------------------------------------------------


def recovery_to_result(case_id: str, method: str, recovery: Recovery, *, seconds: float,
                       requests: int = 0) -> CaseResult:
    """The report line of one recovery (pure)."""
    answers = [Answer(c.url, c.kind, float(c.confidence)) for c in recovery.candidates]
    check = recovery.check
    if not answers and recovery.answer == "redirected" and check is not None and check.final_url:
        answers = [Answer(check.final_url, "moved", 1.0)]
    memento = recovery.memento
    archived_copy = (memento.raw_url or memento.memento_url) if memento is not None else None
    if recovery.drift is not None and recovery.drift.drifted:
        # Alive but drifted: the archived copy is the one from the link's date.
        drift_memento = recovery.drift.memento
        archived_copy = drift_memento.raw_url or drift_memento.memento_url
    search = recovery.evidence.get("search") if isinstance(recovery.evidence, dict) else None
    search = search if isinstance(search, dict) else {}
    failures: dict[str, int] = {}
    for failure in recovery.failures:
        failures[failure.engine] = failures.get(failure.engine, 0) + 1
    return CaseResult(
        id=case_id,
        method=method,
        verdict=check.verdict if check is not None else None,
        answers=answers,
        archived_copy=archived_copy,
        requests=max(int(recovery.requests or 0), requests),
        seconds=round(seconds, 3),
        error=None,
        drifted=recovery.drifted,
        search_queries=int(search.get("queries") or 0),
        rate_limited=int(search.get("rate_limited") or 0),
        failures=failures,
        answer=recovery.answer,
        candidates=live_records(recovery.candidates),
        weak_anchor=bool(recovery.evidence.get("weak_anchor")),
        revisited=str(recovery.evidence["revisited"]) if recovery.evidence.get("revisited")
        else None,
    )


def parse_link_date(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return parse_date(str(value))
    except InvalidDate:
        return None


async def run_case(
    case: Mapping[str, Any],
    method: str,
    engine: RecoverFn | None,
    *,
    settings: Settings | None,
    timeout: float,
    store: Any = None,
    unavailable_reason: str = "no recovery engine installed",
    revisit: bool = False,
) -> CaseResult:
    """One case through the engine. `revisit`: the case's second run at the end of the
    evaluation, through the store's remembered answer — given again (nothing learnt since:
    no request, no `revisited`) or answered afresh (`recovery.revisit`)."""
    case_id = str(case["id"])
    if engine is None:
        return CaseResult(id=case_id, method=method, error=f"engine_unavailable: {unavailable_reason}")
    source = case.get("source") or {}
    started = time.perf_counter()
    async with _fetcher_for(settings, None) as fetcher:
        kwargs = _supported_kwargs(
            engine,
            source_url=source.get("url"),
            anchor=source.get("anchor"),
            context=source.get("context"),
            link_date=parse_link_date(case.get("link_date")),
            settings=settings,
            fetcher=fetcher,
            store=store,
            use_cache=revisit,  # score the work, not a remembered answer (but see revisit)
            methods=EVAL_METHODS.get(method),
        )
        try:
            recovery = await asyncio.wait_for(engine(str(case["url"]), **kwargs), timeout)
        except TimeoutError:
            result = CaseResult(id=case_id, method=method,
                                seconds=round(time.perf_counter() - started, 3),
                                requests=int(getattr(fetcher, "requests", 0) or 0),
                                error=f"timeout: no answer within {timeout:g} s")
        except Exception as exc:  # one failing case must not stop the evaluation
            code = getattr(exc, "code", type(exc).__name__)
            result = CaseResult(id=case_id, method=method,
                                seconds=round(time.perf_counter() - started, 3),
                                requests=int(getattr(fetcher, "requests", 0) or 0),
                                error=f"{code}: {str(exc)[:300]}")
        else:
            result = recovery_to_result(case_id, method, recovery,
                                        seconds=time.perf_counter() - started,
                                        requests=int(getattr(fetcher, "requests", 0) or 0))
    _add_breakdown(result, fetcher, case)
    return result


def _add_breakdown(result: CaseResult, fetcher: Any, case: Mapping[str, Any]) -> None:
    """The result's requests and seconds by purpose and by stage (costs.breakdown), from the
    records of a `RecordingFetcher` (none: the fetcher in use records nothing)."""
    records = getattr(fetcher, "records", None)
    if records is None:
        return
    settings = fetcher.settings
    result.purposes, result.stages = breakdown(
        records, total_requests=int(fetcher.requests), case_url=str(case["url"]),
        source_url=(case.get("source") or {}).get("url"),
        archives=endpoint_keys(settings.archives), social=endpoint_keys([settings.hn_api_url]))


async def run_evaluation(
    cases: Sequence[Mapping[str, Any]],
    *,
    methods: Sequence[str] = (FULL,),
    settings_for: Callable[[str], Settings | None] = lambda _method: None,
    store_for: Callable[[str], Any] = lambda _method: None,
    engine: EngineChoice | None = None,
    concurrency: int = 8,
    timeout: float = 120.0,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Every case × method through the engine, at most `concurrency` at a time; then, as a
    batch of links is run by `fix`, each dead case answered with no live page once more
    (`revisits`).

    `settings_for(method)` and `store_for(method)` give each method its settings and store
    (its own database, so that no method sees another's cached searches or learnt moves)."""
    choice = engine or resolve_engine()
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: Mapping[str, Any], method: str, settings: Settings | None,
                  store: Any, revisit: bool = False) -> CaseResult:
        async with gate:
            return await run_case(case, method, choice.engine, settings=settings, store=store,
                                  timeout=timeout, unavailable_reason=choice.detail,
                                  revisit=revisit)

    async def first(case: Mapping[str, Any], method: str, settings: Settings | None,
                    store: Any) -> CaseResult:
        result = await one(case, method, settings, store)
        if on_result is not None:
            on_result(result)
        return result

    # Method by method: each method's runs share nothing with another's (cache, politeness).
    results: list[CaseResult] = []
    for method in methods:
        settings, store = settings_for(method), store_for(method)
        runs = list(await asyncio.gather(*(first(case, method, settings, store)
                                           for case in cases)))
        again = revisits(runs) if store is not None else []
        second_runs = await asyncio.gather(*(one(cases[i], method, settings, store,
                                                 revisit=True) for i in again))
        for i, second in zip(again, second_runs, strict=True):
            runs[i] = combined(runs[i], second)
        results += runs
    return results


def revisits(results: Sequence[CaseResult]) -> list[int]:
    """The indexes of the results a second run may change: a dead link answered with no
    live page (recovery.revisit.UNANSWERED), without an error (pure)."""
    return [i for i, result in enumerate(results)
            if result.error is None and result.answer in UNANSWERED]


def combined(first: CaseResult, second: CaseResult) -> CaseResult:
    """The case's result after its second run (pure): the second's answer, with both runs'
    costs, when it was answered afresh (`revisit.answered_afresh`); else — the remembered
    answer given back, or a failed second run — the first."""
    if second.error is not None or not answered_afresh(second.revisited, second.requests):
        return first
    return replace(second, requests=first.requests + second.requests,
                   seconds=round(first.seconds + second.seconds, 3),
                   search_queries=first.search_queries + second.search_queries,
                   rate_limited=first.rate_limited + second.rate_limited,
                   purposes=_summed(first.purposes, second.purposes),
                   stages=_summed(first.stages, second.stages),
                   failures={key: first.failures.get(key, 0) + second.failures.get(key, 0)
                             for key in {*first.failures, *second.failures}})


def _summed(a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]],
            ) -> dict[str, dict[str, float]]:
    """Two cost breakdowns ({name: {"requests": n, "seconds": s}}) added up."""
    total: dict[str, dict[str, float]] = {}
    for part in (a, b):
        for name, costs in part.items():
            into = total.setdefault(name, {})
            for key, value in costs.items():
                into[key] = round(into.get(key, 0) + value, 3)
    return total
