"""Where each setting came from (`pagetrail config show`): an environment variable, the config
file, or the default — asked of pydantic-settings' own sources, in Settings' order, so that
what is shown is what Settings() read."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import EnvSettingsSource, TomlConfigSettingsSource

from pagetrail.tools.settings import Settings, config_file


def _env_name(name: str) -> str:
    field = Settings.model_fields[name]
    alias = field.validation_alias
    if isinstance(alias, str):
        return alias
    prefix = Settings.model_config.get("env_prefix") or ""
    return f"{prefix}{name}".upper()


def setting_sources() -> dict[str, str]:
    """Settings field → "env NAME", the config file's path (with its line), or "default"."""
    by_env = EnvSettingsSource(Settings)()
    path = config_file()
    by_file = TomlConfigSettingsSource(Settings, toml_file=path)() if path.is_file() else {}
    text = _text(path) if by_file else ""
    sources: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        keys = {name, field.validation_alias if isinstance(field.validation_alias, str)
                else name}
        if keys & set(by_env):
            sources[name] = f"env {_env_name(name)}"
        elif keys & set(by_file):
            line = _line_of(text, keys)
            sources[name] = f"{path}:{line}" if line else str(path)
        else:
            sources[name] = "default"
    return sources


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""  # the line is then not shown; Settings() itself reports an unreadable file


def _line_of(text: str, keys: set[str]) -> int | None:
    """The line of a top-level `key = …` of the user's config file (before any table)."""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            return None
        key = stripped.split("=", 1)[0].strip().strip("\"'")
        if "=" in stripped and key in keys:
            return number
    return None


__all__ = ["setting_sources"]
