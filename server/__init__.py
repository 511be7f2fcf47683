"""pagetrail's MCP server: the engine's primitives and recover_link as MCP tools."""
