"""A channel's link health over the last weeks, as numbers and as a picture (PNG).

The history is the channel's recorded digests (store.digests, one a period: the
newest run of each ISO week). Each week's point comes from `health_counts(digest)` — the
same numbers the digest shows:

- alive: links whose state after the week's scans is `ok`, less the drifted ones;
- suspect: links failing but not yet confirmed (state `suspect`);
- confirmed dead: state `confirmed` (= the digest's newly confirmed + still dead);
- fixed: links that work again this week (state `fixed`);
- drifted: working links whose page changed (the digest's "content changed" section).

`render_chart(series)` draws them with matplotlib (Agg backend, no display) for Slack's
thumbnail (~360 px wide): working links as a band on top, the problem series as thick lines
below with their latest value written at the line's end, large type.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from pagetrail.store.db import Store
from pagetrail.store.digests import run_summaries
from pagetrail.tools.scan.digest import ChannelDigest, stored_digest

SERIES = ("alive", "suspect", "confirmed", "fixed", "drifted")
LABELS = {"alive": "working", "suspect": "suspect", "confirmed": "confirmed dead",
          "fixed": "fixed", "drifted": "content changed"}
# On the picture: short words, so that they stay large at thumbnail size.
SHORT = {"alive": "working", "suspect": "suspect", "confirmed": "dead", "fixed": "fixed",
         "drifted": "changed"}
# Colour-blind-safe (Okabe–Ito); dead is the strongest.
COLOURS = {"alive": "#009E73", "suspect": "#E69F00", "confirmed": "#D55E00",
           "fixed": "#0072B2", "drifted": "#CC79A7"}
RECORDED = ("ready", "partial", "posted")
DEFAULT_WEEKS = 8


def health_counts(digest: ChannelDigest) -> dict[str, int]:
    """The week's counts of one channel digest, summed over its watched targets."""
    counts = dict.fromkeys(SERIES, 0)
    for scan in digest.scans:
        states = scan.states
        drifted = len(scan.drifted)
        counts["alive"] += max(0, states.get("ok", 0) - drifted)
        counts["suspect"] += states.get("suspect", 0)
        counts["confirmed"] += states.get("confirmed", 0)
        counts["fixed"] += states.get("fixed", 0)
        counts["drifted"] += drifted
    return counts


@dataclass
class Trend:
    channel: str
    periods: list[str] = field(default_factory=list)  # ISO weeks, oldest first
    series: dict[str, list[int]] = field(default_factory=lambda: {s: [] for s in SERIES})

    def latest(self) -> dict[str, int]:
        return {name: values[-1] for name, values in self.series.items() if values}

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "periods": self.periods, "series": self.series}


def trend_of(digests: list[ChannelDigest], channel: str, weeks: int = DEFAULT_WEEKS) -> Trend:
    """The trend of digests (one a period: the last given wins), the last `weeks` periods."""
    by_period: dict[str, ChannelDigest] = {}
    for digest in digests:
        by_period[digest.period] = digest
    trend = Trend(channel)
    for period in sorted(by_period)[-weeks:]:
        trend.periods.append(period)
        for name, value in health_counts(by_period[period]).items():
            trend.series[name].append(value)
    return trend


def stored_trend(store: Store, channel: str, weeks: int = DEFAULT_WEEKS) -> Trend:
    """The channel's trend from its recorded digest runs (the newest run of each week; a
    summary from an older layout gives no point for that week)."""
    digests = [d for d in map(stored_digest, run_summaries(store, channel, RECORDED))
               if d is not None]
    return trend_of(digests, channel, weeks)


def render_chart(trend: Trend, *, width_px: int = 720, height_px: int = 400) -> bytes:
    """The trend as a PNG (bytes). Readable at half size: 2× Slack's thumbnail width."""
    import matplotlib

    matplotlib.use("Agg")  # no display; safe in servers and workers
    from matplotlib.figure import Figure

    dpi = 100
    figure = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    top, bottom = figure.subplots(2, 1, sharex=True,
                                  gridspec_kw={"height_ratios": [1, 2.3], "hspace": 0.12})
    x = list(range(len(trend.periods)))
    labels = [p.split("-")[-1] for p in trend.periods]  # "W07"

    alive = trend.series["alive"]
    top.fill_between(x, alive, color=COLOURS["alive"], alpha=0.35, linewidth=0)
    top.plot(x, alive, color=COLOURS["alive"], linewidth=3,
             marker="o" if len(x) == 1 else None, markersize=8)  # one week: a dot
    top.set_ylim(0, max(alive, default=0) * 1.25 or 1)
    top.set_yticks([])
    latest_alive = alive[-1] if alive else 0
    top.annotate(f"{latest_alive:,} {SHORT['alive']}", xy=(x[-1] if x else 0, latest_alive),
                 xytext=(10, 0), textcoords="offset points", va="center", fontsize=16,
                 fontweight="bold", color=COLOURS["alive"], annotation_clip=False)

    problems = ("confirmed", "suspect", "drifted", "fixed")
    peak = max((v for name in problems for v in trend.series[name]), default=0)
    for name in problems:
        values = trend.series[name]
        bottom.plot(x, values, color=COLOURS[name], linewidth=3.5, marker="o", markersize=6,
                    solid_capstyle="round", clip_on=False)
    # Latest values at the right edge, spread apart when they (nearly) coincide.
    latest = {name: trend.series[name][-1] if x else 0 for name in problems}
    for name, y in label_positions(latest, gap=max(1.0, peak) * 0.17).items():
        bottom.annotate(f"{latest[name]} {SHORT[name]}", xy=(x[-1] if x else 0, y),
                        xytext=(10, 0), textcoords="offset points", va="center",
                        fontsize=16, fontweight="bold", color=COLOURS[name],
                        annotation_clip=False)
    bottom.set_ylim(0, max(1.0, peak * 1.15))
    bottom.yaxis.get_major_locator().set_params(integer=True)
    bottom.set_xticks(x, labels, fontsize=15)
    bottom.tick_params(axis="y", labelsize=14)
    for axis in (top, bottom):
        for side in ("top", "right"):
            axis.spines[side].set_visible(False)
        axis.set_xlim(-0.3, max(0.3, len(x) - 0.7))
    bottom.grid(axis="y", color="#dddddd", linewidth=1)
    bottom.set_axisbelow(True)
    span = "this week" if len(x) == 1 else f"last {len(x)} weeks"
    figure.suptitle(f"Link health, {span}", fontsize=19, fontweight="bold",
                    x=0.02, ha="left")
    figure.subplots_adjust(left=0.08, right=0.7, top=0.86, bottom=0.1)
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=dpi)
    return out.getvalue()


def label_positions(values: dict[str, int], gap: float) -> dict[str, float]:
    """y positions for end-of-line labels: at their values, pushed down to be `gap` apart,
    then the whole stack lifted so that none is below zero (pure)."""
    order = sorted(values, key=lambda n: -values[n])
    placed: dict[str, float] = {}
    previous: float | None = None
    for name in order:
        y = float(values[name])
        if previous is not None and previous - y < gap:
            y = previous - gap
        placed[name] = previous = y
    lift = max(0.0, -min(placed.values(), default=0.0))
    return {name: y + lift for name, y in placed.items()}
