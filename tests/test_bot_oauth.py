"""Many workspaces: Slack's OAuth install flow end to end against the running Bolt app
(uvicorn on loopback; signed requests for Slack's own), the token exchange (oauth.v2.access)
and the Web API answered by the loopback fake, the installations kept in pagetrail's store —
on SQLite, and on PostgreSQL when PAGETRAIL_TEST_POSTGRES_URL is set (the `db_url` fixture).
Then uninstall and revoked tokens, the App Home, and each workspace's own token."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from slack_fake import FakeSlack, ServerThread, command_body, post_signed, signed_headers
from sqlalchemy import MetaData, column, inspect, select, table

from pagetrail import Settings, slack_channel_teams
from pagetrail.bot.app import BotApp, build_app
from pagetrail.bot.server import asgi_app
from pagetrail.bot.textcheck import CALLBACK_ID
from pagetrail.store import Store
from pagetrail.store.slack import BOTS_TABLE, INSTALLATIONS_TABLE, STATES_TABLE

SECRET = "oauth-signing-secret"


@dataclass
class Running:
    fake: FakeSlack
    server: ServerThread
    bot_app: BotApp
    store: Store

    @property
    def base(self) -> str:
        return self.server.url.removesuffix("/slack/events")

    def command(self, text: str, *, team: str, channel: str, name: str,
                command: str = "/fixlink") -> httpx.Response:
        body = command_body(command, text, response_url=self.fake.response_url(name),
                            channel=channel).replace("team_id=T1", f"team_id={team}")
        return post_signed(self.server.url, SECRET, body)

    def event(self, team: str, event: dict[str, Any]) -> httpx.Response:
        body = json.dumps({"type": "event_callback", "team_id": team, "api_app_id": "A1",
                           "event": event, "event_id": f"Ev{time.monotonic_ns()}",
                           "event_time": int(time.time()), "authorizations": [
                               {"team_id": team, "user_id": "UBOT", "is_bot": True}]})
        return httpx.post(self.server.url, content=body.encode(), timeout=10,
                          headers=signed_headers(SECRET, body, content_type="application/json"))

    def install(self, team: str, code: str, token: str) -> httpx.Response:
        """A person installs the app in `team`: the install page, Slack's consent (the
        fake grants `code`), the redirect back with code and state."""
        self.fake.install(team, code=code, token=token)
        page = httpx.get(f"{self.base}/slack/install", timeout=10)
        assert page.status_code == 200
        authorize = html.unescape(re.search(r'<a href="([^"]+)"', page.text).group(1))
        query = parse_qs(urlsplit(authorize).query)
        assert authorize.startswith("https://slack.com/oauth/v2/authorize?")
        assert query["client_id"] == [self.fake.client_id]
        assert "commands" in query["scope"][0].split(",")
        state = query["state"][0]
        cookie = page.headers["set-cookie"].split(";", 1)[0]  # the browser keeps it
        assert cookie.endswith(f"={state}")
        return httpx.get(f"{self.base}/slack/oauth_redirect?"
                         + urlencode({"code": code, "state": state}),
                         headers={"cookie": cookie}, timeout=10)

    def answer_text(self, name: str) -> str:
        posted = self.fake.wait_for(lambda: self.fake.posts(f"/response/{name}"), 10)
        return json.dumps(posted[0].body)

    def tokens_used(self, method: str) -> list[str]:
        return [r.token.removeprefix("bearer:") for r in self.fake.posts(f"/api/{method}")]


@pytest.fixture
def running(db_url: str) -> Iterator[Running]:
    fake = FakeSlack().start()
    store = Store(db_url)
    settings = Settings(slack_api_url=fake.api_url, SLACK_SIGNING_SECRET=SECRET,
                        SLACK_CLIENT_ID=fake.client_id, SLACK_CLIENT_SECRET=fake.client_secret,
                        database_url=db_url)
    bot_app = build_app(settings, store, digests=False)
    server = ServerThread(asgi_app(bot_app)).start()
    try:
        yield Running(fake, server, bot_app, store)
    finally:
        server.stop()
        fake.stop()
        store.dispose()


def rows(store: Store, name: str, team: str) -> list[dict[str, Any]]:
    t = table(name, column("team_id"), column("bot_token"), column("client_id"))
    with store.engine.connect() as connection:
        return [dict(r._mapping) for r in connection.execute(
            select(t.c.team_id, t.c.bot_token, t.c.client_id).where(t.c.team_id == team))]


def shortcut_body(team: str, channel: str, text: str, response_url: str | None) -> str:
    payload: dict[str, Any] = {
        "type": "message_action", "callback_id": CALLBACK_ID, "trigger_id": "1.2.3",
        "team": {"id": team, "domain": "fake"}, "api_app_id": "A1", "token": "legacy",
        "user": {"id": "U1", "name": "ann"}, "channel": {"id": channel, "name": "docs"},
        "message_ts": "1561939200.000100",
        "message": {"type": "message", "user": "U2", "ts": "1561939200.000100", "text": text},
    }
    if response_url:
        payload["response_url"] = response_url
    return urlencode({"payload": json.dumps(payload)})


# ------------------------------------------------------------------------ the install flow


def test_install_flow_stores_the_installation_and_answers_with_its_token(running: Running):
    answer = running.install("T2", "code-2", "xoxb-team-2")
    assert answer.status_code == 200, answer.text
    # The code went to oauth.v2.access on the loopback API with the app's credentials.
    [exchange] = running.fake.posts("/api/oauth.v2.access")
    assert exchange.body["code"] == "code-2"
    assert exchange.token == f"basic:{running.fake.client_id}:{running.fake.client_secret}"
    assert rows(running.store, INSTALLATIONS_TABLE, "T2") == [
        {"team_id": "T2", "bot_token": "xoxb-team-2", "client_id": running.fake.client_id}]
    assert [r["bot_token"] for r in rows(running.store, BOTS_TABLE, "T2")] == ["xoxb-team-2"]
    with running.store.engine.connect() as connection:  # the state was used up
        assert connection.execute(select(table(STATES_TABLE, column("id")).c.id)).all() == []

    # A later /fixlink from that workspace is authorized with that workspace's token…
    response = running.command("help", team="T2", channel="C-t2", name="h2")
    assert response.status_code == 200 and "/fixlink signature URL" in response.text
    assert "xoxb-team-2" in running.tokens_used("auth.test")
    assert slack_channel_teams(running.store) == {"C-t2": ("T2", "")}
    # …and the shortcut's answer is posted with it.
    body = shortcut_body("T2", "C-t2", "no links here", running.fake.response_url("s2"))
    assert post_signed(running.server.url, SECRET, body).status_code == 200
    posted = running.fake.wait_for(lambda: running.fake.posts("/api/chat.postMessage"))
    assert posted[0].token == "bearer:xoxb-team-2" and posted[0].body["channel"] == "C-t2"

    # A workspace that never installed the app is not served: told to install it.
    response = running.command("help", team="T9", channel="C-t9", name="h9")
    assert response.status_code == 200 and "/fixlink signature URL" not in response.text
    assert "reinstall this app" in running.answer_text("h9")
    assert "C-t9" not in slack_channel_teams(running.store)


def test_a_redirect_without_the_installing_browser_or_with_a_bad_code_fails(running: Running):
    running.fake.install("T5", code="code-5", token="xoxb-team-5")
    page = httpx.get(f"{running.base}/slack/install", timeout=10)
    state = re.search(r"state=([\w-]+)", html.unescape(page.text)).group(1)
    # Another browser (no state cookie): refused before any token exchange.
    stranger = httpx.get(f"{running.base}/slack/oauth_redirect?"
                         + urlencode({"code": "code-5", "state": state}), timeout=10)
    assert stranger.status_code == 400
    assert running.fake.posts("/api/oauth.v2.access") == []
    # The right browser with a code Slack did not grant: refused by oauth.v2.access.
    cookie = page.headers["set-cookie"].split(";", 1)[0]
    bad = httpx.get(f"{running.base}/slack/oauth_redirect?"
                    + urlencode({"code": "forged", "state": state}),
                    headers={"cookie": cookie}, timeout=10)
    assert bad.status_code == 401
    assert rows(running.store, INSTALLATIONS_TABLE, "T5") == []


# ------------------------------------------------------------------------ uninstall, revoke


def test_uninstall_deletes_the_installation_and_stops_serving_the_workspace(running: Running):
    from pagetrail.store.watches import add_watch

    assert running.install("T3", "code-3", "xoxb-team-3").status_code == 200
    assert running.install("T4", "code-4", "xoxb-team-4").status_code == 200
    for team, channel in (("T3", "C-t3"), ("T4", "C-t4")):
        running.command("help", team=team, channel=channel, name=f"h-{team}")
        add_watch(running.store, channel, "https://blog.example.org/", key=str)
    workspaces = running.bot_app.workspaces
    assert _run(workspaces.served_channels()) is None  # every watched channel is served

    assert running.event("T3", {"type": "app_uninstalled"}).status_code == 200
    running.fake.wait_for(lambda: not rows(running.store, BOTS_TABLE, "T3"))
    assert rows(running.store, INSTALLATIONS_TABLE, "T3") == []
    assert rows(running.store, BOTS_TABLE, "T4")  # the other workspace keeps its own
    assert _run(workspaces.served_channels()) == ["C-t4"]
    # Its watches stay in the store (docs/slack.md): a reinstall resumes them.
    with running.store.engine.connect() as connection:
        watches = table("watches", column("channel"))
        assert connection.execute(select(watches.c.channel).where(
            watches.c.channel == "C-t3")).all() == [("C-t3",)]
    response = running.command("help", team="T3", channel="C-t3", name="h-gone")
    assert "/fixlink signature URL" not in response.text
    assert "reinstall this app" in running.answer_text("h-gone")


def test_revoked_bot_token_is_deleted(running: Running):
    assert running.install("T6", "code-6", "xoxb-team-6").status_code == 200
    response = running.event("T6", {"type": "tokens_revoked",
                                     "tokens": {"oauth": ["U-installer"], "bot": ["UBOT"]}})
    assert response.status_code == 200
    running.fake.wait_for(lambda: not rows(running.store, BOTS_TABLE, "T6"))
    assert rows(running.store, INSTALLATIONS_TABLE, "T6") == []


# ------------------------------------------------------------------------ App Home


def test_app_home_lists_the_workspace_watches_and_last_digest(running: Running):
    from pagetrail.store.digests import add_run
    from pagetrail.store.watches import add_watch
    from pagetrail.tools.scan.digest import ChannelDigest, ScanDigest

    assert running.install("T7", "code-7", "xoxb-team-7").status_code == 200
    assert running.install("T8", "code-8", "xoxb-team-8").status_code == 200
    running.command("help", team="T7", channel="C-home", name="h-home")
    running.command("help", team="T8", channel="C-other", name="h-other")
    add_watch(running.store, "C-home", "https://blog.example.org/", key=str)
    add_watch(running.store, "C-other", "https://elsewhere.example.org/", key=str)
    scan = ScanDigest(target="https://blog.example.org/", scan_id="s1",
                      started_at="2026-11-23T09:00:00+00:00", seconds=1.0, pages_crawled=3,
                      links_found=40, urls_checked=40, requests=41,
                      states={"ok": 37, "suspect": 2, "confirmed": 1})
    digest = ChannelDigest(channel="C-home", period="2026-W48", scans=[scan])
    from datetime import UTC, datetime

    add_run(running.store, "C-home", "2026-W48", at=datetime.now(UTC), status="posted",
            summary=digest.model_dump(mode="json"))

    assert running.event("T7", {"type": "app_home_opened", "user": "U1", "tab": "home",
                                "channel": "D-home"}).status_code == 200
    [published] = running.fake.wait_for(lambda: running.fake.posts("/api/views.publish"))
    assert published.token == "bearer:xoxb-team-7" and published.body["user_id"] == "U1"
    view = published.body["view"]
    view = json.loads(view) if isinstance(view, str) else view
    shown = json.dumps(view)
    assert view["type"] == "home"
    assert "C-home" in shown and "https://blog.example.org/" in shown
    assert "2026-W48" in shown and "37 working" in shown and "1 confirmed dead" in shown
    assert "C-other" not in shown and "elsewhere.example.org" not in shown  # not T7's
    assert slack_channel_teams(running.store).get("D-home") is None


# ------------------------------------------------------------------------ schema


def test_migrated_tables_are_slack_sdks_own(db_url: str):
    from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
    from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore

    store = Store(db_url)
    try:
        wanted = MetaData()
        SQLAlchemyInstallationStore.build_installations_table(wanted, INSTALLATIONS_TABLE)
        SQLAlchemyInstallationStore.build_bots_table(wanted, BOTS_TABLE)
        SQLAlchemyOAuthStateStore.build_oauth_states_table(wanted, STATES_TABLE)
        inspector = inspect(store.engine)
        for name, expected in wanted.tables.items():
            got = {c["name"]: c for c in inspector.get_columns(name)}
            assert list(got) == [c.name for c in expected.columns], name
            for col in expected.columns:
                assert got[col.name]["nullable"] == col.nullable, (name, col.name)
                assert got[col.name]["type"]._type_affinity is col.type._type_affinity or \
                    isinstance(got[col.name]["type"], type(col.type)), (name, col.name)
                length = getattr(col.type, "length", None)
                if length is not None:
                    assert got[col.name]["type"].length == length, (name, col.name)
            assert {tuple(i["column_names"]) for i in inspector.get_indexes(name)} == \
                {tuple(c.name for c in i.columns) for i in expected.indexes}, name
    finally:
        store.dispose()


def test_db_upgrade_creates_the_slack_tables_without_slack_sdk(tmp_path) -> None:
    """`pagetrail db upgrade` makes the tables in a process where slack_sdk cannot load."""
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    code = ("import sys; sys.modules['slack_sdk'] = None; sys.modules['slack_bolt'] = None\n"
            "from pagetrail.cli.main import main\n"
            "sys.exit(main(['db', 'upgrade']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**_env(), "PAGETRAIL_DATABASE_URL": url})
    assert out.returncode == 0, out.stderr
    store = Store(url)
    try:
        assert {INSTALLATIONS_TABLE, BOTS_TABLE, STATES_TABLE, "slack_channels"} <= \
            set(inspect(store.engine).get_table_names())
    finally:
        store.dispose()


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PAGETRAIL_DATABASE_URL"}


def _run(coroutine: Any) -> Any:
    import asyncio

    return asyncio.run(coroutine)


# ------------------------------------------------------------------------ digests per workspace


def test_digests_are_posted_with_each_workspace_token_and_not_after_uninstall(running: Running):
    """`pagetrail digest run --post` (bot.digest_post.run_and_post) with the install flow:
    each channel's digest through its own workspace's bot token; the channel of an
    uninstalled workspace, and one of no known workspace, get none."""
    from datetime import UTC, datetime

    from pagetrail.bot.digest_post import run_and_post
    from pagetrail.store.digests import add_run
    from pagetrail.store.watches import add_watch
    from pagetrail.tools.scan.digest import ChannelDigest, ScanDigest, period_of

    moment = datetime(2026, 11, 23, 9, tzinfo=UTC)
    scanned: list[str] = []

    async def runner(store, settings, *, clock, channel=None, **_options):  # type: ignore[no-untyped-def]
        # The digest a scan would make (the scans themselves are tested elsewhere).
        scanned.append(channel)
        period = period_of(clock())
        scan = ScanDigest(target="https://blog.example.org/", scan_id=f"s-{channel}",
                          started_at=clock().isoformat(), seconds=1.0, pages_crawled=1,
                          links_found=5, urls_checked=5, requests=6, states={"ok": 5})
        digest = ChannelDigest(channel=channel, period=period, scans=[scan])
        digest.run_id = add_run(store, channel, period, at=clock(), status="ready",
                                summary=digest.model_dump(mode="json"))
        return [digest]

    for team, code in (("T10", "code-10"), ("T11", "code-11")):
        assert running.install(team, code, f"xoxb-{team}").status_code == 200
        running.command("help", team=team, channel=f"C-{team}", name=f"d-{team}")
        add_watch(running.store, f"C-{team}", "https://blog.example.org/", key=str)
    add_watch(running.store, "C-unknown", "https://blog.example.org/", key=str)
    assert running.event("T11", {"type": "app_uninstalled"}).status_code == 200
    running.fake.wait_for(lambda: not rows(running.store, BOTS_TABLE, "T11"))

    settings = running.bot_app.bot.engine.settings
    outcomes = _run(run_and_post(settings, running.store, runner=runner,
                                 clock=lambda: moment))
    assert [(o.channel, o.status) for o in outcomes] == [("C-T10", "posted")]
    assert scanned == ["C-T10"]
    posted = running.fake.posts("/api/chat.postMessage")
    assert posted and {(r.body["channel"], r.token) for r in posted} == \
        {("C-T10", "bearer:xoxb-T10")}


def test_install_page_views_leave_no_expired_states_behind(running: Running):
    from pagetrail import slack_oauth_stores

    stale = slack_oauth_stores(running.store, running.fake.client_id, state_seconds=-60)
    old = [stale.states.issue() for _ in range(3)]  # install pages never followed
    assert httpx.get(f"{running.base}/slack/install", timeout=10).status_code == 200
    with running.store.engine.connect() as connection:
        states = connection.execute(select(table(STATES_TABLE, column("state")).c.state)
                                    ).scalars().all()
    assert len(states) == 1 and not set(states) & set(old)


@pytest.mark.parametrize(("env", "expected"), [
    ({"SLACK_CLIENT_ID": "c"}, "SLACK_CLIENT_SECRET is not set"),
    ({"SLACK_CLIENT_SECRET": "s"}, "SLACK_CLIENT_ID is not set"),
    ({}, "SLACK_BOT_TOKEN is not set (or SLACK_CLIENT_ID and SLACK_CLIENT_SECRET"),
])
def test_half_configured_slack_is_a_named_error(tmp_path, env: dict[str, str],
                                                expected: str) -> None:
    from pagetrail import ConfigError

    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        settings = Settings(SLACK_SIGNING_SECRET="s", database_url=store.url, **env)
        with pytest.raises(ConfigError) as raised:
            build_app(settings, store, digests=False)
        assert expected in str(raised.value)
        full = Settings(SLACK_CLIENT_ID="c", SLACK_CLIENT_SECRET="s", database_url=store.url)
        with pytest.raises(ConfigError, match="needs HTTP"):
            build_app(full, store, socket_mode=True, digests=False)
    finally:
        store.dispose()
