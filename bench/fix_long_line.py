"""How long `pagetrail fix` takes to read the links of a document of one long line.

    python bench/fix_long_line.py [--bytes 5000000] [--formats html,markdown,rst,asciidoc,text]

Builds, for each format, a document of a single line of about `--bytes` characters (the
default is the file size cap of `fix`, 5 MB) dense with links — one every ~100 characters,
among prose, code spans and attributes that are not links — and times `extract_links` on it
(the link extraction a fix runs on each file, the parser's confirmation included). Prints the
seconds and links found per format. The target (issue 37): the 5 MB HTML line under 2 s.
"""

from __future__ import annotations

import argparse
import time

from pagetrail.tools.fix.extract import extract_links

UNITS = {
    "html": '<a title="see href=https://t.example/{n}" href="https://a.example/p/{n}?x=1&amp;y=2">'
            "page {n}</a> text <code>https://c.example/{n}</code> ",
    "markdown": "see [page {n}](https://a.example/p/{n}) and `https://c.example/{n}` and "
                "https://b.example/{n}. ",
    "rst": "see `page {n} <https://a.example/p/{n}>`_ and ``https://c.example/{n}`` and "
           "https://b.example/{n} . ",
    "asciidoc": "see https://a.example/p/{n}[page {n}] and `https://c.example/{n}` and "
                "link:https://b.example/{n}[b] ",
    "text": "see https://a.example/p/{n} (and https://b.example/{n}), ",
}


def document(fmt: str, size: int) -> str:
    parts: list[str] = []
    total = n = 0
    while total < size:
        unit = UNITS[fmt].format(n=n)
        parts.append(unit)
        total += len(unit)
        n += 1
    text = "".join(parts)
    return f"<p>{text}</p>\n" if fmt == "html" else text + "\n"


def measure(fmt: str, size: int) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, links found, characters) for one format's document (CPU
    time too: on a shared machine the wall clock also counts other people's work)."""
    text = document(fmt, size)
    started, cpu = time.perf_counter(), time.process_time()
    links = extract_links(text, fmt)
    return (time.perf_counter() - started, time.process_time() - cpu, len(links), len(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=5_000_000)
    parser.add_argument("--formats", default="html,markdown,rst,asciidoc,text")
    args = parser.parse_args()
    for fmt in args.formats.split(","):
        seconds, cpu, links, chars = measure(fmt.strip(), args.bytes)
        print(f"{fmt:9} {chars / 1e6:5.2f} MB one line  {links:7d} links  {seconds:6.2f} s "
              f"({cpu:.2f} s CPU)")


if __name__ == "__main__":
    main()
