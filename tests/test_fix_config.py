"""A repository's configuration of `pagetrail fix` (tools/fix/config.py): where it is found,
which file wins, what a bad one says, the ignore files, the command line over the file, and
`config show` saying where each setting came from."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from pagetrail.cli.main import main
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.fix.config import (
    Rules,
    find_config,
    load_fix_config,
    parse_status,
    read_ignore_file,
)
from pagetrail.tools.fix.run import Options


def _repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


# ------------------------------------------------------------------ discovery and precedence


def test_found_from_the_working_directory_up_and_nearest_wins(tmp_path):
    repo = _repo(tmp_path / "repo")
    deep = repo / "docs" / "guide"
    deep.mkdir(parents=True)
    assert find_config(deep) is None
    (repo / "pagetrail.toml").write_text("min_confidence = 0.5\n")
    assert find_config(deep) == (repo / "pagetrail.toml").resolve()
    (repo / "docs" / "pagetrail.toml").write_text("min_confidence = 0.9\n")
    assert find_config(deep) == (repo / "docs" / "pagetrail.toml").resolve()
    config = load_fix_config(deep)
    assert config.values["min_confidence"] == 0.9  # the nearest file; files never merge
    assert config.sources["min_confidence"] == (
        f"{(repo / 'docs' / 'pagetrail.toml').resolve()}:1")
    assert config.sources["kinds"] == "default"


def test_pagetrail_toml_wins_over_pyproject_in_the_same_folder(tmp_path):
    repo = _repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text(
        "[project]\nname = \"x\"\n\n[tool.pagetrail]\naccept = [\"403\"]\n")
    found = load_fix_config(repo)
    assert found.path == (repo / "pyproject.toml").resolve()
    assert found.values["accept"] == ["403"]
    assert found.sources["accept"].endswith("pyproject.toml:5")
    (repo / "pagetrail.toml").write_text("accept = [\"429\"]\n")
    assert load_fix_config(repo).values["accept"] == ["429"]


def test_a_pyproject_without_the_table_is_passed_over(tmp_path):
    outer = tmp_path / "outer"
    repo = _repo(outer / "repo")
    (repo / "pyproject.toml").write_text("[project]\nname = \"x\"\n")
    assert find_config(repo) is None


def test_the_search_stops_at_the_repository_root(tmp_path):
    (tmp_path / "pagetrail.toml").write_text("min_confidence = 0.5\n")  # outside the repo
    repo = _repo(tmp_path / "repo")
    assert find_config(repo) is None
    plain = tmp_path / "plain" / "folder"
    plain.mkdir(parents=True)  # no repository: up to the filesystem root
    assert find_config(plain) == (tmp_path / "pagetrail.toml").resolve()


def test_explicit_file_and_no_config(tmp_path):
    other = tmp_path / "team.toml"
    other.write_text("kinds = [\"moved\"]\n")
    assert load_fix_config(tmp_path, path=other).values["kinds"] == ["moved"]
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_fix_config(tmp_path, path=tmp_path / "missing.toml")
    (tmp_path / "pagetrail.toml").write_text("kinds = [\"moved\"]\n")
    assert load_fix_config(tmp_path, use_files=False).values["kinds"] == [
        "moved", "replacement", "archived"]


def test_the_command_line_overrides_the_file_key_by_key(tmp_path):
    (tmp_path / "pagetrail.toml").write_text(
        "min_confidence = 0.5\nkinds = [\"archived\"]\nexclude = [\"a\\\\.example\"]\n"
        "exclude_path = [\"old/*\"]\n")
    config = load_fix_config(tmp_path).with_flags(
        {"min_confidence": 0.9, "kinds": None, "exclude_url": [], "include": ["*.md"]})
    assert config.values["min_confidence"] == 0.9
    assert config.sources["min_confidence"] == "command line"
    assert config.values["kinds"] == ["archived"]  # not given: the file's
    assert config.sources["kinds"].endswith("pagetrail.toml:2")
    assert config.values["exclude"] == ["a\\.example"]  # an empty list is "not given"
    options = config.options()
    assert isinstance(options, Options)
    assert options.min_confidence == 0.9 and options.kinds == ("archived",)
    # Globs given on the command line keep --include's meaning (relative to the path
    # given); the file's are relative to the file's folder.
    assert options.include == ("*.md",) and options.rules.include == ()
    assert options.rules.exclude_path == ("old/*",)
    with pytest.raises(ConfigError, match=r"command line: `accept\[0\]`"):
        load_fix_config(tmp_path).with_flags({"accept": ["99"]})


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(("text", "message"), [
    ("exclude = [\"a\"]\nacept = [\"403\"]\n",
     r"pagetrail\.toml:2: unknown key `acept` \(known: exclude, accept"),
    ("min_confidence = \"high\"\n", r"pagetrail\.toml:1: `min_confidence` must be a number"),
    ("min_confidence = 2\n", r"pagetrail\.toml:1: `min_confidence` must be between 0 and 1"),
    ("kinds = [\"moved\", \"gone\"]\n", r"pagetrail\.toml:1: `kinds\[1\]` must be one of"),
    ("kinds = []\n", r"pagetrail\.toml:1: `kinds` names none"),
    ("exclude = \"a\"\n", r"pagetrail\.toml:1: `exclude` must be a list of regular"),
    ("\n\nexclude = [\"(unclosed\"]\n",
     r"pagetrail\.toml:3: `exclude\[0\]` is not a regular expression"),
    ("accept = [\"403\", \"2xx\"]\n", r"pagetrail\.toml:1: `accept\[1\]`: '2xx' is not a status"),
    ("accept = [\"300..=200\"]\n", r"`accept\[0\]`: '300..=200' is not a range"),
    ("accept = [true]\n", r"`accept\[0\]`"),
    ("max_file_size = 1.5\n", r"`max_file_size` must be a whole number"),
    ("exclude = [\n", r"pagetrail\.toml: not valid TOML"),
    ("[fix]\nexclude = []\n", r"unknown key `fix`"),
])
def test_a_bad_file_is_one_line_naming_file_line_and_key(tmp_path, text, message):
    (tmp_path / "pagetrail.toml").write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_fix_config(tmp_path)
    assert "\n" not in str(caught.value)


def test_a_bad_pyproject_table_names_its_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = \"x\"\n[tool.pagetrail]\nmax_file_size = \"big\"\n")
    with pytest.raises(ConfigError, match=r"pyproject\.toml:4: `max_file_size`"):
        load_fix_config(tmp_path)


def test_the_cli_says_a_bad_file_in_one_line_and_exits_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "pagetrail.toml").write_text("acept = [403]\n")
    (tmp_path / "a.md").write_text("no links\n")
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "a.md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.search(r"config_error: .*pagetrail\.toml:1: unknown key `acept`", err)
    assert main(["fix", "--accept", "abc", "--no-config", "a.md"]) == 2
    assert "config_error: command line: `accept[0]`" in capsys.readouterr().err
    assert main(["fix", "--no-config", "--config", "x.toml", "a.md"]) == 2


@pytest.mark.parametrize(("value", "expected"), [
    (403, (403, 403)), ("429", (429, 429)), ("200..=299", (200, 299)),
    ("200..300", (200, 299)), ("..=204", (100, 204)), (" 500 ..= 599 ", (500, 599)),
])
def test_status_ranges_in_lychees_syntax(value, expected):
    assert parse_status(value) == expected


@pytest.mark.parametrize("value", ["99", "600", "2xx", "299..=200", "..100", "", "1e3"])
def test_bad_status_ranges(value):
    with pytest.raises(ValueError):
        parse_status(value)


# ------------------------------------------------------------------ ignore files and rules


def test_ignore_files_beside_the_config_both_read(tmp_path):
    repo = _repo(tmp_path / "repo")
    (repo / "docs").mkdir()
    (repo / ".pagetrailignore").write_text(
        "# private hosts\n\n^https://intranet\\.\n  linkedin\\.com/in/  \n")
    (repo / ".lycheeignore").write_text("twitter\\.com\n")
    config = load_fix_config(repo / "docs")  # no config file: the repository root's
    assert config.path is None
    assert [p.regex for p in config.ignore_patterns] == [
        "^https://intranet\\.", "linkedin\\.com/in/", "twitter\\.com"]
    rules = config.rules()
    hit = rules.excluded("https://www.linkedin.com/in/ann")
    assert hit is not None and hit.origin == ".pagetrailignore:4"
    assert rules.excluded("https://twitter.com/x").origin == ".lycheeignore:1"
    assert rules.excluded("https://example.org/") is None
    shown = config.shown()["ignore_files"]
    assert ".pagetrailignore" in shown["source"] and ".lycheeignore" in shown["source"]


def test_a_bad_ignore_line_is_named(tmp_path):
    ignore = tmp_path / ".pagetrailignore"
    ignore.write_text("ok\\.example\n[unclosed\n")
    with pytest.raises(ConfigError, match=r"\.pagetrailignore:2: not a regular expression"):
        read_ignore_file(ignore)


def test_rules_decide_urls_statuses_and_files(tmp_path):
    (tmp_path / "pagetrail.toml").write_text(
        "exclude = [\"^https://localhost\", \"example\\\\.com/private\"]\n"
        "accept = [\"403\", 429, \"500..=503\"]\n"
        "include = [\"docs/*\", \"README.md\"]\nexclude_path = [\"docs/archive/*\"]\n")
    rules = load_fix_config(tmp_path).rules()
    assert rules.excluded("https://example.com/private/x").regex == "example\\.com/private"
    assert rules.excluded("https://example.com/public") is None
    assert rules.excluded("http://localhost/") is None  # regexes as written: https only
    assert [s for s in (200, 403, 404, 429, 499, 500, 503, 504) if rules.accepts(s)] == [
        403, 429, 500, 503]
    assert not rules.accepts(None)
    assert rules.reads(tmp_path / "docs" / "a.md")
    assert rules.reads(tmp_path / "README.md")
    assert not rules.reads(tmp_path / "docs" / "archive" / "old.md")
    assert not rules.reads(tmp_path / "src" / "notes.md")
    assert Rules().reads(tmp_path / "anything.txt")


# ------------------------------------------------------------------ config show


def test_config_show_says_where_each_setting_came_from(tmp_path, monkeypatch, capsys):
    user = tmp_path / "user.toml"
    user.write_text("concurrency = 3\nproxy = \"http://ann:proxypass@proxy.corp:3128\"\n")
    monkeypatch.setenv("PAGETRAIL_CONFIG", str(user))
    monkeypatch.setenv("PAGETRAIL_RETRIES", "5")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-sekrit")
    repo = _repo(tmp_path / "repo")
    (repo / "pagetrail.toml").write_text("min_confidence = 0.7\n")
    (repo / ".lycheeignore").write_text("example\\.org\n")
    monkeypatch.chdir(repo)
    from pagetrail.tools.settings import get_settings

    get_settings.cache_clear()
    assert main(["config", "show", "--json"]) == 0
    out = capsys.readouterr().out
    assert "proxypass" not in out and "sekrit" not in out
    shown = json.loads(out)
    assert shown["retries"] == 5 and shown["sources"]["retries"] == "env PAGETRAIL_RETRIES"
    assert shown["sources"]["concurrency"] == f"{user}:1"
    assert shown["sources"]["slack_bot_token"] == "env SLACK_BOT_TOKEN"
    assert shown["slack_bot_token"] == "********"
    assert shown["sources"]["max_redirects"] == "default"
    fix = shown["fix"]
    assert fix["file"] == str((repo / "pagetrail.toml").resolve())
    assert fix["settings"]["min_confidence"] == {
        "value": 0.7, "source": f"{(repo / 'pagetrail.toml').resolve()}:1"}
    assert fix["settings"]["kinds"]["source"] == "default"
    assert fix["settings"]["ignore_files"]["value"] == ["example\\.org"]

    assert main(["config", "show"]) == 0
    text = capsys.readouterr().out
    assert "proxypass" not in text and "sekrit" not in text
    assert "retries = 5  # env PAGETRAIL_RETRIES" in text
    assert f"concurrency = 3  # {user}:1" in text
    assert f"min_confidence = 0.7  # {(repo / 'pagetrail.toml').resolve()}:1" in text

    assert main(["fix", "--show-config", "--min-confidence", "0.95", "--kinds", "moved"]) == 0
    text = capsys.readouterr().out
    assert "min_confidence = 0.95  # command line" in text
    assert "kinds = ['moved']  # command line" in text
    assert "archived_as = 'url'  # default" in text


def test_the_json_keys_added_beside_the_settings_are_no_setting_names():
    from pagetrail.tools.settings import Settings

    assert not {"sources", "fix"} & set(Settings.model_fields)


def test_the_documented_examples_are_valid(tmp_path):
    root = Path(__file__).resolve().parent.parent
    for doc in (root / "docs" / "configuration.md", root / "README.md"):
        blocks = [b for b in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.S)
                  if "accept =" in b]  # the pagetrail.toml examples, not other TOML
        assert blocks, doc
        for block in blocks:
            (tmp_path / "pagetrail.toml").write_text(block)
            rules = load_fix_config(tmp_path).rules()
            assert rules.excluded("https://intranet.example.org/wiki") is not None
            assert rules.accepts(403)


# ------------------------------------------------------------------ the run's rules (pure)


def _recovery(verdict: str, status: int | None, answer: str = "none"):
    from pagetrail.tools.models import CheckResult, Recovery

    return Recovery(url="https://a.example/x", answer=answer,
                    check=CheckResult(url="https://a.example/x", verdict=verdict,
                                      status=status))


@pytest.mark.parametrize(("verdict", "status", "answer", "accepted"), [
    ("dead", 410, "none", True),  # a failed check with an accepted status
    ("blocked", 403, "unverified", True),
    ("dead", 404, "archived", False),  # 404 is not accepted: the archived copy stands
    ("redirected", 200, "redirected", False),  # a move is still a move
    ("ok", 200, "alive", False),
    ("unreachable", None, "none", False),  # no status at all (DNS)
])
def test_accepted_status(verdict, status, answer, accepted):
    from pagetrail.tools.fix.config import Rules
    from pagetrail.tools.fix.run import accepted_status

    rules = Rules(accept=((403, 403), (410, 410), (200, 299)), accept_origin="p.toml:3")
    why = accepted_status(_recovery(verdict, status, answer), rules)
    assert (why is not None) is accepted
    if accepted:
        assert why == f"HTTP {status} is accepted (p.toml:3)"


def test_excluded_links_by_pattern_and_marker(tmp_path):
    from pagetrail.tools.fix.config import Pattern, Rules
    from pagetrail.tools.fix.files import read_source
    from pagetrail.tools.fix.run import excluded_links

    doc = tmp_path / "a.md"
    doc.write_text("[a](https://intranet.example/x) and [b](https://b.example/y)\n\n"
                   "<!-- pagetrail-ignore -->\n[c](https://c.example/z)\n\n"
                   "[d](https://d.example/w)\n")
    source = read_source(doc, "markdown")
    spans = extract_links_of(source)
    rules = Rules(exclude=(Pattern(r"^https://intranet\.", "pagetrail.toml:1"),))
    reasons = {spans_by_start(spans)[start]: why
               for start, why in excluded_links(source, spans, rules).items()}
    assert reasons == {
        "https://intranet.example/x": "matches '^https://intranet\\\\.' (pagetrail.toml:1)",
        "https://c.example/z": "pagetrail-ignore on line 3"}
    assert excluded_links(source, spans, Rules(markers=False)) == {}


def extract_links_of(source):
    from pagetrail.tools.fix.extract import extract_links

    return extract_links(source.text, source.fmt)


def spans_by_start(spans) -> dict[int, str]:
    return {span.start: span.url for span in spans}


def test_cli_exclude_url_and_accept_flags(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--no-config", "--show-config", "--exclude-url", "a\\.example",
                 "--exclude-url", "b\\.example", "--accept", "403,429", "--accept",
                 "500..=503", "--exclude-path", "old/*"]) == 0
    out = capsys.readouterr().out
    assert "# pagetrail fix: none found (defaults)" in out
    assert "exclude = ['a\\\\.example', 'b\\\\.example']  # command line" in out
    assert "accept = ['403', '429', '500..=503']  # command line" in out
    assert "exclude_path = ['old/*']  # command line" in out


def test_a_run_reads_only_the_files_the_configuration_lets_it(tmp_path, store):
    import asyncio

    from pagetrail.tools.fix.run import fix_paths

    repo = _repo(tmp_path / "repo")
    (repo / "pagetrail.toml").write_text(
        "exclude_path = [\"old/*\"]\nexclude = [\"^https://\"]\n")
    (repo / "old").mkdir()
    (repo / "old" / "a.md").write_text("[x](https://a.example/)\n")
    (repo / "b.md").write_text("[y](https://b.example/)\n")
    options = load_fix_config(repo).options()
    report = asyncio.run(fix_paths([str(repo)], options=options, store=store))
    assert [Path(f.path).name for f in report.files] == ["b.md"]
    assert [(link.url, link.verdict) for link in report.links] == [
        ("https://b.example/", "excluded")]
    assert report.distinct_urls == 0 and report.dead_left == 0
    # The same file named on the command line (as the pre-commit hook does) stays unread.
    named = asyncio.run(fix_paths([str(repo / "old" / "a.md")], options=options,
                                  store=store))
    assert named.files == [] and named.links == []
