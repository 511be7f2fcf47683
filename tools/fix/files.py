"""The files a fix reads: which (roots, globs, .gitignore), and each read safely.

Bad input is named, never fatal to the rest of the run: a binary file, one over the size cap,
undecodable bytes, a symlink loop or a link that leads outside the given roots is a
`FileProblem` in the report, and the file is left untouched.
"""

from __future__ import annotations

import codecs
import fnmatch
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from pagetrail.tools.errors import InvalidArgument
from pagetrail.tools.fix.extract import format_of

MAX_FILE_BYTES = 5_000_000
BINARY_SNIFF = 8192


class FileProblem(BaseModel):
    """A file left alone, and why (code: binary, too-large, undecodable, symlink-loop,
    outside-roots, unreadable, changed-on-disk, moved-on-disk, nothing-selected,
    rewrite-refused, unknown-date, unparsable)."""

    path: str
    code: str
    message: str


@dataclass
class SourceFile:
    """A document as read: its text, how to write it back the same way, and what it was."""

    path: Path
    fmt: str
    text: str
    encoding: str
    bom: bytes
    digest: str  # sha256 of the bytes read: a write is refused if the file changed since
    real: Path | None = None  # where it was read (links resolved): a write goes only there

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.encoding)


def _globbed(relative: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]

    def hit(pattern: str) -> bool:
        return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)

    if include and not any(hit(p) for p in include):
        return False
    return not any(hit(p) for p in exclude)


