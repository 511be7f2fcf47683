"""The channels that watch something: the digest poster's question (bot/digest_post.py,
until branch store lands and moves its SQL to store/)."""

from pagetrail.store.watches import watched_channels

__all__ = ["watched_channels"]
