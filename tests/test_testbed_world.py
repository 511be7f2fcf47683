"""Loading and validating worlds: every malformed input names its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagetrail.tools.errors import WorldError
from pagetrail.tools.testbed.world import load_world, resource_key
from pagetrail.tools.testbed.worldgen import WorldBuilder, build_tiny_world


def _small_world(root: Path) -> WorldBuilder:
    b = WorldBuilder(root)
    b.host("a.example")
    b.page("https://a.example/", "<title>A</title>")
    b.page("https://a.example/docs/", "<title>Docs</title>")
    b.host("b.example", "nxdomain")
    b.case("x1", "https://b.example/old", "gone", "none", [])
    b.case("x2", "https://a.example/old", "moved_same_host", "moved",
           ["https://a.example/docs/"])
    return b


def _append(path: Path, line: str) -> None:
    with path.open("a") as handle:
        handle.write(line + "\n")


def test_tiny_world_loads_with_everything(tmp_path):
    tiny = build_tiny_world(tmp_path / "w")
    world = load_world(tiny.path)
    assert world.name == "tiny"
    assert set(world.hosts) == set(tiny.hosts)
    assert world.lookup(tiny.moved_to) is not None
    assert [c.id for c in world.cases] == ["t001", "t002", "t003", "t004"]
    assert world.social[0].title == tiny.social_title
    assert [w.name for w in world.warcs] == ["tiny.warc.gz"]
    assert b"Solar farms" in world.read_blob(world.lookup(tiny.moved_to).blob)


def test_lookup_matches_default_port_not_trailing_slash(tmp_path):
    world = load_world(_small_world(tmp_path / "w").write())
    assert world.lookup("https://a.example/docs") is None  # another resource
    assert world.lookup("https://a.example/docs/").url == "https://a.example/docs/"
    assert world.lookup("https://A.example:443/docs/").url == "https://a.example/docs/"
    assert world.lookup("https://a.example").url == "https://a.example/"
    assert world.lookup("http://a.example/docs/") is None  # scheme matters
    assert resource_key("HTTPS://X.example:443") == "https://x.example/"


def test_missing_blob_is_named_with_line(tmp_path):
    root = _small_world(tmp_path / "w").write()
    _append(root / "live.jsonl", json.dumps(
        {"url": "https://a.example/x", "status": 200, "headers": {}, "blob": "zz/none.html.gz"}))
    with pytest.raises(WorldError, match=r"^live\.jsonl:3: blob missing"):
        load_world(root)


def test_bad_json_line_is_named(tmp_path):
    root = _small_world(tmp_path / "w").write()
    _append(root / "live.jsonl", '{"url": "https://a.example/y", ')
    with pytest.raises(WorldError, match=r"^live\.jsonl:3: invalid JSON"):
        load_world(root)


def test_case_expecting_a_url_not_live_is_rejected(tmp_path):
    builder = _small_world(tmp_path / "w")
    builder.case("x3", "https://a.example/gone", "moved_same_host", "moved",
                 ["https://a.example/not-there"])
    with pytest.raises(WorldError, match=r"^cases\.jsonl:3: expect\.urls entry is not in live"):
        load_world(builder.write())


@pytest.mark.parametrize(("line", "message"), [
    ({"url": "https://c.example/", "status": 200, "headers": {}}, "not listed"),
    ({"url": "https://b.example/", "status": 200, "headers": {}}, "nxdomain"),
    ({"url": "https://a.example/r", "status": 301, "headers": {}}, "without a Location"),
    ({"url": "https://a.example/n", "status": 200, "headers": {}}, "needs a blob"),
    ({"url": "ftp://a.example/n", "status": 200, "headers": {}}, "absolute http"),
    ({"url": "https://a.example/", "status": 999, "headers": {}}, "status"),
])
def test_bad_live_lines(tmp_path, line, message):
    root = _small_world(tmp_path / "w").write()
    _append(root / "live.jsonl", json.dumps(line))
    with pytest.raises(WorldError, match=rf"^live\.jsonl:3: .*{message}"):
        load_world(root)


def test_duplicate_case_id_and_bad_kind(tmp_path):
    root = _small_world(tmp_path / "w").write()
    _append(root / "cases.jsonl", json.dumps(
        {"id": "x1", "url": "https://a.example/q", "category": "gone",
         "expect": {"kind": "none", "urls": []}}))
    with pytest.raises(WorldError, match=r"^cases\.jsonl:3: duplicate id"):
        load_world(root)


@pytest.mark.parametrize(("change", "message"), [
    ({"format": 3}, "unknown format 3: this runner serves format 1 or 2"),
    ({"format": "2"}, "unknown format '2'"),
    ({"search": {"results_per_page": 0}}, "search.results_per_page must be an integer"),
    ({"search": {"rate_limit": {"per_second": -1}}}, "rate_limit.per_second must be a number"),
    ({"hosts": {"a.example": {"state": "sleepy"}}}, "state must be one of"),
    ({"hosts": {"a.example": {"state": "up", "not_found": "soft404"}}}, "needs not_found_blob"),
    ({"hosts": {"a.example": {"state": "up", "not_found": "soft404",
                              "not_found_blob": "no/such.gz"}}}, "not_found_blob missing"),
    ({"hosts": {"a.example": {"state": "up", "flaky": 2}}}, "flaky"),
])
def test_bad_world_json(tmp_path, change, message):
    root = _small_world(tmp_path / "w").write()
    meta = json.loads((root / "world.json").read_text())
    meta.update(change)
    if "search" in change:
        meta["format"] = 2  # the search block is read in version-2 worlds only
    (root / "world.json").write_text(json.dumps(meta))
    (root / "live.jsonl").write_text("")
    (root / "cases.jsonl").write_text("")
    with pytest.raises(WorldError, match=rf"^world\.json.*{message}"):
        load_world(root)


def test_up_host_needs_a_root_page(tmp_path):
    builder = _small_world(tmp_path / "w")
    builder.host("c.example").page("https://c.example/only-a-page", "<title>C</title>")
    with pytest.raises(WorldError, match=r"'c\.example' is up but has no root page"):
        load_world(builder.write())


def test_social_line_needs_a_title(tmp_path):
    root = _small_world(tmp_path / "w").write()
    _append(root / "social.jsonl", json.dumps({"url": "https://a.example/", "tags": []}))
    with pytest.raises(WorldError, match=r"^social\.jsonl:1: title"):
        load_world(root)


def test_missing_directory_and_files(tmp_path):
    with pytest.raises(WorldError, match="not a directory"):
        load_world(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorldError, match=r"^world\.json: missing"):
        load_world(tmp_path / "empty")