def _git_files(root: Path) -> list[Path] | None:
    """The files of a git work tree under `root` that git does not ignore (tracked and
    untracked), or None when `root` is not in a work tree."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run([git, "-C", str(root), "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard", "--", "."],
                              capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = sorted({n for n in done.stdout.decode("utf-8", "surrogateescape").split("\0") if n})
    return [root / name for name in names]


def _inside(real: Path, roots: Sequence[Path]) -> bool:
    return any(real == root or root in real.parents for root in roots)


def _walk(root: Path, real_roots: Sequence[Path], problems: list[FileProblem]) -> Iterator[Path]:
    """The files under `root`, depth first. A symbolic link to a folder is followed only when
    it leads inside the roots, decided before descending (a link to `/usr` or `/` is named,
    never read); a link back to a folder already read is named too."""
    seen: set[tuple[int, int]] = set()

    def unreadable(exc: OSError) -> None:  # os.walk would skip the folder without a word
        problems.append(FileProblem(path=str(exc.filename or root), code="unreadable",
                                    message=exc.strerror or str(exc)))

    for folder, dirs, files in os.walk(root, followlinks=True, onerror=unreadable):
        here = Path(folder)
        try:
            info = here.stat()
        except OSError as exc:
            problems.append(FileProblem(path=str(here), code="unreadable", message=str(exc)))
            dirs[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:
            problems.append(FileProblem(path=str(here), code="symlink-loop",
                                        message="a symbolic link leads back into a folder "
                                                "already read: not followed"))
            dirs[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        kept = []
        for name in sorted(d for d in dirs if d not in (".git", ".hg", ".svn")):
            child = here / name
            if child.is_symlink():
                try:
                    real = child.resolve(strict=True)
                except (OSError, RuntimeError) as exc:
                    problems.append(FileProblem(path=str(child), code="symlink-loop"
                                                if isinstance(exc, RuntimeError)
                                                else "unreadable", message=str(exc)))
                    continue
                if not _inside(real, real_roots):
                    problems.append(FileProblem(
                        path=str(child), code="outside-roots",
                        message=f"a folder link to {real}, outside the paths given: not read"))
                    continue
            kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            yield here / name


def _anchor(path: Path) -> Path:
    """Where a named path must lead: the working folder for a path written inside it (a
    work tree's own links cannot send the fix out of it), else the named path's folder."""
    cwd = Path.cwd().resolve()
    lexical = Path(os.path.abspath(path))
    if lexical == cwd or cwd in lexical.parents:
        return cwd
    return lexical.parent.resolve()


def _ignored(root: Path) -> bool:
    """git ignores `root` (a folder listed in .gitignore, or one inside such a folder)."""
    git = shutil.which("git")
    if git is None:
        return False
    absolute = Path(os.path.abspath(root))
    try:
        done = subprocess.run([git, "-C", str(absolute.parent), "check-ignore", "-q", "--",
                               absolute.name or "."], capture_output=True, timeout=60,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def gather(paths: Sequence[str], *, include: Sequence[str] = (), exclude: Sequence[str] = (),
           problems: list[FileProblem]) -> list[tuple[Path, str]]:
    """(file, format) for every document under `paths`, each once. A named file is read even
    without a known extension (as plain text); a folder contributes files of known formats.

    Confined: a named path must lead (symbolic links resolved) inside the working folder
    when it is written inside it, else inside its own folder; every file read must lie
    inside the named paths, resolved. A root that selects nothing is named
    (`nothing-selected`: ignored by git, or no document matched). InvalidArgument for a
    path that does not exist."""
    roots: list[tuple[Path, Path]] = []  # (as named, resolved)
    for raw in paths:
        path = Path(raw)
        shown = raw if len(raw) <= 200 else raw[:200] + "…"
        try:
            present = path.exists() or path.is_symlink()
        except (OSError, ValueError) as exc:  # a name too long, a folder not searchable
            raise InvalidArgument(f"cannot read {shown!r}: "
                                  f"{getattr(exc, 'strerror', None) or exc}") from None
        if not present:
            raise InvalidArgument(f"no such file or folder: {shown}")
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            problems.append(FileProblem(path=str(path), code="symlink-loop" if isinstance(
                exc, RuntimeError) else "unreadable", message=str(exc)))
            continue
        anchor = _anchor(path)
        if not _inside(real, [anchor]):
            problems.append(FileProblem(path=str(path), code="outside-roots",
                                        message=f"leads to {real}, outside {anchor}: not read"))
            continue
        roots.append((path, real))
    real_roots = [real for _, real in roots]
    chosen: dict[Path, tuple[Path, str]] = {}
    for root, _real_root in roots:
        matched = 0
        if root.is_file():
            candidates: Iterator[Path] | list[Path] = [root]
            base = root.parent
        else:
            base = root
            listed = _git_files(root)
            candidates = listed if listed is not None else _walk(root, real_roots, problems)
        for path in candidates:
            if not path.is_symlink() and not path.exists():
                continue  # tracked by git but deleted in the work tree: nothing to fix
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
                code = "symlink-loop" if "loop" in str(exc).lower() or isinstance(
                    exc, RuntimeError) else "unreadable"
                problems.append(FileProblem(path=str(path), code=code, message=str(exc)))
                continue
            if not _inside(real, real_roots):
                problems.append(FileProblem(path=str(path), code="outside-roots",
                                            message=f"links to {real}, outside the paths given"))
                continue
            if not real.is_file():
                continue
            fmt = format_of(path) or ("text" if path == root else None)
            relative = path.relative_to(base).as_posix() if path != root else path.name
            if fmt is None or not _globbed(relative, include, exclude):
                continue
            matched += 1
            chosen.setdefault(real, (path, fmt))
        if not matched:
            why = ("ignored by git (.gitignore): no file read" if root.is_dir() and
                   _ignored(root) else "no document of a known format matched")
            problems.append(FileProblem(path=str(root), code="nothing-selected", message=why))
    return list(chosen.values())


def decode(data: bytes) -> tuple[str, str, bytes] | None:
    """(text, encoding, BOM) such that BOM + text.encode(encoding) == data, or None."""
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                          (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(encoding), encoding, bom
            except UnicodeDecodeError:
                return None
    try:
        return data.decode("utf-8"), "utf-8", b""
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None or best.encoding in (None, "utf_8"):
        return None
    text = str(best)
    try:
        if text.encode(best.encoding) != data:
            return None
    except (UnicodeEncodeError, LookupError):
        return None
    return text, best.encoding, b""


def read_source(path: Path, fmt: str, *, max_bytes: int = MAX_FILE_BYTES,
                ) -> SourceFile | FileProblem:
    try:
        real = path.resolve(strict=True)
        size = real.stat().st_size
        if size > max_bytes:
            return FileProblem(path=str(path), code="too-large",
                               message=f"{size} bytes, over the cap of {max_bytes}")
        data = real.read_bytes()
    except (OSError, RuntimeError) as exc:
        return FileProblem(path=str(path), code="unreadable", message=str(exc))
    if b"\0" in data[:BINARY_SNIFF] and not data.startswith(
            (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return FileProblem(path=str(path), code="binary", message="a binary file (NUL bytes)")
    decoded = decode(data)
    if decoded is None:
        return FileProblem(path=str(path), code="undecodable",
                           message="not UTF-8, and no other encoding reads it back exactly")
    text, encoding, bom = decoded
    return SourceFile(path, fmt, text, encoding, bom, hashlib.sha256(data).hexdigest(), real)
