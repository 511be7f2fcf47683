"""`pagetrail recover --batch FILE`: many recoveries, in-process or on workers, resumable."""

from __future__ import annotations

import sys
from contextlib import nullcontext

from pagetrail.cli.common import run_async
from pagetrail.cli.scan_cmd import progress_bar, show_progress
from pagetrail.lab import batch_format, failed_jobs, read_batch, write_answers


def recover_batch(path: str, output: str | None, *, quiet: bool = False) -> int:
    """Recover every link of the batch; answers in input order. Links answered by an earlier
    run (the store's job table) are not recovered again. Exit 1 when some failed."""
    from pagetrail import get_settings, open_store
    from pagetrail.lab import get_dispatcher

    items = read_batch(path)
    settings = get_settings()
    dispatcher = get_dispatcher(settings, open_store(settings.database_url))
    with progress_bar(show_progress(quiet), "recovering links") as progress:
        records = run_async(dispatcher.recover(items, progress=progress))
    fmt = batch_format(output) if output else "jsonl"
    with open(output, "w", encoding="utf-8", newline="") if output else nullcontext(
            sys.stdout) as out:
        write_answers(records, out, fmt)
    bad = failed_jobs(records)
    print(f"{len(records)} links: {len(records) - bad} answered, {bad} failed",
          file=sys.stderr)
    return 1 if bad else 0
