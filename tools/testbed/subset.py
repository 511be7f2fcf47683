"""Cut a small, self-contained world out of a bigger one (`pagetrail testbed subset`).

The subset keeps N cases chosen across every (category, expected kind) stratum, and
everything they need to be recovered the same way as in the full world:

- the hosts of every case URL, expected URL and source page (with their world.json entries,
  not-found pages included), and the hosts that the kept redirects lead to;
- on those hosts: the root, robots.txt and sitemap, the case, source and expected pages, any
  resource with the same normalised URL (http→https and www redirects), every redirect
  target, and a few other pages as distractors (a deterministic sample, capped per host);
- sitemaps rewritten to list only the pages kept (a sitemap that promises missing pages
  would send the engine to 404s that the full world does not have);
- the archive records of the case URLs, the source and expected pages, a capped sample of
  other captures of the same hosts, and the targets of captured redirects, each response
  with its request record, copied byte for byte;
- the social lines about kept URLs, and SOURCES.md with a note on how the subset was made.

Selection is a pure function of the world, N and the seed: the same inputs give the same
subset. The result is validated with the testbed's `load_world`.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import random
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from warcio.archiveiterator import ArchiveIterator

from pagetrail.tools.errors import WorldError
from pagetrail.tools.net.urls import normalize_url
from pagetrail.tools.testbed.world import load_world

_SITEMAP_ENTRY = re.compile(r"<url>\s*<loc>(.*?)</loc>.*?</url>\s*", re.S)
_ALWAYS_KEPT_PATHS = frozenset({"/", "/robots.txt", "/sitemap.xml"})


@dataclass(frozen=True)
class SubsetOptions:
    cases: int = 30
    seed: int = 1
    distractors_per_host: int = 6  # other live pages kept per involved host
    archive_urls_per_host: int = 12  # other captured URLs kept per involved host
    name: str | None = None


@dataclass
class SubsetSummary:
    out: Path
    cases: int
    by_category: dict[str, int]
    hosts: int
    resources: int
    blobs: int
    warc_records: int
    social: int
    bytes: int


# --- pure selection ------------------------------------------------------------------------


def _stratum(case: Mapping[str, Any]) -> tuple[str, str]:
    return str(case.get("category")), str((case.get("expect") or {}).get("kind"))


def allocate(sizes: Mapping[Any, int], total: int) -> dict[Any, int]:
    """Share `total` among strata: one each first (while it lasts), the rest by size
    (largest remainder), never more than a stratum holds."""
    keys = sorted(k for k, size in sizes.items() if size > 0)
    share = dict.fromkeys(keys, 0)
    budget = min(total, sum(sizes[k] for k in keys))
    for key in sorted(keys, key=lambda k: -sizes[k])[:budget]:
        share[key] = 1
    total_size = sum(sizes[k] for k in keys)
    for _ in range(budget - sum(share.values())):
        room = [k for k in keys if share[k] < sizes[k]]
        # One more to the stratum furthest below its proportional share (ties: larger, name).
        key = max(room, key=lambda k: (budget * sizes[k] / total_size - share[k], sizes[k], str(k)))
        share[key] += 1
    return share


def choose_cases(cases: Sequence[Mapping[str, Any]], n: int, seed: int) -> list[Mapping[str, Any]]:
    """N cases across every (category, expect.kind) stratum, deterministic for a seed,
    in the world's order."""
    strata: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for case in cases:
        strata[_stratum(case)].append(case)
    share = allocate({k: len(v) for k, v in strata.items()}, n)
    chosen: set[str] = set()
    for key, members in strata.items():
        ordered = sorted(members, key=lambda c: str(c["id"]))
        random.Random(f"{seed}:{key[0]}:{key[1]}").shuffle(ordered)
        chosen.update(str(c["id"]) for c in ordered[: share.get(key, 0)])
    return [c for c in cases if str(c["id"]) in chosen]


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower().rstrip(".")


def _path(url: str) -> str:
    return urlsplit(url).path or "/"


