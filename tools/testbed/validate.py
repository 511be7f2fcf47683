"""A world checked against the whole of FORMAT.md, beyond what loading needs.

`load_world` refuses what cannot be served (bad JSON, unknown hosts, missing blobs, answers not
in live.jsonl) and stops at the first problem. `validate_world` loads the world that way, then
checks what the format *means*, which a world written by a program (a subset, a mutated world)
can get wrong while still loading — and lists every such problem, not only the first:

- each case's category agrees with its expected kind (moved_* → moved, replaced →
  replacement, gone → archived | none, alive → alive);
- the answers of moved and replacement cases are live pages (status 200) on hosts that serve
  their pages (up, not parked), and no case that is dead answers 200 itself (it would not
  be dead);
- an alive case's URL is served (it may be slow or flaky, not missing);
- a case's linking page (``source.url``) is served;
- when ``expect.archived`` is true (and for every ``archived`` case) the archive holds a 200
  capture of the case URL (false may stand beside a capture that is not a good one);
- every sitemap entry is a resource of live.jsonl (a sitemap must not promise missing pages).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator

from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.testbed.world import World, load_world

KINDS_OF = {
    "moved_same_host": {"moved"}, "moved_new_host": {"moved"}, "replaced": {"replacement"},
    "gone": {"archived", "none"}, "alive": {"alive"},
}
_SITEMAP_LOC = re.compile(r"<loc>\s*(.*?)\s*</loc>", re.S)


def archived_urls(world: World) -> set[str]:
    """Normalised URLs the archive holds a 200 capture of."""
    found: set[str] = set()
    for warc in world.warcs:
        with warc.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                target = record.rec_headers.get_header("WARC-Target-URI") or ""
                if target and record.http_headers.get_statuscode() == "200":
                    found.add(normalize_url(target))
    return found


def _sitemap_problems(world: World) -> Iterable[str]:
    for resource in world.resources.values():
        if not resource.blob or not resource.url.endswith("/sitemap.xml"):
            continue
        text = world.read_blob(resource.blob).decode("utf-8", errors="replace")
        for loc in _SITEMAP_LOC.findall(text):
            url = html.unescape(loc)
            if world.lookup(url) is None:
                yield f"{resource.url}: sitemap lists a page that is not served: {url}"


def _case_problems(world: World, archived: set[str]) -> Iterable[str]:
    for case in world.cases:
        where = f"cases.jsonl: {case.id}"
        if case.expect_kind not in KINDS_OF.get(case.category, set()):
            yield f"{where}: category {case.category} with expect.kind {case.expect_kind}"
        for answer in case.expect_urls:
            served = world.lookup(answer)
            if served is not None and served.status != 200:
                yield f"{where}: answer {answer} is served with status {served.status}, not 200"
            host = world.host(urlsplit(answer).hostname or "")
            if host is not None and not host.serves_pages:
                yield f"{where}: answer {answer} is on host {host.name}, which serves no " \
                      f"pages ({host.state}, not found: {host.not_found})"
        served = world.lookup(case.url)
        if case.category != "alive" and served is not None and served.status == 200:
            yield f"{where}: a dead case whose URL answers 200"
        if case.category == "alive" and served is None:
            yield f"{where}: an alive case whose URL is not served"
        source = (case.raw.get("source") or {}).get("url")
        if source and world.lookup(source) is None:
            yield f"{where}: linking page {source} is not served"
        # false may stand beside a capture that is not a good one (a soft 404, another page)
        said = bool((case.raw.get("expect") or {}).get("archived"))
        if (said or case.expect_kind == "archived") and normalize_url(case.url) not in archived:
            yield f"{where}: an archived copy is expected but the archive has no 200 capture " \
                  f"of {case.url}"


def validate_world(path: str | Path) -> list[str]:
    """Every problem of the world at `path` (empty: valid). A world that does not even load
    raises `WorldError` naming file and line."""
    world = load_world(path)
    archived = archived_urls(world)
    return [*_case_problems(world, archived), *_sitemap_problems(world)]
