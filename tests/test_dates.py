"""One date parser (tools.content.dates) behind every face: Slack's /fixlink and the CLI options
accept the same dates, and refuse the same ones with a message saying what they accept."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pagetrail.bot.commands import CommandUsageError
from pagetrail.bot.commands import parse_date as slack_date
from pagetrail.cli.common import UsageError, date_option
from pagetrail.cli.common import parse_date as cli_date
from pagetrail.tools.content.dates import parse_date
from pagetrail.tools.errors import InvalidDate

ACCEPTED = {
    "2019": datetime(2019, 1, 1, tzinfo=UTC),
    "2019-06": datetime(2019, 6, 1, tzinfo=UTC),
    "2019-6": datetime(2019, 6, 1, tzinfo=UTC),
    "2019-6-2": datetime(2019, 6, 2, tzinfo=UTC),
    "2019-06-02": datetime(2019, 6, 2, tzinfo=UTC),
    "20190602": datetime(2019, 6, 2, tzinfo=UTC),
    "20190602123456": datetime(2019, 6, 2, 12, 34, 56, tzinfo=UTC),
    "2019-06-02T12:34:56Z": datetime(2019, 6, 2, 12, 34, 56, tzinfo=UTC),
    " 2019-06-02T12:34 ": datetime(2019, 6, 2, 12, 34, tzinfo=UTC),
    "2019-06-02T12:00:00+02:00": datetime(2019, 6, 2, 12, tzinfo=timezone(timedelta(hours=2))),
}
REFUSED = ["yesterday", "2019-13-01", "2019-02-30", "201", "06/02/2019", "20191350", ""]


@pytest.mark.parametrize("text", ACCEPTED)
def test_every_face_reads_the_same_dates(text: str) -> None:
    expected = ACCEPTED[text]
    got = [parse_date(text), slack_date(text), cli_date(text), date_option("--at")(text)]
    assert all(moment == expected and moment.tzinfo is not None for moment in got)


@pytest.mark.parametrize("text", REFUSED)
def test_every_face_refuses_the_same_dates(text: str) -> None:
    with pytest.raises(InvalidDate, match="YYYY-MM-DD"):
        parse_date(text)
    with pytest.raises(CommandUsageError, match="YYYY-MM-DD"):
        slack_date(text)
    with pytest.raises(argparse.ArgumentTypeError, match="YYYY-MM-DD"):
        date_option("--at")(text)
    if text:  # the CLI's optional options read "" as "not given"
        with pytest.raises(UsageError, match="--date"):
            cli_date(text, option="--date")


@pytest.mark.parametrize("argv", [
    ["check", "https://example.org/", "--since", "yesterday"],
    ["memento", "https://example.org/", "--at", "yesterday"],
])
def test_a_bad_date_option_is_a_usage_error_not_a_traceback(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from pagetrail.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {argv[2]}" in err and "YYYY-MM-DD" in err
