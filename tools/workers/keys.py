"""What names a job: its kind and its natural key (pure). The bottom of tools/workers:
every other module of it may import this one, and it imports none of them."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

JobKind = Literal["check", "recover", "scan", "page", "digest"]
KINDS: tuple[JobKind, ...] = ("check", "recover", "scan", "page", "digest")
RECOVER_FIELDS = ("url", "source_url", "anchor", "context", "date")
# A batch's second recovery of a link it answered with no live page (tools.recovery.revisit):
# another job than the first, so that both are kept and a rerun resumes either.
REVISIT_FIELD = "revisit"


def job_key(kind: JobKind, item: dict[str, Any]) -> str:
    """The natural key of a job: what makes two deliveries the same job."""
    if kind == "check":
        identity: dict[str, Any] = {"batch": item.get("batch", ""), "url": item["url"]}
    elif kind == "recover":
        identity = {name: item.get(name) or None for name in RECOVER_FIELDS}
        if item.get(REVISIT_FIELD):  # only when set: every first recovery keeps its key
            identity[REVISIT_FIELD] = str(item[REVISIT_FIELD])
    elif kind == "page":
        identity = {"scan": item["scan"], "url": item["url"]}
    else:
        identity = {"request": item["request"]}
    payload = json.dumps({"kind": kind, **identity}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()
