"""`pagetrail` — the command line. Each subcommand lives in its own module with `register()`."""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import re
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import pagetrail
import pagetrail.lab
from pagetrail import PagetrailError
from pagetrail.cli.common import INTERNAL_ERROR_EXIT, fail

# Each subcommand and the module that adds it (with `register()`), in help order; a module
# missing from an install is skipped, not fatal. Running one command imports only its module:
# importing them all costs about a second (trafilatura, wordfreq, rich, the recovery
# pipeline, …), which a `pagetrail scan` of a small site would mostly spend starting up.
COMMANDS: dict[str, str] = {
    "config": "pagetrail.cli.config_cmd",
    "db": "pagetrail.cli.db_cmd",
    "check": "pagetrail.cli.check_cmd",
    "memento": "pagetrail.cli.memento_cmd",
    "signature": "pagetrail.cli.signature_cmd",
    "tags": "pagetrail.cli.signature_cmd",
    "search": "pagetrail.cli.search_cmd",
    "recover": "pagetrail.cli.recover_cmd",
    "pick": "pagetrail.cli.recover_cmd",
    "demo": "pagetrail.cli.demo_cmd",
    "scan": "pagetrail.cli.scan_cmd",
    "fix": "pagetrail.cli.fix_cmd",
    "archive": "pagetrail.cli.archive_cmd",
    "testbed": "pagetrail.cli.testbed_cmd",
    "eval": "pagetrail.cli.eval_cmd",
    "serve": "pagetrail.cli.serve_cmd",
    "digest": "pagetrail.cli.digest_cmd",
    "watch": "pagetrail.cli.watch_cmd",
    "classify": "pagetrail.cli.classify_cmd",
    "related": "pagetrail.cli.classify_cmd",
    "aliases": "pagetrail.cli.aliases_cmd",
    "eval-aliases": "pagetrail.cli.aliases_cmd",
    "worker": "pagetrail.cli.worker_cmd",
    "doctor": "pagetrail.cli.doctor_cmd",
}
COMMAND_MODULES = list(dict.fromkeys(COMMANDS.values()))
# What may stand before the command without changing which parser is needed (-v, -vv, …).
_PLAIN_GLOBAL_OPTION = re.compile(r"-v+|--verbose")


def requested_command(argv: list[str]) -> str | None:
    """The known command `argv` runs, or None when the whole parser is needed: no command,
    an unknown one, or an option before it that may ask for the full help (`-h`)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
        if not _PLAIN_GLOBAL_OPTION.fullmatch(arg):
            return None
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command-line parser: with `command`, only that command's module is registered
    (its arguments and help are the same either way); without, every command."""
    parser = argparse.ArgumentParser(
        prog="pagetrail",
        description="Find where a dead web link went.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    parser.add_argument("--version", action="version",
                        version=f"pagetrail {pagetrail.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            if command is None and pagetrail.lab.missing_extra(exc) is not None:
                continue  # the full help lists what this install can run
            raise
        module.register(sub)
    return parser


def skip_httpx_command_line() -> None:
    """Keep `import httpx` from importing httpx's own command-line client.

    httpx's __init__ imports `httpx._main` (its `httpx` console script) whenever rich, click
    and pygments are installed — they are (rich for our progress bars) — which costs ~0.1 s
    of every command's start-up for a client pagetrail never runs. A None entry in
    sys.modules makes that import fail, and httpx then defines a stub `main` instead (its
    documented behaviour without the CLI extras). Only before httpx is first imported."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


@contextmanager
def collector_paused_for_imports() -> Iterator[None]:
    """Import the command without the cyclic collector, then exempt what the imports made.

    Imports create a few hundred thousand objects (modules, classes, functions) that never
    become garbage. Collecting while they are made finds next to nothing (two full
    collections, ~0.2 s); afterwards, unfrozen, each full collection during a long command
    walks them all again (~0.1 s each; a 20,000-link scan ran five).

    Frozen objects are never collected as cycles, so only the first command of a process
    freezes (a test session runs main() many times, with garbage of earlier tests about)."""
    global _imports_frozen
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not _imports_frozen:
            gc.freeze()
            _imports_frozen = True
        if enabled:
            gc.enable()


_imports_frozen = False


def redis_fault(exc: BaseException) -> str | None:
    """Why Redis (the shared limits, the task queue's broker) failed a command, or None when
    `exc` is something else. Redis is only looked at when it was loaded: it raised then."""
    exceptions = sys.modules.get("redis.exceptions")
    if exceptions is None or not isinstance(
            exc, (exceptions.ConnectionError, exceptions.TimeoutError)):
        return None
    return f"Redis (shared limits, task queue) did not answer after its retries: {exc}"


def missing_extra(exc: ModuleNotFoundError, command: str | None) -> int:
    """One line naming the extra that brings the missing package (exit 2), or re-raise:
    a module missing from an extra is an install choice; any other is a bug."""
    named = pagetrail.lab.missing_extra(exc, f"`pagetrail {command}`" if command else "")
    if named is None:
        raise exc
    return fail(f"{named.code}: {named}")


def _command_words(args: argparse.Namespace) -> str | None:
    """`serve slack`, `worker`: the command (and its subcommand) that ran, for messages."""
    words = [args.command] if getattr(args, "command", None) else []
    words += [value for key, value in vars(args).items() if isinstance(value, str)
              and (key == "face" or key.endswith(("_action", "_command")))][:1]
    return " ".join(words) or None


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    skip_httpx_command_line()
    command = requested_command(arguments)
    try:
        with collector_paused_for_imports():
            parser = build_parser(command)
    except ModuleNotFoundError as exc:
        return missing_extra(exc, command)
    args = parser.parse_args(arguments)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    # trafilatura reports every page it cannot extract at WARNING: noise for our users.
    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    from pagetrail.lab import install_log_redaction

    install_log_redaction()  # endpoint credentials never reach a log line
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except PagetrailError as exc:
        return fail(f"{exc.code}: {exc}")
    except ModuleNotFoundError as exc:
        return missing_extra(exc, _command_words(args))
    except Exception as exc:
        reason = redis_fault(exc)
        if reason is None:
            # A bug, not a finding: its own exit status, so that "1: dead links left" (fix,
            # scan, batch) never stands for a crash in a script or a CI job.
            traceback.print_exc()
            return fail(f"internal_error: {type(exc).__name__}: {exc} (a bug in pagetrail; "
                        "the traceback is above)", INTERNAL_ERROR_EXIT)
        return fail(f"broker_unavailable: {reason}")
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
