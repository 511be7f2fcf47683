"""How a URL is shown: the one masking of every URL pagetrail prints (database and broker URLs
above all). It lives in the store because it reads URLs with SQLAlchemy's own parser — the one
that reads the database URL to connect — and SQLAlchemy is the store's alone
(tests/test_store_boundary.py); `pagetrail.tools.settings` re-exports it."""

from __future__ import annotations

from urllib.parse import quote, quote_plus

MASK = "***"

# Characters a path is shown with as they are (the rest percent-encoded): a masked URL stays
# readable (`sqlite:///:memory:`, an archive's `/web/2020*/https://…`).
_PATH_SAFE = "/:@!$&'()*+,;=-._~ %"


def mask_url(url: str) -> str:
    """The URL fit to print — the one masking of every URL pagetrail shows (database,
    broker, proxy, archive and engine endpoints; `config show`, `doctor`, `db upgrade`,
    errors, and every log line through tools.net.logsafe).

    Parsed by SQLAlchemy's own URL parser (`make_url`), the one that reads the database URL
    to connect: what it takes for the password is what is hidden (a password may hold `/`,
    `?`, `#`, `:`, `@` percent-encoded, or `/` and `?` as they are, which a generic URL
    split reads as the path), rendered by `render_as_string(hide_password=True)`. A lone
    user name (often a token) and every query-string value and fragment are masked too, and
    the whole URL is ``***`` when it cannot be parsed (a malformed URL may hold a password
    anywhere)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    text = url.strip()
    try:
        parsed = make_url(text)
        parsed.port  # noqa: B018 -- an int already; a bad port raised above
    except (ArgumentError, ValueError, TypeError):
        return MASK
    database = parsed.database
    pairs = [(key, value) for key in parsed.query
             for value in ([parsed.query[key]] if isinstance(parsed.query[key], str)
                           else parsed.query[key])]
    fragment = any("#" in value for _, value in pairs)
    if database is not None and "#" in database:
        database, fragment = database.partition("#")[0], True
    lone_user = parsed.username is not None and parsed.password is None
    authority = parsed.set(query={})._replace(database=None)  # set() keeps what is None
    if lone_user:
        authority = authority.set(username="", password="")
    shown = authority.render_as_string(hide_password=True)
    if lone_user:
        shown = shown.replace("://:***@", "://***@", 1)
    if database is not None:
        shown += "/" + quote(database, safe=_PATH_SAFE)
    if pairs:
        shown += "?" + "&".join(f"{quote_plus(key)}={MASK}" for key, _ in pairs)
    if fragment:
        shown += f"#{MASK}"
    return shown
