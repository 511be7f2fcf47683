"""Which tools the server serves: read-only mode and tool selection, as github-mcp-server.

`--read-only` keeps only the tools annotated readOnlyHint; `--tools a,b` keeps only those;
`--exclude-tools c` drops those. A tool left out is not listed, and a call to it gets the
`tool_disabled` tool error saying why. A name that is no tool is a ConfigError at start (a
typo would otherwise quietly serve everything, or nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pagetrail import ConfigError, Settings


@dataclass(frozen=True)
class ToolSelection:
    read_only: bool = False
    tools: tuple[str, ...] = ()  # empty: every tool
    exclude: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings, *, read_only: bool | None = None,
                      tools: Iterable[str] | None = None,
                      exclude: Iterable[str] | None = None) -> ToolSelection:
        """The settings' selection (PAGETRAIL_MCP_READ_ONLY, _TOOLS, _EXCLUDE_TOOLS), each
        part replaced by the command line's when given."""
        return cls(read_only=settings.mcp_read_only if read_only is None else read_only,
                   tools=tuple(settings.mcp_tools if tools is None else tools),
                   exclude=tuple(settings.mcp_exclude_tools if exclude is None else exclude))

    def withheld(self, read_only_tools: Mapping[str, bool]) -> dict[str, str]:
        """Tool name → why it is not served, for the tools `read_only_tools` (name → its
        readOnlyHint) names. ConfigError for an unknown name or when nothing is left."""
        known = set(read_only_tools)
        for option, names in (("--tools", self.tools), ("--exclude-tools", self.exclude)):
            unknown = [name for name in names if name not in known]
            if unknown:
                raise ConfigError(f"{option}: no tool named {', '.join(unknown)} "
                                  f"(tools: {', '.join(sorted(known))})")
        reasons: dict[str, str] = {}
        for name, read_only in read_only_tools.items():
            if self.tools and name not in self.tools:
                reasons[name] = "not among the tools selected (--tools, PAGETRAIL_MCP_TOOLS)"
            elif name in self.exclude:
                reasons[name] = "excluded (--exclude-tools, PAGETRAIL_MCP_EXCLUDE_TOOLS)"
            elif self.read_only and not read_only:
                reasons[name] = ("the server is read-only (--read-only, "
                                 "PAGETRAIL_MCP_READ_ONLY) and this tool writes")
        if len(reasons) == len(known):
            raise ConfigError("no tool left to serve: the read-only mode and tool selection "
                              "exclude every tool")
        return reasons
