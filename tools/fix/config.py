"""A repository's own settings for `pagetrail fix`: `pagetrail.toml` (or `[tool.pagetrail]` in
pyproject.toml), the ignore files beside it, and the command line over both.

Found from the working directory up to the repository root (a folder holding `.git`) or the
filesystem root; in each folder `pagetrail.toml` first, then a pyproject.toml that has a
`[tool.pagetrail]` table; the first found is the one read (files are never merged). The
command line overrides it key by key. Keys follow the link checkers people already use
(lychee's `exclude`, `accept`, `include`, `exclude_path`): an unknown key or a wrong type is a
one-line ConfigError naming the file, the line and the key.

Only `fix`'s own choices live here: a repository's file never sets the service settings
(proxies, allowed private hosts, archives), which a checked-out repository must not be able to
change on a CI runner.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pagetrail.tools.errors import ConfigError

if TYPE_CHECKING:  # run.py imports this module: Options is imported where it is built
    from pagetrail.tools.fix.run import Options

CONFIG_FILE = "pagetrail.toml"
PYPROJECT = "pyproject.toml"
# Read beside the config file (else at the repository root), in this order, both if present.
IGNORE_FILES = (".pagetrailignore", ".lycheeignore")
KINDS = ("moved", "replacement", "archived")
_STATUS = re.compile(r"^\s*(\d{3})\s*$")
_RANGE = re.compile(r"^\s*(\d{3})?\s*\.\.(=?)\s*(\d{3})\s*$")


class FileSettings(BaseModel):
    """What a pagetrail.toml may say (every key optional; nothing else is allowed)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    exclude: list[str] = Field(default_factory=list)  # URL regexes (searched, like lychee's)
    accept: list[int | str] = Field(default_factory=list)  # "403", 429, "200..=299"
    include: list[str] = Field(default_factory=list)  # globs of files to read
    exclude_path: list[str] = Field(default_factory=list)  # globs of files not to read
    min_confidence: float = 0.0
    kinds: list[Literal["moved", "replacement", "archived"]] = Field(
        default_factory=lambda: list(KINDS))
    archived_as: Literal["url", "robust"] = "url"
    max_file_size: int = 5_000_000


KEYS = tuple(FileSettings.model_fields)


@dataclass(frozen=True)
class Pattern:
    """A URL pattern and where it was written (shown when it excludes a link)."""

    regex: str
    origin: str  # "pagetrail.toml:4", ".lycheeignore:2", "command line"

    def search(self, url: str) -> bool:
        return _compiled(self.regex).search(url) is not None


@dataclass(frozen=True)
class Rules:
    """What the configuration decides about links and files, ready for a run (pure data)."""

    base: Path | None = None  # the folder path globs are relative to (the config's)
    exclude: tuple[Pattern, ...] = ()
    accept: tuple[tuple[int, int], ...] = ()  # inclusive ranges of accepted statuses
    accept_origin: str = ""
    include: tuple[str, ...] = ()
    exclude_path: tuple[str, ...] = ()
    markers: bool = True  # inline pagetrail-ignore / -disable / -enable comments

    def excluded(self, url: str) -> Pattern | None:
        """The first pattern that excludes `url`, or None."""
        return next((p for p in self.exclude if p.search(url)), None)

    def accepts(self, status: int | None) -> bool:
        return status is not None and any(lo <= status <= hi for lo, hi in self.accept)

    def reads(self, path: Path) -> bool:
        """Whether the file is one the configuration lets a fix read (include/exclude_path,
        matched like --include against the path from the config's folder, and the name)."""
        if not self.include and not self.exclude_path:
            return True
        relative = _relative(path, self.base)
        if self.include and not any(_glob_hit(relative, g) for g in self.include):
            return False
        return not any(_glob_hit(relative, g) for g in self.exclude_path)


