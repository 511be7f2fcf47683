"""Which token answers which workspace.

One workspace (SLACK_BOT_TOKEN): one client for every channel. Many workspaces (the OAuth
install flow): each installation's bot token is in the store (slack_sdk's SQLAlchemy
installation store, through `pagetrail.slack_oauth_stores`), and each channel's workspace
is known from the requests that came from it (`pagetrail.remember_slack_channel`), so that
a digest is posted with its own workspace's token, and a workspace that uninstalled the
app (its bot token deleted) is no longer served.

slack_sdk's stores are synchronous (SQLAlchemy); Bolt's AsyncApp wants asynchronous ones:
`ThreadedInstallationStore` and `ThreadedStateStore` run each call in a worker thread under
the store's fault policy (`Store.call`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from slack_bolt.error import BoltError
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.web.async_client import AsyncWebClient

from pagetrail import (
    ConfigError,
    PagetrailError,
    Settings,
    Store,
    list_watches,
    purge_expired_slack_states,
    slack_channel_teams,
    slack_oauth_stores,
)
from pagetrail.bot.posting import SlackPoster, SlackPostFailed, secret, web_client

log = logging.getLogger(__name__)
T = TypeVar("T")


async def _in_thread(store: Store, function: Callable[..., T], **kwargs: Any) -> T:
    return await asyncio.to_thread(store.call, function, **kwargs)


class ThreadedInstallationStore(AsyncInstallationStore):
    """slack_sdk's SQLAlchemyInstallationStore for Bolt's AsyncApp."""

    def __init__(self, sync: Any, store: Store) -> None:
        self.sync = sync
        self.store = store

    @property
    def logger(self) -> logging.Logger:
        return self.sync.logger  # type: ignore[no-any-return]

    async def async_save(self, installation: Installation) -> None:
        try:
            await _in_thread(self.store, self.sync.save, installation=installation)
        except PagetrailError as exc:  # Bolt shows its failure page for a BoltError only
            raise BoltError(f"the installation could not be stored: {exc}") from exc

    async def async_save_bot(self, bot: Bot) -> None:
        await _in_thread(self.store, self.sync.save_bot, bot=bot)

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        return await _in_thread(self.store, self.sync.find_bot, enterprise_id=enterprise_id,
                                team_id=team_id, is_enterprise_install=is_enterprise_install)

    async def async_find_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                      user_id: str | None = None,
                                      is_enterprise_install: bool | None = False,
                                      ) -> Installation | None:
        return await _in_thread(self.store, self.sync.find_installation,
                                enterprise_id=enterprise_id, team_id=team_id, user_id=user_id,
                                is_enterprise_install=is_enterprise_install)

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await _in_thread(self.store, self.sync.delete_bot, enterprise_id=enterprise_id,
                         team_id=team_id)

    async def async_delete_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                        user_id: str | None = None) -> None:
        await _in_thread(self.store, self.sync.delete_installation,
                         enterprise_id=enterprise_id, team_id=team_id, user_id=user_id)


class ThreadedStateStore(AsyncOAuthStateStore):
    """slack_sdk's SQLAlchemyOAuthStateStore for Bolt's AsyncApp."""

    def __init__(self, sync: Any, store: Store) -> None:
        self.sync = sync
        self.store = store

    @property
    def logger(self) -> logging.Logger:
        return self.sync.logger  # type: ignore[no-any-return]

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        # Every view of the install page issues a state; the ones never used would pile up.
        await asyncio.to_thread(purge_expired_slack_states, self.store)
        return await _in_thread(self.store, self.sync.issue)

    async def async_consume(self, state: str) -> bool:
        return await _in_thread(self.store, self.sync.consume, state=state)


class NoWorkspace(SlackPostFailed):
    """The channel's workspace is unknown, or has no installation (any more)."""

    code = "slack_no_workspace"


class Workspaces(Protocol):
    """Where a channel's messages are posted from, and which channels are served."""

    async def client_for(self, channel: str) -> AsyncWebClient:
        """The client whose token posts in `channel` (NoWorkspace when there is none)."""
        ...

    async def served_channels(self) -> list[str] | None:
        """The watched channels whose digests are posted (None: every watched channel)."""
        ...

    async def channels_of(self, team: str) -> list[str]:
        """The watched channels of workspace `team` (its App Home lists them)."""
        ...


async def _watched(store: Store) -> list[str]:
    return [w.channel for w in await list_watches(store=store) if w.targets]


class SingleWorkspace:
    """SLACK_BOT_TOKEN: one workspace, one client, every channel."""

    def __init__(self, client: AsyncWebClient, store: Store) -> None:
        self.client = client
        self.store = store

    async def client_for(self, channel: str) -> AsyncWebClient:
        return self.client

    async def served_channels(self) -> list[str] | None:
        return None

    async def channels_of(self, team: str) -> list[str]:
        return await _watched(self.store)