def _sample(items: Iterable[str], k: int, seed: int, salt: str) -> list[str]:
    """A deterministic sample of `k` items: the ones with the smallest seeded hash."""
    def rank(item: str) -> str:
        return hashlib.sha256(f"{seed}:{salt}:{item}".encode()).hexdigest()
    return sorted(items, key=rank)[:k]


def _location(headers: Mapping[str, str]) -> str | None:
    for key, value in headers.items():
        if key.lower() == "location":
            return value
    return None


def case_urls(case: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(URLs the case needs live or archived, hosts it involves)."""
    urls = [str(case["url"]), *[str(u) for u in (case.get("expect") or {}).get("urls") or []]]
    source = case.get("source") or {}
    if source.get("url"):
        urls.append(str(source["url"]))
    return urls, sorted({_host(u) for u in urls})


@dataclass
class LivePlan:
    hosts: set[str]
    urls: list[str]  # live.jsonl URLs kept, in the world's order


def plan_live(
    chosen: Sequence[Mapping[str, Any]],
    live: Sequence[Mapping[str, Any]],
    host_specs: Mapping[str, Mapping[str, Any]],
    options: SubsetOptions,
) -> LivePlan:
    """Which hosts and live resources the chosen cases need (pure)."""
    by_host: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    by_norm: dict[str, list[str]] = defaultdict(list)
    by_url: dict[str, Mapping[str, Any]] = {}
    for item in live:
        url = str(item["url"])
        by_url[url] = item
        by_host[_host(url)].append(item)
        by_norm[normalize_url(url)].append(url)

    needed: set[str] = set()
    hosts: set[str] = set()
    for case in chosen:
        urls, case_hosts = case_urls(case)
        hosts.update(case_hosts)
        needed.update(normalize_url(u) for u in urls)

    kept: set[str] = set()
    done_hosts: set[str] = set()
    pending = [*sorted(hosts)]
    while pending:
        host = pending.pop()
        if host in done_hosts:
            continue
        done_hosts.add(host)
        hosts.add(host)
        if (host_specs.get(host) or {}).get("state") != "up":
            continue
        pages = by_host.get(host, [])
        must = [str(p["url"]) for p in pages
                if _path(str(p["url"])) in _ALWAYS_KEPT_PATHS or normalize_url(str(p["url"])) in needed]
        others = [str(p["url"]) for p in pages
                  if str(p["url"]) not in must and p.get("status") == 200]
        kept.update(must)
        kept.update(_sample(others, options.distractors_per_host, options.seed, host))
        # Follow redirects from everything kept so far (targets may sit on new hosts).
        frontier = [u for u in kept if _host(u) == host]
        while frontier:
            url = frontier.pop()
            target = _location(by_url[url].get("headers") or {})
            if not target:
                continue
            absolute = urljoin(url, target)
            for candidate in by_norm.get(normalize_url(absolute), []):
                if candidate not in kept:
                    kept.add(candidate)
                    frontier.append(candidate)
            target_host = _host(absolute)
            if target_host and target_host not in done_hosts:
                pending.append(target_host)
    return LivePlan(hosts={h for h in hosts if h in host_specs},
                    urls=[str(i["url"]) for i in live if str(i["url"]) in kept])


def filter_sitemap(xml: str, kept_urls: Iterable[str]) -> str:
    """The sitemap with only the <url> entries whose page is kept."""
    keep = {normalize_url(u) for u in kept_urls}

    def entry(match: re.Match[str]) -> str:
        loc = html.unescape(match.group(1).strip())
        return match.group(0) if normalize_url(loc) in keep else ""

    return _SITEMAP_ENTRY.sub(entry, xml)


# --- archive ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Record:
    warc: Path
    offset: int
    length: int
    rec_type: str
    record_id: str
    concurrent_to: str
    target: str
    location: str | None


def _scan_warc(path: Path) -> list[_Record]:
    records: list[_Record] = []
    with path.open("rb") as handle:
        iterator = ArchiveIterator(handle)
        for record in iterator:
            location = None
            if record.rec_type == "response" and record.http_headers is not None:
                location = record.http_headers.get_header("Location")
            headers = record.rec_headers
            iterator.read_to_end(record)
            records.append(_Record(
                warc=path,
                offset=iterator.get_record_offset(),
                length=iterator.get_record_length(),
                rec_type=record.rec_type,
                record_id=headers.get_header("WARC-Record-ID") or "",
                concurrent_to=headers.get_header("WARC-Concurrent-To") or "",
                target=headers.get_header("WARC-Target-URI") or "",
                location=location,
            ))
    return records


def plan_archive(
    records: Sequence[_Record], needed_urls: Iterable[str], hosts: set[str], options: SubsetOptions
) -> list[_Record]:
    """Response records to keep (all captures of each chosen URL) and their request records."""
    responses = [r for r in records if r.rec_type == "response" and r.target]
    by_norm: dict[str, list[_Record]] = defaultdict(list)
    for record in responses:
        by_norm[normalize_url(record.target)].append(record)
    wanted = {normalize_url(u) for u in needed_urls}
    per_host: dict[str, set[str]] = defaultdict(set)
    for key in by_norm:
        host = _host(by_norm[key][0].target)
        if host in hosts and key not in wanted:
            per_host[host].add(key)
    for host, keys in sorted(per_host.items()):
        wanted.update(_sample(keys, options.archive_urls_per_host, options.seed, f"warc:{host}"))
    # Captured redirects lead somewhere: keep the captures of their targets too.
    frontier = list(wanted)
    while frontier:
        for record in by_norm.get(frontier.pop(), []):
            if record.location:
                target = normalize_url(urljoin(record.target, record.location))
                if target not in wanted:
                    wanted.add(target)
                    frontier.append(target)
    kept_responses = [r for key in wanted for r in by_norm.get(key, [])]
    kept_ids = {r.record_id for r in kept_responses}
    requests = [r for r in records if r.rec_type == "request" and r.concurrent_to in kept_ids]
    kept = {(r.warc, r.offset) for r in [*kept_responses, *requests]}
    return [r for r in records if (r.warc, r.offset) in kept]


def _copy_records(records: Sequence[_Record], out_dir: Path) -> int:
    """Copy whole records byte for byte (each gzip member as it was) into same-named files."""
    by_file: dict[Path, list[_Record]] = defaultdict(list)
    for record in records:
        by_file[record.warc].append(record)
    for source, items in sorted(by_file.items()):
        with source.open("rb") as src, (out_dir / source.name).open("wb") as dst:
            for record in sorted(items, key=lambda r: r.offset):
                src.seek(record.offset)
                dst.write(src.read(record.length))
    return len(records)


# --- the whole subset (I/O) ------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if not path.is_file():
        return []
    lines = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                lines.append((line.rstrip("\n"), json.loads(line)))
    return lines


def _blob_name(body: bytes, suffix: str) -> str:
    digest = hashlib.sha256(body).hexdigest()
    return f"{digest[:2]}/{digest}{suffix}"


def _copy_blob(src_root: Path, out_root: Path, blob: str) -> None:
    target = out_root / "blobs" / blob
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src_root / "blobs" / blob, target)


def _write_blob(out_root: Path, body: bytes, suffix: str) -> str:
    name = _blob_name(body, suffix)
    target = out_root / "blobs" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same content gives the same bytes (a deterministic subset).
    target.write_bytes(gzip.compress(body, mtime=0))
    return name


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def make_subset(world_dir: str | Path, out_dir: str | Path, options: SubsetOptions) -> SubsetSummary:
    """Write a subset of the world at `world_dir` into `out_dir` (which must not hold a world)."""
    src = Path(world_dir)
    out = Path(out_dir)
    world = load_world(src)  # a malformed source is rejected before anything is written
    if options.cases < 1:
        raise WorldError("subset: --cases must be at least 1")
    if out.exists() and any(out.iterdir()):
        raise WorldError(f"{out}: output directory exists and is not empty")
    if out.resolve() == src.resolve():
        raise WorldError(f"{out}: output must differ from the source world")

    meta = json.loads((src / "world.json").read_text(encoding="utf-8"))
    host_specs = {k.lower().rstrip("."): v for k, v in meta["hosts"].items()}
    cases = [c.raw for c in world.cases]
    chosen = choose_cases(cases, options.cases, options.seed)
    live_lines = _read_jsonl(src / "live.jsonl")
    plan = plan_live(chosen, [item for _, item in live_lines], host_specs, options)

    out.mkdir(parents=True, exist_ok=True)
    (out / "blobs").mkdir()
    (out / "archive").mkdir()
    kept_urls = set(plan.urls)
    live_out: list[str] = []
    for line, item in live_lines:
        if item["url"] not in kept_urls:
            continue
        blob = item.get("blob")
        if blob and _path(item["url"]) == "/sitemap.xml":
            body = world.read_blob(blob).decode("utf-8", errors="replace")
            trimmed = filter_sitemap(body, plan.urls).encode("utf-8")
            item = {**item, "blob": _write_blob(out, trimmed, ".xml.gz")}
            line = json.dumps(item, ensure_ascii=False)
        elif blob:
            _copy_blob(src, out, blob)
        live_out.append(line)

    hosts_out = {}
    for name, spec in meta["hosts"].items():
        if name.lower().rstrip(".") in plan.hosts:
            hosts_out[name] = spec
            if spec.get("not_found_blob"):
                _copy_blob(src, out, spec["not_found_blob"])
    subset_meta = {**meta, "name": options.name or f"{world.name}-subset", "hosts": hosts_out}

    needed_archive = [u for c in chosen for u in case_urls(c)[0]]
    records = [r for warc in world.warcs for r in _scan_warc(warc)]
    kept_records = plan_archive(records, needed_archive, plan.hosts, options)
    warc_records = _copy_records(kept_records, out / "archive")

    normalized_kept = {normalize_url(u) for u in [*plan.urls, *needed_archive]}
    social_out = [line for line, item in _read_jsonl(src / "social.jsonl")
                  if normalize_url(str(item.get("url", ""))) in normalized_kept]

    (out / "world.json").write_text(json.dumps(subset_meta, ensure_ascii=False, indent=1) + "\n",
                                    encoding="utf-8")
    (out / "live.jsonl").write_text("".join(f"{line}\n" for line in live_out), encoding="utf-8")
    (out / "cases.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chosen), encoding="utf-8")
    if social_out:
        (out / "social.jsonl").write_text("".join(f"{line}\n" for line in social_out),
                                          encoding="utf-8")
    _write_sources(src, out, world.name, options, len(chosen))

    load_world(out)  # the subset must itself be a valid world
    by_category: dict[str, int] = defaultdict(int)
    for case in chosen:
        by_category[str(case["category"])] += 1
    return SubsetSummary(
        out=out, cases=len(chosen), by_category=dict(by_category), hosts=len(hosts_out),
        resources=len(live_out), blobs=sum(1 for p in (out / "blobs").rglob("*") if p.is_file()),
        warc_records=warc_records, social=len(social_out), bytes=_dir_size(out),
    )


def _write_sources(src: Path, out: Path, world_name: str, options: SubsetOptions, n: int) -> None:
    original = (src / "SOURCES.md").read_text(encoding="utf-8") if (src / "SOURCES.md").is_file() else ""
    note = (
        f"\n\n## This subset\n\n"
        f"Cut from the world `{world_name}` by `pagetrail testbed subset` with "
        f"`--cases {options.cases} --seed {options.seed}` "
        f"(distractors per host: {options.distractors_per_host}, other archived URLs per host: "
        f"{options.archive_urls_per_host}): {n} cases drawn across every category and expected "
        f"kind; the hosts, live pages, archive records, social annotations and blobs they need; "
        f"a deterministic sample of other pages of the same hosts as distractors; sitemaps "
        f"trimmed to the pages kept. Page texts and their licences are as described above.\n"
    )
    (out / "SOURCES.md").write_text(original.rstrip("\n") + note, encoding="utf-8")