@dataclass
class FixConfig:
    """The configuration of a fix: each key's value and where it came from ("default", a file
    and line, "command line"), the ignore files read, and the rules they make."""

    path: Path | None = None  # the config file read (None: none found, or --no-config)
    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    ignore_files: list[Path] = field(default_factory=list)
    ignore_patterns: list[Pattern] = field(default_factory=list)

    def with_flags(self, flags: Mapping[str, Any]) -> FixConfig:
        """This configuration under the command line's options (see with_flags)."""
        return with_flags(self, flags)

    def options(self) -> Options:
        """The run's Options (tools.fix.run.Options) this configuration makes."""
        return options_from(self)

    def shown(self) -> dict[str, dict[str, Any]]:
        """key → {value, source}, then the ignore files: what `config show` prints."""
        shown: dict[str, dict[str, Any]] = {
            key: {"value": self.values[key], "source": self.sources[key]} for key in KEYS}
        if self.ignore_files:
            shown["ignore_files"] = {
                "value": [p.regex for p in self.ignore_patterns],
                "source": ", ".join(str(p) for p in self.ignore_files)}
        return shown

    def from_file(self, key: str) -> bool:
        return self.sources.get(key) not in ("default", "command line")

    def rules(self) -> Rules:
        """The link and file rules. Globs from the file are relative to its folder; globs given
        on the command line stay with the run's own --include/--exclude (options_from)."""
        exclude = [Pattern(p, self.sources.get("exclude", "")) for p in self.values["exclude"]]
        return Rules(base=self.path.parent if self.path else None,
                     exclude=(*exclude, *self.ignore_patterns),
                     accept=tuple(parse_statuses(self.values["accept"], "accept")),
                     accept_origin=self.sources.get("accept", ""),
                     include=tuple(self.values["include"]) if self.from_file("include")
                     else (),
                     exclude_path=tuple(self.values["exclude_path"])
                     if self.from_file("exclude_path") else ())


# ------------------------------------------------------------------ pure helpers


@functools.lru_cache(maxsize=1024)  # a pattern is compiled once, however many links it meets
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _relative(path: Path, base: Path | None) -> str:
    if base is not None:
        try:
            return path.resolve().relative_to(base.resolve()).as_posix()
        except (ValueError, OSError):
            pass
    return PurePath(path).as_posix()


def _glob_hit(relative: str, pattern: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)


