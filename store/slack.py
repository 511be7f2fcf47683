"""Slack workspaces in the store: slack_sdk's SQLAlchemy installation and OAuth state stores
on the store's own engine (tables `slack_installations`, `slack_bots`, `slack_oauth_states`,
made by migration 0010 and written by slack_sdk's code), and which workspace each channel
belongs to (table `slack_channels`, written only here).

slack_sdk is imported only when the stores are built, so the store (and `pagetrail db
upgrade`, which creates the tables) works without the `[slack]` extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, column, delete, select, table
from sqlalchemy.exc import IntegrityError

from pagetrail.store.db import Store
from pagetrail.store.errors import ConfigError
from pagetrail.store.faults import store_call
from pagetrail.store.models import SlackChannel, utcnow

INSTALLATIONS_TABLE = "slack_installations"
BOTS_TABLE = "slack_bots"
STATES_TABLE = "slack_oauth_states"
STATE_SECONDS = 600  # how long an install link stays valid (Bolt's default)


@dataclass(frozen=True)
class SlackOAuthStores:
    """slack_sdk's `SQLAlchemyInstallationStore` and `SQLAlchemyOAuthStateStore` (sync) on
    the store's engine. Their calls are SQL: run them through `store.call` (the fault
    policy) off the event loop."""

    installations: Any
    states: Any


def slack_oauth_stores(store: Store, client_id: str, *,
                       state_seconds: int = STATE_SECONDS) -> SlackOAuthStores:
    """The Slack app's installation and OAuth state stores, kept in pagetrail's database.
    ConfigError when slack_sdk is not installed (the `[slack]` extra)."""
    try:
        from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
        from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore
    except ImportError as exc:
        raise ConfigError("Slack installations need slack_sdk and greenlet (pip install "
                          f"'pagetrail[slack]'): {exc}") from exc
    installations = SQLAlchemyInstallationStore(
        client_id=client_id, engine=store.engine, bots_table_name=BOTS_TABLE,
        installations_table_name=INSTALLATIONS_TABLE)
    states = SQLAlchemyOAuthStateStore(expiration_seconds=state_seconds, engine=store.engine,
                                       table_name=STATES_TABLE)
    return SlackOAuthStores(installations, states)


@store_call
def remember_channel(store: Store, channel: str, team: str, enterprise: str = "") -> bool:
    """Record that `channel` belongs to workspace `team` (a request came from it there);
    True when that is new or changed (a channel moved to another workspace of a grid)."""
    try:
        return _remember(store, channel, team, enterprise)
    except IntegrityError:  # another process added the channel meanwhile: now an update
        return _remember(store, channel, team, enterprise)


def _remember(store: Store, channel: str, team: str, enterprise: str) -> bool:
    with store.session() as session:
        row = session.get(SlackChannel, channel)
        if row is not None and (row.team, row.enterprise) == (team, enterprise):
            return False
        if row is None:
            session.add(SlackChannel(channel=channel, team=team, enterprise=enterprise))
        else:
            row.team, row.enterprise, row.seen_at = team, enterprise, utcnow()
    return True


@store_call
def channel_teams(store: Store, team: str | None = None) -> dict[str, tuple[str, str]]:
    """Channel → (workspace, enterprise or ""), of every channel seen (only `team`'s when
    given)."""
    query = select(SlackChannel.channel, SlackChannel.team, SlackChannel.enterprise
                   ).order_by(SlackChannel.channel)
    if team is not None:
        query = query.where(SlackChannel.team == team)
    with store.session() as session:
        return {channel: (owner, enterprise)
                for channel, owner, enterprise in session.execute(query).all()}


@store_call
def purge_expired_states(store: Store) -> int:
    """Delete the OAuth states past their expiry (install pages never followed); how many."""
    states = table(STATES_TABLE, column("expire_at", DateTime()))
    # slack_sdk writes expire_at as naive UTC (slack_sdk.oauth.sqlalchemy_utils).
    now = datetime.now(UTC).replace(tzinfo=None)
    with store.session() as session:
        result = session.execute(delete(states).where(states.c.expire_at < now))
        return int(getattr(result, "rowcount", 0) or 0)
