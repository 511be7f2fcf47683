"""A world whose search engine has indexed less: the hardest kind of web for pagetrail.

    python bench/thin_index.py WORLD OUT --unindex 0.4 [--seed 1]

Writes OUT, a copy of the format-2 WORLD (blobs and archive linked, not copied) in which each
live HTML page still in the search index is dropped from it (`"indexed": false`, FORMAT.md)
with probability `--unindex`, seeded. Everything else — the pages, the archive, the cases —
is unchanged, so `pagetrail eval OUT` against `pagetrail eval WORLD` shows what a thinner index
costs. A stress test of a world's own cases, never a world to fit anything on.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path


def thin(world: Path, out: Path, unindex: float, seed: int) -> tuple[int, int]:
    """Write the thinned world; (pages dropped from the index, pages indexed before)."""
    meta = json.loads((world / "world.json").read_text(encoding="utf-8"))
    if meta.get("format") != 2:
        raise SystemExit(f"{world}: a format-2 world is needed (indexed: false is format 2)")
    out.mkdir(parents=True, exist_ok=False)
    for name in ("blobs", "archive"):
        (out / name).symlink_to((world / name).resolve())
    for name in ("world.json", "cases.jsonl", "social.jsonl", "SOURCES.md"):
        if (world / name).exists():
            shutil.copyfile(world / name, out / name)
    rng = random.Random(seed)
    dropped = indexed = 0
    with (world / "live.jsonl").open(encoding="utf-8") as src, \
            (out / "live.jsonl").open("w", encoding="utf-8") as dst:
        for line in src:
            resource = json.loads(line)
            html = "html" in str(resource.get("headers", {}).get("Content-Type", ""))
            if resource.get("status") == 200 and html and resource.get("indexed", True):
                indexed += 1
                if rng.random() < unindex:
                    resource["indexed"] = False
                    dropped += 1
            dst.write(json.dumps(resource, ensure_ascii=False) + "\n")
    return dropped, indexed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("world", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--unindex", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    dropped, indexed = thin(args.world, args.out, args.unindex, args.seed)
    print(f"{args.out}: {dropped} of {indexed} indexed pages dropped from the index")


if __name__ == "__main__":
    main()
