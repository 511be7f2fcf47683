"""Pure parts of the trend chart and of drift answers: counts, label placement, Robust Links,
backoff and SPN answers."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise

import httpx

from pagetrail.tools.archive.spn import backoff_seconds, parse_answer
from pagetrail.tools.net.fetch import Response
from pagetrail.tools.recovery.output import robust_anchor
from pagetrail.tools.scan.digest import ChannelDigest, DriftLink, ScanDigest
from pagetrail.tools.scan.trend import health_counts, label_positions, trend_of

WHEN = datetime(2030, 1, 1, tzinfo=UTC)


def _scan(target: str, states: dict[str, int], drifted: int = 0) -> ScanDigest:
    items = [DriftLink(url=f"https://x.example/{i}", similarity=0.1, threshold=0.5,
                       memento_url=f"https://a.example/web/2029/https://x.example/{i}",
                       memento_datetime=WHEN, robust_link="<a></a>") for i in range(drifted)]
    return ScanDigest(target=target, scan_id="s", started_at=WHEN.isoformat(), seconds=1.0,
                      pages_crawled=1, links_found=1, urls_checked=sum(states.values()),
                      requests=1, states=states, drifted=items)


def test_health_counts_sum_the_channels_scans_and_split_drifted_from_alive() -> None:
    digest = ChannelDigest(channel="C", period="2030-W01", scans=[
        _scan("https://a.example/", {"ok": 10, "suspect": 2, "confirmed": 1}, drifted=3),
        _scan("https://b.example/", {"ok": 5, "fixed": 1, "flapping": 1})])
    assert health_counts(digest) == {"alive": 12, "suspect": 2, "confirmed": 1, "fixed": 1,
                                     "drifted": 3}


def test_trend_keeps_the_last_digest_of_a_week_and_the_last_weeks() -> None:
    weeks = [ChannelDigest(channel="C", period=f"2030-W0{i}",
                           scans=[_scan("https://a.example/", {"confirmed": i})])
             for i in (1, 2, 3)]
    again = ChannelDigest(channel="C", period="2030-W03",
                          scans=[_scan("https://a.example/", {"confirmed": 9})])
    trend = trend_of([*weeks, again], "C", weeks=2)
    assert trend.periods == ["2030-W02", "2030-W03"]
    assert trend.series["confirmed"] == [2, 9]


def test_end_labels_never_overlap_nor_go_below_zero() -> None:
    placed = label_positions({"confirmed": 10, "suspect": 10, "drifted": 1, "fixed": 0},
                             gap=2.0)
    ys = sorted(placed.values())
    assert min(ys) >= 0
    assert all(b - a >= 2.0 - 1e-9 for a, b in pairwise(ys))
    assert placed["confirmed"] >= placed["suspect"]
    assert label_positions({"a": 5, "b": 20}, gap=1.0) == {"a": 5.0, "b": 20.0}


def test_robust_link_escapes_what_came_from_pages() -> None:
    html = robust_anchor('https://x.example/?a=1&b="2"', "https://web.archive.org/web/1/x",
                       WHEN, '<script>alert(1)</script>')
    assert html == ('<a href="https://x.example/?a=1&amp;b=&quot;2&quot;" '
                    'data-versionurl="https://web.archive.org/web/1/x" '
                    'data-versiondate="2030-01-01">&lt;script&gt;alert(1)&lt;/script&gt;</a>')


def _response(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(url="https://web.archive.org/save", final_url="https://web.archive.org/save",
                    status=status, headers=httpx.Headers(headers or {}), content=body,
                    chain=[], content_type="application/json", charset="utf-8", elapsed=0.0)


def test_backoff_honours_retry_after_else_doubles() -> None:
    assert backoff_seconds(_response(429, b"", {"Retry-After": "7"}), 3) == 7.0
    assert [backoff_seconds(_response(429, b""), n) for n in range(3)] == [5.0, 10.0, 20.0]
    assert backoff_seconds(_response(429, b"", {"Retry-After": "99999"}), 0) == 300.0


def test_spn_answers_that_are_not_json_objects_are_named_errors() -> None:
    assert parse_answer(_response(502, b"<html>bad gateway</html>"))["status_ext"] == "http:502"
    assert parse_answer(_response(200, b"[1, 2]"))["status_ext"] == "bad-answer"
    assert parse_answer(_response(200, b'{"job_id": "spn2-x"}')) == {"job_id": "spn2-x"}
