"""A channel digest as the Slack formatter's view (pure): counts summed over its watches,
newly confirmed dead links first (they carry suggestions), then the newly failing ones,
then the pages whose content changed."""

from __future__ import annotations

from pagetrail import ChannelDigest, DigestLink
from pagetrail.bot.blocks import DeadLinkView, DigestView, DriftView


def _dead_view(link: DigestLink) -> DeadLinkView:
    recovery = link.recovery
    suggestion = recovery.url if recovery is not None and recovery.url else None
    return DeadLinkView(
        url=link.url, verdict=link.verdict, confirmed=link.state == "confirmed",
        pages=[source.page_url for source in link.found_on],
        suggestion=suggestion,
        confidence=float(recovery.confidence or 0.0) if recovery is not None else 0.0,
        kind=(recovery.kind or "") if recovery is not None else "",
    )


def digest_view(digest: ChannelDigest) -> DigestView:
    """The channel's digest as the formatter's view: counts summed over its watches, newly
    confirmed dead links first (they carry suggestions), then the newly failing ones."""
    view = DigestView(channel=digest.channel, period=digest.period,
                      targets=[s.target for s in digest.scans])
    seen: set[str] = set()
    for scan in digest.scans:
        view.checked += scan.urls_checked
        # Counts from the scan's states: the listed sections are clipped, and they hold every
        # link in the state (a link suspect for two scans is listed in both).
        counts = scan.counts
        view.suspect += counts["suspect"]
        view.confirmed_dead += counts["confirmed"]
        view.fixed += counts["fixed"]
        view.flapping += counts["flapping"]
        if scan.error:
            view.errors.append(f"{scan.target}: {scan.error}")
        for outcome, count in scan.captures.items():
            view.captures[outcome] = view.captures.get(outcome, 0) + count
    for group in ("newly_confirmed", "suspect"):
        for scan in digest.scans:
            for link in getattr(scan, group):
                if link.url not in seen:
                    seen.add(link.url)
                    view.dead.append(_dead_view(link))
    for scan in digest.scans:
        for item in scan.drifted:
            if item.url not in seen:
                seen.add(item.url)
                view.drifted.append(DriftView(
                    url=item.url, similarity=item.similarity,
                    archived_title=item.archived_title, live_title=item.live_title,
                    memento_url=item.memento_url,
                    memento_date=f"{item.memento_datetime:%Y-%m-%d}"))
    return view
