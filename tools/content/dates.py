"""Dates as people and archives write them: the one parser every face uses (pure).

`parse_date` accepts what the Slack command, the CLI options and testbed cases give: an
archive timestamp of 4 to 14 digits (2019, 20190601, 20190601120000), YYYY-MM and YYYY-MM-DD
(one-digit month and day too), and ISO 8601 dates and date-times (a trailing Z allowed).
A moment without a zone is UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pagetrail.tools.errors import InvalidDate

_TIMESTAMP = re.compile(r"^\d{4,14}$")
_YEAR_MONTH_DAY = re.compile(r"^(\d{4})-(\d{1,2})(?:-(\d{1,2}))?$")  # 2019-6, 2019-6-2


def as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_timestamp(text: str) -> datetime | None:
    """14-digit archive timestamp (shorter ones padded: 2019 → 20190101000000)."""
    if not _TIMESTAMP.match(text or ""):
        return None
    padded = text + "0101000000"[len(text) - 4:] if len(text) < 14 else text
    try:
        return datetime.strptime(padded[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def parse_date(text: str) -> datetime:
    """A date from a person or a case file; InvalidDate (saying what is accepted) if not."""
    cleaned = (text or "").strip()
    moment: datetime | None
    if cleaned.isascii() and cleaned.isdigit():
        moment = parse_timestamp(cleaned)
    elif match := _YEAR_MONTH_DAY.match(cleaned):
        year, month, day = (int(part or 1) for part in match.groups())
        try:
            moment = datetime(year, month, day, tzinfo=UTC)
        except ValueError:
            moment = None
    else:
        try:
            moment = datetime.fromisoformat(cleaned.replace("Z", "+00:00"))
        except ValueError:
            moment = None
    if moment is None:
        raise InvalidDate(f"not a date: {cleaned[:40]!r} (use YYYY-MM-DD, YYYY-MM, YYYY, "
                          "an ISO date-time or a 14-digit archive timestamp)")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
