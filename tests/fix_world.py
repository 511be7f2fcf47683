"""A small world for `pagetrail fix` tests: docs links that are alive, moved, redirected,
archived at several dates, gone, and never existed (see build_fix_world)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pagetrail.tools.testbed.worldgen import WorldBuilder


@dataclass(frozen=True)
class FixWorld:
    path: Path
    alive: str = "https://docs.example/guide"
    moved_from: str = "https://docs.example/2019/setup-widget-server"
    moved_to: str = "https://docs.example/manual/setting-up-the-widget-server"
    redirect_from: str = "https://docs.example/old/faq"
    redirect_to: str = "https://docs.example/faq"
    archived: str = "https://docs.example/2018/release-notes-v1"
    captures: tuple[str, ...] = ("20180601000000", "20210601000000", "20240601000000")
    gone: str = "https://gone.example/page"
    never: str = "https://docs.example/2020/quantum-widget-benchmark-results"


def _article(title: str, text: str) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"</head><body><main><h1>{title}</h1><p>{text}</p></main></body></html>")


SETUP = ("Setting up the widget server takes three steps: install the widget daemon, write "
         "its configuration file with the listening port, and start the service with the "
         "systemd unit shipped in the package.")


def build_fix_world(root: Path) -> FixWorld:
    w = FixWorld(path=Path(root))
    b = WorldBuilder(Path(root), name="fix")
    b.host("docs.example", not_found="404")
    b.page("https://docs.example/", _article("Widget docs", "Documentation of the widget."))
    b.page(w.alive, _article("Widget guide", "A guide to the widget: install, configure, run."))
    b.page(w.moved_to, _article("Setting up the widget server", SETUP))
    b.capture(w.moved_from, "20190301000000", html=_article("Setting up the widget server",
                                                              SETUP))
    b.redirect(w.redirect_from, w.redirect_to)
    b.page(w.redirect_to, _article("Widget FAQ", "Frequently asked questions about widgets."))
    for number, stamp in enumerate(w.captures, 1):
        b.capture(w.archived, stamp, html=_article(
            f"Release notes, edition {number}",
            f"Edition {number} of the release notes of widget one: bug fixes for the "
            f"gearbox, the lantern and the compass module, revision {number}."))
    b.host("gone.example", "nxdomain")
    b.write()
    return w
