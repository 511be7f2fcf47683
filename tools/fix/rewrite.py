"""Apply edits to a document's text, show them as a diff, write them back atomically."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from pagetrail.tools.fix.files import FileProblem, SourceFile


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] with `new` (the URL's characters, or attributes to insert).

    `old` and `target` say what the edit means to the document's parser: the link target it
    replaces and the one it writes (tools.fix.proof checks both before anything is written)."""

    start: int
    end: int
    new: str
    old: str | None = None
    target: str | None = None


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with each edit made; edits must not overlap (ValueError otherwise)."""
    out: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < cursor:
            raise ValueError(f"overlapping edits at {edit.start}")
        out.append(text[cursor:edit.start])
        out.append(edit.new)
        cursor = edit.end
    out.append(text[cursor:])
    return "".join(out)


def unified_diff(old: str, new: str, name: str) -> str:
    diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                fromfile=f"a/{name}", tofile=f"b/{name}")
    lines = []
    for line in diff:
        lines.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def write_back(source: SourceFile, new_text: str) -> FileProblem | None:
    """Replace the file with `new_text` in its own encoding, atomically (a temporary file in
    the same folder, then rename), keeping its permissions. Refused (a FileProblem) when the
    file changed on disk since it was read."""
    path = source.path
    try:
        real = path.resolve(strict=True)
        current = real.read_bytes()
    except (OSError, RuntimeError) as exc:
        return FileProblem(path=str(path), code="unreadable", message=str(exc))
    if source.real is not None and real != source.real:
        # A link swapped since the read (and the confinement check) would send the write
        # elsewhere: only the file that was read and checked is ever written.
        return FileProblem(path=str(path), code="moved-on-disk",
                           message=f"now leads to {real}, not to {source.real} that was read: "
                                   "not written")
    if hashlib.sha256(current).hexdigest() != source.digest:
        return FileProblem(path=str(path), code="changed-on-disk",
                           message="the file changed since it was read: not written; "
                                   "run again to fix the new version")
    data = source.encode(new_text)
    handle, temporary = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".pagetrail",
                                         dir=real.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, real.stat().st_mode & 0o7777)
        os.replace(temporary, real)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        return FileProblem(path=str(path), code="unwritable", message=str(exc))
    return None
