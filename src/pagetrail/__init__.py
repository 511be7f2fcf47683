"""pagetrail — find where a dead web link went.

`import pagetrail` is the Python API: the engine's functions (check, recover_link, archives,
signature, tags, search, rank, related pages, watches, site scans, digests and their delivery,
fixing links in files and text, the store), its result models, its errors and its settings.
What only the command line uses — its summaries and report writers, the scanner and digest
builders it drives, batch files and the job dispatcher, `doctor`, `config show`, the
classifier and alias tools, evaluation and the testbed — is `pagetrail.lab`'s. Only the names
in `__all__` are public; the modules behind them (`pagetrail.tools`, `pagetrail.store`) may
move. The faces (`pagetrail.cli`, `pagetrail.server`, `pagetrail.bot`) import only this
module and `pagetrail.lab`, and import-linter keeps them so (pyproject `[tool.importlinter]`).

Names load lazily (PEP 562): `import pagetrail` is cheap, and `pagetrail.recover_link`
imports only the modules it needs, so a command's start-up pays for what it runs. Each name
is listed once, in `_EXPORTS`; type checkers read `__init__.pyi`, generated from it by
`scripts/gen_exports.py`.
This top-level package lives in `src/pagetrail/` rather than `pagetrail/` so that a
checkout's root on `sys.path` (`python -m pytest`) never shadows the installed mapping.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from pagetrail._lazy import lazy_getattr

try:
    __version__ = version("pagetrail")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"


# Public name → "module" (same attribute name) or "module:attribute".
_EXPORTS: dict[str, str] = {
    # The facade: one async function per primitive, typed in, pydantic out
    "recover_link": "pagetrail.tools.api",
    "recent_recoveries": "pagetrail.tools.api",
    "check_link": "pagetrail.tools.api",
    "fetch_memento": "pagetrail.tools.api",
    "list_captures": "pagetrail.tools.api",
    "archived_redirects": "pagetrail.tools.api",
    "extract_signature": "pagetrail.tools.api",
    "get_tags": "pagetrail.tools.api",
    "search_engines": "pagetrail.tools.api",
    "search_web": "pagetrail.tools.api",
    "rank_candidates": "pagetrail.tools.api",
    "record_pick": "pagetrail.tools.api",
    "add_watch": "pagetrail.tools.api",
    "remove_watch": "pagetrail.tools.api",
    "list_watches": "pagetrail.tools.api",
    "scan_page": "pagetrail.tools.api",
    "recommend_archived": "pagetrail.tools.api",
    "start_site_scan": "pagetrail.tools.api",
    "site_scan_status": "pagetrail.tools.api",
    "archive_links": "pagetrail.tools.api",
    "refuse_local_url": "pagetrail.tools.api",
    "slim_recovery": "pagetrail.tools.api",
    "migrate_store": "pagetrail.tools.api",
    "store_revisions": "pagetrail.tools.api",
    "run_worker": "pagetrail.tools.api",
    "MAX_ARCHIVE_URLS": "pagetrail.tools.api",
    "MAX_RELATED": "pagetrail.tools.api",
    # Result models
    "TagsResult": "pagetrail.tools.models",
    "SearchResult": "pagetrail.tools.models",
    "UnreachableCandidate": "pagetrail.tools.models",
    "RankResult": "pagetrail.tools.models",
    "RelatedArchived": "pagetrail.tools.models",
    "RelatedResult": "pagetrail.tools.models",
    "RememberedRecovery": "pagetrail.tools.models",
    "PickResult": "pagetrail.tools.models",
    "WatchList": "pagetrail.tools.models",
    "WatchChange": "pagetrail.tools.models",
    "SiteScanJob": "pagetrail.tools.models",
    "ArchiveResult": "pagetrail.tools.models",
    "CaptureResult": "pagetrail.tools.models",
    "ArchivedRedirect": "pagetrail.tools.models",
    "Candidate": "pagetrail.tools.models",
    "CheckResult": "pagetrail.tools.models",
    "Document": "pagetrail.tools.models",
    "Drift": "pagetrail.tools.models",
    "EngineFailure": "pagetrail.tools.models",
    "Hit": "pagetrail.tools.models",
    "Hop": "pagetrail.tools.models",
    "Link": "pagetrail.tools.models",
    "Memento": "pagetrail.tools.models",
    "Query": "pagetrail.tools.models",
    "Recovery": "pagetrail.tools.models",
    "Scores": "pagetrail.tools.models",
    "Signature": "pagetrail.tools.models",
    "Tag": "pagetrail.tools.models",
    "Term": "pagetrail.tools.models",
    "PageScan": "pagetrail.tools.scan.page",
    "LinkStatus": "pagetrail.tools.scan.page",
    # Errors
    "PagetrailError": "pagetrail.tools.errors",
    "InvalidArgument": "pagetrail.tools.errors",
    "InvalidURL": "pagetrail.tools.errors",
    "InvalidDate": "pagetrail.tools.errors",
    "RefusedAddress": "pagetrail.tools.errors",
    "FetchFailed": "pagetrail.tools.errors",
    "UnsupportedContent": "pagetrail.tools.errors",
    "NoMemento": "pagetrail.tools.errors",
    "ConfigError": "pagetrail.tools.errors",
    "StoreUnavailable": "pagetrail.tools.errors",
    "BrokerUnavailable": "pagetrail.tools.errors",
    "JobsStalled": "pagetrail.tools.errors",
    "JobFailed": "pagetrail.tools.errors",
    "BadJobInput": "pagetrail.tools.errors",
    "WorldError": "pagetrail.tools.errors",
    "ModelMissing": "pagetrail.tools.errors",
    "MissingExtra": "pagetrail.tools.extras",
    "RateLimited": "pagetrail.tools.errors",
    "EngineUnavailable": "pagetrail.tools.errors",
    "ArchiveExcluded": "pagetrail.tools.errors",
    "ArchiveUnavailable": "pagetrail.tools.errors",
    "NetworkDown": "pagetrail.tools.net.netcheck",
    # Settings
    "Settings": "pagetrail.tools.settings",
    "get_settings": "pagetrail.tools.settings",
    # Input: dates, URLs, the address guard's origin of a URL
    "parse_date": "pagetrail.tools.content.dates",
    "validate_url": "pagetrail.tools.net.urls",
    "origin_of": "pagetrail.tools.net.netguard",
    # The recovery's progress callback and its answer as a Robust Link
    "RecoveryProgressFn": "pagetrail.tools.recovery.context:ProgressFn",
    "robust_link": "pagetrail.tools.recovery.output",
    # Digests of watched sites and their delivery (a face supplies the poster)
    "ChannelDigest": "pagetrail.tools.scan.digest",
    "DigestLink": "pagetrail.tools.scan.digest",
    "digest_captures_text": "pagetrail.tools.scan.digest:captures_text",
    "stored_trend": "pagetrail.tools.scan.trend",
    "period_of": "pagetrail.tools.scan.digest",
    "configured_digest_runner": "pagetrail.tools.workers.dispatch",
    "DigestPoster": "pagetrail.tools.scan.digest_delivery",
    "PostOutcome": "pagetrail.tools.scan.digest_delivery",
    "deliver_due_digests": "pagetrail.tools.scan.digest_delivery:post_due_digests",
    # The store
    "Store": "pagetrail.store.db",
    "open_store": "pagetrail.tools.settings:configured_store",
    # Slack workspaces: installations (slack_sdk's stores) and each channel's workspace
    "SlackOAuthStores": "pagetrail.store.slack",
    "slack_oauth_stores": "pagetrail.store.slack",
    "remember_slack_channel": "pagetrail.store.slack:remember_channel",
    "slack_channel_teams": "pagetrail.store.slack:channel_teams",
    "purge_expired_slack_states": "pagetrail.store.slack:purge_expired_states",
    # Fix links where they live (documents, the text an assistant writes)
    "fix_paths": "pagetrail.tools.fix.run",
    "FixOptions": "pagetrail.tools.fix.run:Options",
    "FixReport": "pagetrail.tools.fix.run",
    "LinkVerdict": "pagetrail.tools.fix.run",
    "render_fix_report": "pagetrail.tools.fix.report:render",
    "check_links_in_text": "pagetrail.tools.fix.text",
    "TextCheck": "pagetrail.tools.fix.text",
    "TextLink": "pagetrail.tools.fix.text",
}

__all__ = ["__version__", *_EXPORTS]  # each public name is listed once, in _EXPORTS


# Import the module behind a public name on first use (and cache the name here).
__getattr__ = lazy_getattr("pagetrail", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
