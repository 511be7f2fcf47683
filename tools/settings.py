"""One settings object for the whole product.

Sources, strongest first: keyword arguments, environment variables ``PAGETRAIL_*``, a TOML
file (``PAGETRAIL_CONFIG`` or ``config.toml`` in the user's config directory), defaults.
Defaults point at the real services (Internet Archive, Hacker News search); the testbed
points pagetrail elsewhere through these same settings, never through code branches.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import platformdirs
from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from pagetrail.store.urls import mask_url

if TYPE_CHECKING:
    from pagetrail.store.db import Store

APP_NAME = "pagetrail"

CommaList = Annotated[list[str], NoDecode]
# The bot scopes an OAuth install asks for (bot/manifest.yaml lists the same, with why).
SLACK_BOT_SCOPES = ("commands", "chat:write", "chat:write.public", "files:write", "im:write")


def data_dir() -> Path:
    return Path(os.environ.get("PAGETRAIL_DATA_DIR") or platformdirs.user_data_dir(APP_NAME))


def config_file() -> Path:
    """The config file pagetrail reads (PAGETRAIL_CONFIG or the user's config dir)."""
    explicit = os.environ.get("PAGETRAIL_CONFIG")
    if explicit:
        return Path(explicit)
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_database_url() -> str:
    return f"sqlite:///{data_dir() / 'pagetrail.db'}"


class Settings(BaseSettings):
    """pagetrail's settings: environment (PAGETRAIL_*), then the config file."""

    model_config = SettingsConfigDict(
        env_prefix="PAGETRAIL_", extra="ignore", validate_default=True
    )

    # --- store -------------------------------------------------------------------------
    database_url: str = Field(default_factory=default_database_url)

    # --- fetching ------------------------------------------------------------------------
    user_agent: str = (
        "pagetrail/0.1 (+https://github.com/pagetrail/pagetrail; dead-link recovery bot)"
    )
    proxy: str | None = None
    ca_bundle: str | None = None
    # Hosts reached directly, never through the proxy (archives/search on this machine).
    no_proxy: CommaList = Field(default_factory=list)
    # SSRF allow-list: hosts (or host:port) that may resolve to private/loopback addresses.
    allow_hosts: CommaList = Field(default_factory=list)
    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    total_timeout: float = 20.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 10
    per_host_rps: float = 1.0
    per_host_concurrency: int = 2
    concurrency: int = 16
    retries: int = 2

    # --- archives (RFC 7089) -------------------------------------------------------------
    # Each entry is a Memento endpoint prefix: TimeGate = prefix + "/" + url,
    # TimeMap = the archive's timemap prefix; pywb-style collections and the Internet Archive.
    archives: CommaList = Field(default_factory=lambda: ["https://web.archive.org/web"])
    # Asked once per run when a request fails locally (DNS, no route), to tell pagetrail's own
    # network from the link's host (tools/net/netcheck.py); default: the first archive's origin.
    network_probe_url: str | None = None

    # --- Save Page Now 2 (Internet Archive captures; tools/archive/spn.py) ---------------------------
    spn_url: str = "https://web.archive.org/save"
    # IA's S3-style keys (https://archive.org/account/s3.php); without them no capture is
    # requested (said once per process).
    ia_access_key: SecretStr | None = None
    ia_secret_key: SecretStr | None = None
    spn_concurrency: int = Field(default=4, ge=1)  # captures in progress at once per account
    spn_daily_cap: int = Field(default=4000, ge=0)  # capture requests per UTC day (store-wide)
    spn_recent_days: float = 30.0  # a capture this recent counts: no new one is asked for
    spn_poll_interval: float = 5.0  # seconds between status polls of one job
    spn_job_seconds: float = 180.0  # budget of one capture (request, 429 waits, polls)
    spn_on_scan: bool = True  # a scan asks for captures of the outbound links it first sees
    spn_scan_max: int = Field(default=100, ge=0)  # at most this many capture requests a scan
    # Working outbound links compared with their archived copy per watched target and digest
    # (each costs an archive look-up, a capture and a live fetch); 0 turns it off.
    drift_per_digest: int = Field(default=50, ge=0)

    # --- search engines ------------------------------------------------------------------
    search_engines: CommaList = Field(
        default_factory=lambda: ["site", "cdx", "local", "ddgs"]
    )
    # An engine's own settings live with it (e.g. brave.BraveSettings reads
    # PAGETRAIL_BRAVE_API_KEY); SearXNG's URL stays here: the SSRF guard knows every endpoint.
    searxng_url: str | None = None
    search_cache_ttl: int = 7 * 24 * 3600
    search_rps: float = 1.0  # third-party search APIs (Brave, Google, DuckDuckGo)
    searxng_rps: float = 10.0  # a self-hosted SearXNG

    # --- social tags ---------------------------------------------------------------------
    hn_api_url: str = "https://hn.algolia.com/api/v1"

    # --- recovery budget ---------------------------------------------------------------
    max_queries: int = 24
    max_candidates: int = 40
    # Anchor-expansion queries per term source (context, URL, archived copy, linking page);
    # Martinez-Romo & Araujo used ~10 terms. Measured on the dev world (docs/evaluation.md):
    # 2 a source find as much as 5 or 10 at a fraction of the queries.
    expansion_per_source: int = Field(default=2, ge=0, le=10)
    recovery_seconds: float = 30.0

    # --- content drift (tools/linkcheck/drift.py) ----------------------------------------------------
    # A working link has drifted when drift.content_similarity of its main text to the
    # archived copy's is below this. Chosen on dev2's 22 archived alive links: drifted ones
    # 0.00–0.46, stable ones 0.96–1.00 (docs/evaluation.md, "Drift"); 0.6 leaves edited
    # but still-the-same pages room below the stable ones.
    drift_threshold: float = Field(default=0.6, ge=0.0, le=1.0)

    # --- scanner -------------------------------------------------------------------------
    confirm_failures: int = 3
    confirm_days: float = 3.0
    # Work bounds: links taken from one page (the rest reported as skipped), links checked
    # in one scan (pages included), bytes parsed per page (the body cap is max_bytes).
    scan_max_links_per_page: int = Field(default=1000, ge=1)
    scan_max_links: int = Field(default=50_000, ge=1)

    # --- distributed mode (Celery over Redis, PostgreSQL) ---------------------------------
    # Set: jobs go to Celery workers through this Redis, and politeness limits live in it.
    broker_url: str | None = None
    # Politeness limits in Redis without a broker (several processes, no workers).
    redis_url: str | None = None
    # Seconds before Redis hands an unacknowledged job to another worker: longer than the
    # longest job (a recovery is bounded by its time limit below).
    broker_visibility_timeout: int = 7200
    check_time_limit: int = 300  # seconds for one chunk of checks (hard limit: +30 s)
    recover_time_limit: int = 300  # seconds for one recovery
    scan_time_limit: int = 3600  # seconds for one scan or one channel's digest
    check_chunk: int = 50  # URLs per check job message (one event loop checks them together)
    # A host's concurrency slot is a lease that expires: a killed worker frees it after this.
    lease_seconds: float = 60.0
    db_pool_size: int = 5  # PostgreSQL connections per process (a worker process)
    db_max_overflow: int = 5
    # Seconds a store call waits for the database when it is away (stopped, restarting,
    # locked): retried with backoff, then StoreUnavailable (store.faults).
    store_fault_budget: float = Field(default=120.0, ge=0)
    # The same wait for the faces that answer a person or an assistant while they wait (the MCP
    # server, the Slack app): an outage past it is one line now, not a silent two minutes.
    interactive_store_fault_budget: float = Field(default=10.0, ge=0)

    # --- faces ---------------------------------------------------------------------------
    mcp_token: SecretStr | None = None
    mcp_max_concurrent: int = 8
    # Which tools the MCP server serves (server/selection.py): only read-only ones, only
    # these (empty: all), none of these. `pagetrail serve mcp` flags override them.
    mcp_read_only: bool = False
    mcp_tools: CommaList = Field(default_factory=list)
    mcp_exclude_tools: CommaList = Field(default_factory=list)
    slack_api_url: str = "https://slack.com/api/"
    slack_bot_token: SecretStr | None = Field(default=None, validation_alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr | None = Field(
        default=None, validation_alias="SLACK_SIGNING_SECRET"
    )
    slack_app_token: SecretStr | None = Field(default=None, validation_alias="SLACK_APP_TOKEN")
    # Many workspaces (Slack's OAuth install flow, bot/app.py): with a client id and secret the
    # app serves every workspace that installs it (installations kept in the store); without
    # them, the one workspace of SLACK_BOT_TOKEN. The token exchange (oauth.v2.access) goes to
    # slack_api_url like every Web API call; the person installing is sent to
    # slack_authorize_url.
    slack_client_id: str | None = Field(default=None, validation_alias="SLACK_CLIENT_ID")
    slack_client_secret: SecretStr | None = Field(
        default=None, validation_alias="SLACK_CLIENT_SECRET"
    )
    slack_scopes: CommaList = Field(default_factory=lambda: list(SLACK_BOT_SCOPES))
    slack_redirect_uri: str | None = None
    slack_authorize_url: str = "https://slack.com/oauth/v2/authorize"

    @field_validator("no_proxy", "allow_hosts", "archives", "search_engines",
                     "slack_scopes", "mcp_tools", "mcp_exclude_tools", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                import json

                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @field_validator("database_url", mode="after")
    @classmethod
    def _database_url(cls, value: str) -> str:
        """A URL the store can open, else ConfigError (one line, no password, exit 2 in
        every command: raised as it is, not as pydantic's ValidationError)."""
        from pagetrail.store.db import parse_database_url

        parse_database_url(value, check_driver=False)  # the driver: when the store opens
        return value

    @field_validator("broker_url", "redis_url", mode="after")
    @classmethod
    def _redis_urls(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or not value.strip():
            return None
        check_redis_url(value, f"PAGETRAIL_{str(info.field_name).upper()}")
        return value.strip()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = config_file()
        if path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    def masked(self) -> dict[str, Any]:
        """Effective settings as plain data, secrets masked (for `config show` and logs).

        SecretStr fields show as ``********``; every URL-valued setting has its userinfo
        password and query-string values masked (``***`` when it cannot be parsed at all),
        and so has every URL inside any other value, lists included (`mask_urls_in`)."""
        shown: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else ""
            elif isinstance(value, str) and name in URL_SETTINGS:
                value = mask_url(value)
            elif isinstance(value, str):
                value = mask_urls_in(value)  # a user agent naming its homepage stays legible
            elif isinstance(value, list):
                value = [(mask_url(v) if name in URL_SETTINGS else mask_urls_in(v))
                         if isinstance(v, str) else v for v in value]
            shown[name] = value
        return shown


# Settings whose values are URLs (or lists of URLs): always shown through mask_url.
URL_SETTINGS = frozenset({"database_url", "broker_url", "redis_url", "proxy", "archives",
                          "searxng_url", "hn_api_url", "slack_api_url", "spn_url",
                          "slack_redirect_uri", "slack_authorize_url",
                          "network_probe_url"})


# scheme://… up to whitespace or a delimiter that ends a URL quoted in a message.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>()\[\]{}]+")


def mask_urls_in(text: str) -> str:
    """`text` with each URL in it through `mask_url` (pure): log lines, messages, settings
    that are not URLs but may name one."""
    return _URL_IN_TEXT.sub(lambda m: mask_url(m.group(0)), text)


def check_redis_url(url: str, setting: str) -> None:
    """ConfigError (one line, the URL masked) unless `url` is a Redis URL redis-py reads
    (redis://, rediss:// with a host and a port 1-65535, unix://)."""
    from redis.connection import parse_url

    from pagetrail.store.errors import ConfigError

    try:
        parts = parse_url(url.strip())
    except ValueError:
        raise ConfigError(f"{setting} must be a Redis URL such as redis://127.0.0.1:6379/0, "
                          f"not {mask_url(url)}") from None
    if "path" not in parts and not parts.get("host"):
        raise ConfigError(f"{setting} names no host (try redis://127.0.0.1:6379/0): "
                          f"{mask_url(url)}")
    if parts.get("port") == 0:
        raise ConfigError(f"{setting} has port 0, not 1-65535: {mask_url(url)}")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings (read once, cached)."""
    return Settings()


def configured_store(url: str | None = None, *, interactive: bool = False) -> Store:
    """The store at `url` (default: the settings' database) with the settings' connection
    pool, opened once per process. The store reads no settings: this is where it gets them.

    `interactive`: the process answers people or assistants as they wait (MCP, Slack), so a
    database outage is waited out for `interactive_store_fault_budget`, not the batch budget."""
    from pagetrail.store.db import PoolSize, open_store

    settings = get_settings()
    budget = (settings.interactive_store_fault_budget if interactive
              else settings.store_fault_budget)
    return open_store(url or settings.database_url,
                      PoolSize(settings.db_pool_size, settings.db_max_overflow),
                      fault_budget=budget)
