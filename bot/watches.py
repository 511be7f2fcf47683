"""A channel's watches: the store's (store.watches), under the bot's old import path."""

from pagetrail.store.watches import add_watch, list_watches, remove_watch, watched_channels

__all__ = ["add_watch", "list_watches", "remove_watch", "watched_channels"]
