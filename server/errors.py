"""Tool errors an MCP client can act on: a stable code in structured content.

Every failed call answers `isError: true` with `{"error": {"code", "message", ...}}` as its
structured content and `"<code>: <message>"` as its text, whatever failed: the engine's
named errors (PagetrailError.code, through the table below), arguments that do not match
the tool's input schema, a tool this server does not serve, or a crash (logged here, never
shown). CODES is the whole vocabulary; docs/mcp.md lists it and a test keeps the two equal.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from pagetrail import PagetrailError

# code → what it means. The engine's codes (PagetrailError subclasses' `code`) are kept as
# they are, except `invalid_argument`, which joins the schema's `invalid_arguments`: for a
# client both say "change the arguments".
CODES: dict[str, str] = {
    "invalid_arguments": "the arguments do not fit the tool (missing, wrong type, out of "
                         "range) or cannot be used (an empty query, no reference)",
    "invalid_url": "not an absolute http(s) URL",
    "invalid_date": "a date that cannot be read",
    "refused_address": "the URL (or a redirect) points at a private, loopback or metadata "
                       "address",
    "fetch_failed": "the page could not be fetched (`kind`: dns, refused, tls, timeout, "
                    "proxy, protocol, other)",
    "network_down": "nothing at all can be reached from the server: no verdict on the link",
    "rate_limited": "a remote service asked to slow down (`retry_after` seconds when known)",
    "body_too_large": "the page is larger than the server's limit",
    "decompression_bomb": "the page inflates beyond the server's limit",
    "too_many_redirects": "more redirects than the server follows",
    "redirect_loop": "the redirects go round in a loop",
    "unsupported_content": "not a document pagetrail can read (binary, not HTML)",
    "no_memento": "no archive holds a usable copy",
    "archive_excluded": "the archive refuses the URL (excluded or blocked site)",
    "archive_unavailable": "no configured web archive answered",
    "engine_unavailable": "a search engine that cannot be used (not configured, refused)",
    "model_missing": "a model pagetrail needs is not there or cannot be read (the URL "
                     "classifier, the answer-confidence model)",
    "store_unavailable": "the server's database did not answer in time",
    "store_refused": "the server's database refused the request with an error that does not "
                     "pass (a limit, a refused password, a missing table): not retried",
    "broker_unavailable": "the task queue's broker (Redis) does not answer",
    "jobs_stalled": "dispatched jobs stopped finishing (no worker takes them)",
    "job_failed": "a job ran and failed on a worker",
    "bad_job_input": "a job's input that cannot be run",
    "world_error": "a testbed world that does not follow its format",
    "config_error": "a server setting that cannot be used",
    "error": "another named failure (the message says which)",
    "busy": "too many calls in flight and queued: retry shortly",
    "unknown_tool": "no tool of that name",
    "not_found": "a resource with nothing behind it (no recovery of that URL remembered, a "
                 "channel with no watches or digests)",
    "tool_disabled": "a tool this server does not serve (read-only mode or tool selection)",
    "internal_error": "the tool failed unexpectedly; the server's log has the details",
}
RENAMED = {"invalid_argument": "invalid_arguments"}
ERROR_TEXT = "{code}: {message}"


def code_of(exc: PagetrailError) -> str:
    """The error's code in CODES: its own, else its nearest parent's (a subclass the table
    does not name is still, say, a fetch_failed)."""
    for cls in type(exc).__mro__:
        code = RENAMED.get(getattr(cls, "code", ""), getattr(cls, "code", ""))
        if code in CODES:
            return code
    return "error"


def error_result(code: str, message: str, **details: Any) -> CallToolResult:
    """A tool error: `isError`, the code and message as structured content and as text."""
    if code not in CODES:
        raise ValueError(f"undocumented tool error code {code!r}")  # a bug here, not input
    message = " ".join(message.split())  # one line
    error = {"code": code, "message": message,
             **{name: value for name, value in details.items() if value is not None}}
    return CallToolResult(content=[TextContent(type="text",
                                               text=ERROR_TEXT.format(code=code, message=message))],
                          structured_content={"error": error}, is_error=True)


def from_exception(exc: PagetrailError) -> CallToolResult:
    """A named failure as a tool error, with what it carries (url, kind, retry_after)."""
    extra = {name: value for name, value in exc.to_dict().items()
             if name not in ("error", "message")}
    retry_after = getattr(exc, "retry_after", None)
    return error_result(code_of(exc), str(exc), **extra, retry_after=retry_after)


def from_validation(tool: str, exc: ValidationError) -> CallToolResult:
    """Arguments the schema refuses, one line per field, without pydantic's own text (the
    rejected values are the caller's own data, and its links help nobody here)."""
    problems: dict[str, str] = {}
    for error in exc.errors(include_url=False, include_input=False):
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = "required" if error["type"] == "missing" else error["msg"]
        problems.setdefault(field, message[:1].lower() + message[1:])
    detail = "; ".join(f"{field}: {message}" for field, message in problems.items())
    return error_result("invalid_arguments", f"{tool}: {detail}", fields=sorted(problems))
