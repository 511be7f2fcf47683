"""Shared plumbing of the command line: JSON output, errors as one line, async runner."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from pagetrail import InvalidArgument, InvalidDate
from pagetrail import parse_date as parse_any_date

T = TypeVar("T")

Handler = Callable[[argparse.Namespace], int]


class UsageError(InvalidArgument):
    """A command line that cannot run (the engine's InvalidArgument, as the CLI says it)."""

    code = "usage"


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def print_json(value: Any) -> None:
    json.dump(to_jsonable(value), sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def run_async(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def parse_date(text: str | None, *, option: str = "date") -> datetime | None:
    """A date from the command line (pagetrail.parse_date, as Slack's); naive means UTC."""
    if not text:
        return None
    try:
        return parse_any_date(text)
    except InvalidDate as exc:
        raise UsageError(f"{option}: {exc}") from exc


def date_option(option: str) -> Callable[[str], datetime]:
    """An argparse `type=` for a date option: parse_date's refusal is argparse's usage
    error (exit 2, naming the option)."""

    def parse(text: str) -> datetime:
        try:
            return parse_any_date(text)
        except InvalidDate as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    parse.__name__ = option  # argparse names the converter in its message
    return parse


def user_url(text: str, settings: Any | None = None) -> str:
    """A URL from the command line through the same gate as MCP and Slack: InvalidURL, or
    RefusedAddress for a private/loopback/metadata target (main: one line, exit 2)."""
    from pagetrail import get_settings
    from pagetrail.lab import ensure_fetchable

    return run_async(ensure_fetchable(text, settings or get_settings()))


# sysexits.h's EX_SOFTWARE: an uncaught exception, told apart from every finding's status
INTERNAL_ERROR_EXIT = 70


def fail(message: str, code: int = 2) -> int:
    print(f"pagetrail: {message}", file=sys.stderr)
    return code