def parse_status(value: int | str) -> tuple[int, int]:
    """One accepted status as an inclusive range, in lychee's syntax: 403, "403", "200..=299"
    (inclusive), "200..300" (end excluded), "..=299", "..300". ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a status code")
    text = str(value) if isinstance(value, int) else value
    single = _STATUS.match(text)
    if single:
        lo = hi = int(single.group(1))
    else:
        ranged = _RANGE.match(text)
        if not ranged:
            raise ValueError(f"{value!r} is not a status code or range (e.g. 403, "
                             f"\"200..=299\")")
        lo = int(ranged.group(1) or 100)
        hi = int(ranged.group(3)) - (0 if ranged.group(2) else 1)
    if not (100 <= lo <= 599 and 100 <= hi <= 599) or lo > hi:
        raise ValueError(f"{value!r} is not a range of HTTP statuses (100-599)")
    return lo, hi


def parse_statuses(values: Sequence[int | str], key: str) -> list[tuple[int, int]]:
    ranges = []
    for index, value in enumerate(values):
        try:
            ranges.append(parse_status(value))
        except ValueError as exc:
            raise ConfigError(f"{key}[{index}]: {exc}") from None
    return ranges


def key_line(text: str, key: str, table: str | None) -> int | None:
    """The 1-based line where `key` is set in `table` (None: the top level) of a TOML text."""
    current: str | None = None
    header = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
    assignment = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines(), 1):
        found = header.match(line)
        if found:
            current = found.group(1).replace(" ", "").replace('"', "")
            continue
        if current == table and assignment.match(line):
            return number
    return None


def _where(path: Path, text: str, key: str, table: str | None) -> str:
    line = key_line(text, key, table)
    return f"{path}:{line}" if line else str(path)


def _describe(error: dict[str, Any]) -> tuple[str, str]:
    """(key, what is wrong) of one pydantic error, said for a person."""
    loc = [str(part) for part in error["loc"]]
    key = loc[0] if loc else "?"
    where = key + "".join(f"[{p}]" for p in loc[1:] if p.isdigit())
    if error["type"] == "extra_forbidden":
        return key, f"unknown key `{key}` (known: {', '.join(KEYS)})"
    if any(p.isdigit() for p in loc[1:]):
        element = {"exclude": "a regular expression (a string)",
                   "accept": "a status (403) or a range (\"200..=299\")",
                   "include": "a glob (a string)", "exclude_path": "a glob (a string)",
                   "kinds": f"one of {', '.join(KINDS)}"}.get(key, "of another type")
        return key, f"`{where}` must be {element} (got {error.get('input')!r})"
    expected = {
        "exclude": "a list of regular expressions", "accept": "a list of statuses or ranges",
        "include": "a list of globs", "exclude_path": "a list of globs",
        "min_confidence": "a number between 0 and 1",
        "kinds": f"a list of {', '.join(KINDS)}", "archived_as": "\"url\" or \"robust\"",
        "max_file_size": "a whole number of bytes"}.get(key, "another type")
    return key, f"`{where}` must be {expected} (got {error.get('input')!r})"


def _check(settings: FileSettings) -> tuple[str, str] | None:
    """(key, problem) for a value of the right type that still cannot be used."""
    for index, regex in enumerate(settings.exclude):
        try:
            _compiled(regex)
        except re.error as exc:
            return "exclude", f"`exclude[{index}]` is not a regular expression: {exc}"
    for index, value in enumerate(settings.accept):
        try:
            parse_status(value)
        except ValueError as exc:
            return "accept", f"`accept[{index}]`: {exc}"
    if not 0.0 <= settings.min_confidence <= 1.0:
        return "min_confidence", "`min_confidence` must be between 0 and 1"
    if not settings.kinds:
        return "kinds", f"`kinds` names none of {', '.join(KINDS)}"
    if settings.max_file_size <= 0:
        return "max_file_size", "`max_file_size` must be a positive number of bytes"
    return None


# ------------------------------------------------------------------ reading files


def _table_of(path: Path) -> str | None:
    return "tool.pagetrail" if path.name == PYPROJECT else None


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _has_tool_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "pagetrail" not in text:  # most pyproject.toml files: no need to parse them
        return False
    _, data = _read_toml(path)
    return isinstance(data.get("tool"), dict) and "pagetrail" in data["tool"]


def repository_root(start: Path) -> Path | None:
    """The first folder from `start` up that holds `.git` (a folder, or a worktree's file)."""
    start = start.resolve()
    return next((folder for folder in (start, *start.parents)
                 if (folder / ".git").exists()), None)


def find_config(start: Path) -> Path | None:
    """The configuration file a fix started in `start` reads: from `start` up, in each folder
    pagetrail.toml, then a pyproject.toml with `[tool.pagetrail]`; the search stops at the
    repository root (a folder holding `.git`) or the filesystem root."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject
        if (folder / ".git").exists():
            return None
    return None


def read_config_file(path: Path) -> tuple[FileSettings, dict[str, str]]:
    """The settings a file sets (validated strictly) and where each key was set."""
    text, data = _read_toml(path)
    table = _table_of(path)
    if table is not None:
        tool = data.get("tool")
        data = tool.get("pagetrail") if isinstance(tool, dict) else None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: `[tool.pagetrail]` must be a table")
    try:
        settings = FileSettings.model_validate(data)
    except ValidationError as exc:
        key, problem = _describe(exc.errors()[0])
        raise ConfigError(f"{_where(path, text, key, table)}: {problem}") from None
    bad = _check(settings)
    if bad is not None:
        key, problem = bad
        raise ConfigError(f"{_where(path, text, key, table)}: {problem}")
    return settings, {key: _where(path, text, key, table) for key in data}


def read_ignore_file(path: Path) -> list[Pattern]:
    """A `.pagetrailignore` / `.lycheeignore`: one URL regex a line; blank lines and lines
    starting with `#` are skipped. A line that is no regex is a ConfigError (file:line)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    patterns = []
    for number, line in enumerate(lines, 1):
        regex = line.strip()
        if not regex or regex.startswith("#"):
            continue
        try:
            _compiled(regex)
        except re.error as exc:
            raise ConfigError(f"{path}:{number}: not a regular expression: {exc}") from None
        patterns.append(Pattern(regex, f"{path.name}:{number}"))
    return patterns


def load_fix_config(start: str | Path | None = None, *, path: str | Path | None = None,
                    use_files: bool = True) -> FixConfig:
    """The configuration a fix started in `start` (default: the working directory) reads:
    `path` if given, else the file found from `start` up (find_config), and the ignore files
    beside it (else at the repository root). `use_files=False`: defaults only."""
    config = FixConfig(values=FileSettings().model_dump(),
                       sources=dict.fromkeys(KEYS, "default"))
    if not use_files:
        return config
    here = Path(start or Path.cwd())
    if path is not None:
        found: Path | None = Path(path)
        if not found.is_file():
            raise ConfigError(f"no such configuration file: {path}")
    else:
        found = find_config(here)
    if found is not None:
        found = found.resolve()
        settings, sources = read_config_file(found)
        config.path = found
        config.values = settings.model_dump()
        config.sources.update(sources)
    folder = config.path.parent if config.path else repository_root(here)
    for name in IGNORE_FILES if folder else ():
        ignore = folder / name  # type: ignore[operator]
        if ignore.is_file():
            config.ignore_files.append(ignore)
            config.ignore_patterns.extend(read_ignore_file(ignore))
    return config


# Command-line options of `pagetrail fix` that override a key (option → key).
FLAG_KEYS = {"exclude_url": "exclude", "accept": "accept", "include": "include",
             "exclude_path": "exclude_path", "min_confidence": "min_confidence",
             "kinds": "kinds", "archived_as": "archived_as", "max_file_size": "max_file_size"}


def with_flags(config: FixConfig, flags: Mapping[str, Any]) -> FixConfig:
    """The configuration with the command line's options over it: each option given (not None,
    not an empty list) replaces its key's value, which then comes from "command line"."""
    values, sources = dict(config.values), dict(config.sources)
    for option, value in flags.items():
        key = FLAG_KEYS.get(option)
        if key is None:
            raise ConfigError(f"not an option of fix that a configuration holds: {option}")
        if value is None or (isinstance(value, list | tuple) and not value):
            continue
        merged = {**values, key: list(value) if isinstance(value, list | tuple) else value}
        try:
            checked = FileSettings.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(f"command line: {_describe(exc.errors()[0])[1]}") from None
        bad = _check(checked)
        if bad is not None:
            raise ConfigError(f"command line: {bad[1]}")
        values, sources[key] = checked.model_dump(), "command line"
    return FixConfig(path=config.path, values=values, sources=sources,
                     ignore_files=config.ignore_files, ignore_patterns=config.ignore_patterns)


def options_from(config: FixConfig) -> Options:
    """The run's Options (tools.fix.run) from a configuration."""
    from pagetrail.tools.fix.run import Options

    values = config.values
    flagged = {key: tuple(values[key]) if config.sources[key] == "command line" else ()
               for key in ("include", "exclude_path")}
    return Options(kinds=tuple(values["kinds"]), min_confidence=values["min_confidence"],
                   archived_as=values["archived_as"], max_file_bytes=values["max_file_size"],
                   include=flagged["include"], exclude=flagged["exclude_path"],
                   rules=config.rules())


__all__ = ["CONFIG_FILE", "IGNORE_FILES", "KEYS", "FileSettings", "FixConfig", "Pattern",
           "Rules", "find_config", "load_fix_config", "options_from", "parse_status",
           "read_config_file", "read_ignore_file", "repository_root", "with_flags"]
