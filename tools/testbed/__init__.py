"""The testbed: serve a world (FORMAT.md) on loopback so pagetrail runs unchanged against it."""

from pagetrail.tools.testbed.runner import Testbed, TestbedThread, start_in_thread
from pagetrail.tools.testbed.world import World, load_world

__all__ = ["Testbed", "TestbedThread", "World", "load_world", "start_in_thread"]