class InstalledWorkspaces:
    """The workspaces that installed the app: each channel posted to with the bot token of
    the workspace it was last seen in; a channel whose workspace is unknown or uninstalled
    is not served (said in the log, once a run)."""

    def __init__(self, installations: AsyncInstallationStore, store: Store,
                 api_url: str) -> None:
        self.installations = installations
        self.store = store
        self.api_url = api_url
        self._clients: dict[str, AsyncWebClient] = {}

    async def _teams(self) -> dict[str, tuple[str, str]]:
        return await asyncio.to_thread(slack_channel_teams, self.store)

    async def _bot_token(self, team: str, enterprise: str) -> str | None:
        bot = await self.installations.async_find_bot(enterprise_id=enterprise or None,
                                                      team_id=team)
        return bot.bot_token if bot is not None and bot.bot_token else None

    async def client_for(self, channel: str) -> AsyncWebClient:
        owner = (await asyncio.to_thread(slack_channel_teams, self.store)).get(channel)
        if owner is None:
            raise NoWorkspace(f"the workspace of channel {channel} is unknown (no request "
                              "came from it yet)")
        token = await self._bot_token(*owner)
        if token is None:
            raise NoWorkspace(f"workspace {owner[0]} of channel {channel} has no installation")
        client = self._clients.get(token)
        if client is None:
            client = self._clients[token] = web_client(token, self.api_url)
        return client

    async def served_channels(self) -> list[str] | None:
        owners = await self._teams()
        installed: dict[tuple[str, str], bool] = {}
        served, unknown, uninstalled = [], [], []
        for channel in await _watched(self.store):
            owner = owners.get(channel)
            if owner is None:
                unknown.append(channel)
                continue
            if owner not in installed:
                installed[owner] = await self._bot_token(*owner) is not None
            (served if installed[owner] else uninstalled).append(channel)
        if unknown:
            log.warning("slack: watched channels of no known workspace, not served (a command "
                        "in each makes it known): %s", ", ".join(unknown))
        if uninstalled:
            log.info("slack: watched channels of workspaces without an installation, not "
                     "served: %s", ", ".join(uninstalled))
        # Every watched channel served: None, so that a site watched by several channels is
        # scanned once for all of them (post_due_digests shares scans only then).
        return None if not unknown and not uninstalled else served

    async def channels_of(self, team: str) -> list[str]:
        mine = set(await asyncio.to_thread(slack_channel_teams, self.store, team))
        return [channel for channel in await _watched(self.store) if channel in mine]




def oauth_configured(settings: Settings) -> bool:
    """Whether the app serves many workspaces (SLACK_CLIENT_ID and SLACK_CLIENT_SECRET set);
    ConfigError when only one of the two is."""
    client_id = (settings.slack_client_id or "").strip()
    client_secret = secret(settings.slack_client_secret)
    if bool(client_id) != bool(client_secret):
        raise ConfigError("SLACK_CLIENT_ID and SLACK_CLIENT_SECRET go together: the install "
                          f"flow needs both ({'SLACK_CLIENT_SECRET' if client_id else 'SLACK_CLIENT_ID'}"
                          " is not set)")
    return bool(client_id)


def oauth_stores(settings: Settings, store: Store,
                 ) -> tuple[ThreadedInstallationStore, ThreadedStateStore]:
    """The installation and OAuth state stores in pagetrail's database, for Bolt."""
    stores = slack_oauth_stores(store, (settings.slack_client_id or "").strip())
    return (ThreadedInstallationStore(stores.installations, store),
            ThreadedStateStore(stores.states, store))


def workspaces_for(settings: Settings, store: Store, *,
                   installations: AsyncInstallationStore | None = None,
                   ) -> tuple[Workspaces, SlackPoster]:
    """The workspaces served and a poster that posts each channel's messages with its
    workspace's token. ConfigError when neither a bot token nor the install flow is set."""
    if oauth_configured(settings):
        if installations is None:
            installations, _states = oauth_stores(settings, store)
        workspaces = InstalledWorkspaces(installations, store, settings.slack_api_url)
        return workspaces, SlackPoster(web_client(None, settings.slack_api_url),
                                       route=workspaces.client_for)
    token = secret(settings.slack_bot_token)
    if not token:
        raise ConfigError("SLACK_BOT_TOKEN is not set (or SLACK_CLIENT_ID and "
                          "SLACK_CLIENT_SECRET, to serve every workspace that installs the app)")
    client = web_client(token, settings.slack_api_url)
    return SingleWorkspace(client, store), SlackPoster(client)
