"""Batch files of dead links to recover (`pagetrail recover --batch`), and their answers.

Input: CSV with a header row, or JSON Lines; columns/keys url (required), source_url, anchor,
context, date (ISO). Output: one row per input row, in input order, JSONL or CSV.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from pagetrail.store.jobs import JobRecord
from pagetrail.tools.workers.jobs import BadJobInput, recover_input

CSV_COLUMNS = ("url", "source_url", "anchor", "context", "date", "status", "answer",
               "best_url", "best_kind", "confidence", "archived_url", "error")


def batch_format(path: str | Path) -> str:
    """The format of a batch file from its name: csv or jsonl."""
    return "csv" if str(path).lower().endswith(".csv") else "jsonl"


def read_batch(path: str | Path) -> list[dict[str, Any]]:
    """The batch's recovery inputs. BadJobInput naming file:line for a bad row."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise BadJobInput(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise BadJobInput(f"{path}: not UTF-8 text") from None
    rows: list[tuple[int, Any]] = []
    if batch_format(path) == "csv":
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames or "url" not in reader.fieldnames:
            raise BadJobInput(f"{path}:1: the CSV header needs a 'url' column")
        rows = [(reader.line_num, row) for row in reader]
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise BadJobInput(f"{path}:{number}: not JSON ({exc.msg})") from None
    items = []
    for number, row in rows:
        if not isinstance(row, dict):
            raise BadJobInput(f"{path}:{number}: expected an object with a 'url'")
        try:
            items.append(recover_input(row))
        except BadJobInput as exc:
            raise BadJobInput(f"{path}:{number}: {exc}") from None
    return items


def answer_row(record: JobRecord) -> dict[str, Any]:
    """One output row: the input, the outcome, and (when done) the recovery."""
    row: dict[str, Any] = {"input": record.input, "status": record.status}
    if record.status == "done":
        row["recovery"] = record.result
    else:
        row["error"] = record.error
    return row


def flat_row(record: JobRecord) -> dict[str, Any]:
    """The CSV view: the input's fields, the answer, the best live candidate, the archive."""
    result = record.result or {}
    candidates = [c for c in result.get("candidates", []) if c.get("kind") != "archived"]
    best = candidates[0] if candidates else {}
    memento = result.get("memento") or {}
    return {**{name: record.input.get(name, "") for name in CSV_COLUMNS[:5]},
            "status": record.status, "answer": result.get("answer", ""),
            "best_url": best.get("url", ""), "best_kind": best.get("kind", ""),
            "confidence": best.get("confidence", ""),
            "archived_url": memento.get("memento_url", ""),
            "error": record.error}


def write_answers(records: Sequence[JobRecord], out: IO[str], fmt: str) -> None:
    """Write the job records' answers to `out` as csv or jsonl."""
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=list(CSV_COLUMNS))
        writer.writeheader()
        writer.writerows(flat_row(r) for r in records)
    else:
        for record in records:
            out.write(json.dumps(answer_row(record), ensure_ascii=False) + "\n")


def failed(records: Iterable[JobRecord]) -> int:
    """How many of the job records failed."""
    return sum(1 for r in records if r.status != "done")
