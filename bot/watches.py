"""A channel's watches (tools.memory, over store.watches), under the bot's old import path."""

from pagetrail.tools.memory import add_watch, list_watches, remove_watch, watched_channels

__all__ = ["add_watch", "list_watches", "remove_watch", "watched_channels"]
