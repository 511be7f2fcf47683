"""When each line of a file was written: `git blame --porcelain` in a git work tree (the author
date of the commit that introduced the line), else the file's modification time, else now."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)
_UNCOMMITTED = "0" * 40
BLAME_TIMEOUT = 60.0


@dataclass(frozen=True)
class LineDates:
    """A file's line dates: `by_line[n]` for 1-based line n, else `fallback`."""

    by_line: dict[int, datetime]
    fallback: datetime
    source: str  # "git", "mtime" or "now"
    unknown: frozenset[int] = frozenset()  # lines whose commit has a date out of range

    def at(self, line: int) -> tuple[datetime, str]:
        found = self.by_line.get(line)
        return (found, "git") if found is not None else (
            self.fallback, "mtime" if self.source != "now" else "now")


def author_time(value: str) -> datetime | None:
    """A porcelain `author-time` (seconds since the epoch) as a date, or None when it is not
    one a date can hold: git accepts `@99999999999999`, a commit anyone can push."""
    try:
        return datetime.fromtimestamp(int(value), UTC)
    except (ValueError, OverflowError, OSError):
        return None


def parse_porcelain(output: str, unknown: set[int] | None = None) -> dict[int, datetime]:
    """1-based final line → author date, from `git blame --porcelain` output (uncommitted
    lines are left out: they have no author date yet; so are lines whose commit carries a
    date out of range, whose numbers go to `unknown` when given)."""
    dates: dict[str, datetime | None] = {}
    result: dict[int, datetime] = {}
    current: tuple[str, int] | None = None
    pending: list[int] = []
    for line in output.splitlines():
        if line.startswith("\t"):
            continue
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and all(c in "0123456789abcdef" for c in head[0]) \
                and head[2].isdigit():
            current = (head[0], int(head[2]))
            if head[0] in dates:
                _put(result, unknown, current[1], dates[head[0]])
            elif head[0] != _UNCOMMITTED:
                pending.append(current[1])
            continue
        if head[0] == "author-time" and len(head) > 1 and current is not None \
                and current[0] != _UNCOMMITTED:
            dates[current[0]] = author_time(head[1])
            for number in pending:
                _put(result, unknown, number, dates[current[0]])
            pending = []
    return result


def _put(result: dict[int, datetime], unknown: set[int] | None, line: int,
         when: datetime | None) -> None:
    if when is not None:
        result[line] = when
    elif unknown is not None:
        unknown.add(line)


def blame_dates(path: Path, unknown: set[int] | None = None) -> dict[int, datetime]:
    """Line dates from git, or {} when the file is not in a git work tree or not committed
    (lines whose commit date is out of range go to `unknown`)."""
    git = shutil.which("git")
    if git is None:
        return {}
    try:
        done = subprocess.run(
            [git, "-C", str(path.parent), "blame", "--porcelain", "--", path.name],
            capture_output=True, text=True, encoding="utf-8", errors="replace",
            timeout=BLAME_TIMEOUT, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("git blame failed for %s: %s", path, exc)
        return {}
    if done.returncode != 0:
        return {}  # not a repository, or an untracked file: the mtime speaks instead
    return parse_porcelain(done.stdout, unknown)


def line_dates(path: Path | None, *, now: datetime | None = None) -> LineDates:
    now = now or datetime.now(UTC)
    if path is None:
        return LineDates({}, now, "now")
    unknown: set[int] = set()
    by_line = blame_dates(path, unknown)
    try:
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except (OSError, ValueError, OverflowError):
        return LineDates(by_line, now, "now", frozenset(unknown))
    return LineDates(by_line, mtime, "mtime", frozenset(unknown))
