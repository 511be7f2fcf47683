"""A fix's report as text (diff + summary table), JSON, SARIF 2.1.0, JUnit XML or GitHub
workflow annotations: pure functions of the FixReport."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import quoteattr

from pagetrail.tools.fix.run import VERDICTS, FixReport, LinkVerdict

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# Characters XML 1.0 cannot hold at all, even escaped (C0 controls but tab, CR, LF; lone
# surrogates; U+FFFE/U+FFFF): a URL or a path from a stranger's file may hold them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# Control characters (but tab, CR and LF) shown as \\xNN in text and annotations: a path or
# URL from a stranger's file must not drive the reader's terminal (escape sequences).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _xml_attr(text: str) -> str:
    """A quoted XML attribute value of `text`, each character XML cannot hold written as
    `\\xNN` (or `\\uNNNN`) so the report stays well-formed and says what was there."""
    return quoteattr(_NOT_XML.sub(_shown, text))


def _plain(text: str) -> str:
    return _CONTROL.sub(_shown, text)


def summary_table(report: FixReport) -> str:
    """Per file: how many links are alive, moved, … (and how many the diff rewrites)."""
    headers = ["file", *VERDICTS, "rewritten"]
    rows = [[_plain(f.path), *(str(f.counts.get(v, 0)) for v in VERDICTS), str(f.rewritten)]
            for f in report.files]
    totals = report.counts()
    rows.append(["total", *(str(totals[v]) for v in VERDICTS),
                 str(sum(f.rewritten for f in report.files))])
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(headers), *(line(r) for r in rows)]
    for problem in report.problems:
        out.append(_plain(f"{problem.path}: {problem.code}: {problem.message}"))
    out.append(f"{report.distinct_urls} distinct URLs ({report.resumed} answered before), "
               f"{report.requests} recovery requests, {report.checks} new addresses "
               f"checked, {report.timemaps} capture lists, "
               f"{report.seconds:.1f} s; {report.dead_left} dead link(s) left"
               + ("" if report.written else " (dry run: --write applies the diff)"))
    return "\n".join(out) + "\n"


def to_text(report: FixReport) -> str:
    """The unified diff, then the summary table."""
    return report.diff + ("\n" if report.diff else "") + summary_table(report)


def to_json(report: FixReport) -> str:
    """Every field of the report, plus counts per verdict and dead links left."""
    data = report.model_dump(mode="json")
    data["counts"] = report.counts()
    data["dead_left"] = report.dead_left
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _message(link: LinkVerdict) -> str:
    if link.verdict == "unfixable":
        return f"dead link {link.url}: {link.reason or 'no answer found'}"
    action = ("rewritten to" if link.written else "the diff rewrites it to" if link.rewritten
              else "could be")
    where = link.new_url or ""
    if link.verdict == "archived" and link.memento_date:
        where += f" (captured {link.memento_date:%Y-%m-%d})"
    return f"{link.verdict} link {link.url}: {action} {where}".rstrip()


def _problems(report: FixReport) -> list[LinkVerdict]:
    return [link for link in report.links
            if link.verdict in ("moved", "replacement", "archived", "unfixable")]


def to_sarif(report: FixReport, version: str = "0") -> str:
    """SARIF 2.1.0 (GitHub code scanning): a result per dead link, rewritten or not."""
    rules = [{"id": f"pagetrail/{kind}", "name": f"{kind.capitalize()}Link",
              "shortDescription": {"text": f"{kind} link"}}
             for kind in ("moved", "replacement", "archived", "unfixable")]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for link in _problems(report):
        rule = f"pagetrail/{link.verdict}"
        result: dict[str, Any] = {
            "ruleId": rule, "ruleIndex": index[rule],
            "level": "note" if link.written else (
                "error" if link.verdict == "unfixable" else "warning"),
            "message": {"text": _message(link)},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": quote(link.path.replace("\\", "/"))},
                "region": {"startLine": link.line}}}],
        }
        if link.new_url and not link.written:
            result["properties"] = {"suggestion": link.new_url}
        results.append(result)
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "pagetrail", "version": version, "rules": rules}},
        "results": results}]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def to_junit(report: FixReport) -> str:
    """JUnit XML: a test case per link, failing when it is still dead."""
    cases = []
    for link in report.links:
        name = _xml_attr(f"{link.path}:{link.line} {link.url}")
        if link.dead_left:
            cases.append(f"    <testcase classname={_xml_attr(link.path)} name={name}>"
                         f"<failure message={_xml_attr(_message(link))} "
                         f"type={_xml_attr(link.verdict)}/></testcase>")
        elif link.verdict in ("skipped", "excluded"):
            cases.append(f"    <testcase classname={_xml_attr(link.path)} name={name}>"
                         f"<skipped message={_xml_attr(link.reason)}/></testcase>")
        else:
            cases.append(f"    <testcase classname={_xml_attr(link.path)} name={name}/>")
    failures = report.dead_left
    skipped = sum(1 for link in report.links if link.verdict in ("skipped", "excluded"))
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            f"<testsuites><testsuite name=\"pagetrail fix\" tests=\"{len(report.links)}\" "
            f"failures=\"{failures}\" skipped=\"{skipped}\" errors=\"0\" "
            f"time=\"{report.seconds}\">\n" + "\n".join(cases)
            + "\n  </testsuite></testsuites>\n")


def _annotation_value(text: str) -> str:
    return _plain(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _annotation_property(text: str) -> str:
    return _annotation_value(text).replace(":", "%3A").replace(",", "%2C")


def to_github(report: FixReport) -> str:
    """GitHub workflow commands (`::warning file=…,line=…::message`), one per dead link."""
    lines = []
    for link in _problems(report):
        level = "notice" if link.written else (
            "error" if link.verdict == "unfixable" else "warning")
        lines.append(f"::{level} file={_annotation_property(link.path)},line={link.line},"
                     f"title={_annotation_property('pagetrail ' + link.verdict)}::"
                     f"{_annotation_value(_message(link))}")
    for problem in report.problems:
        lines.append(f"::warning file={_annotation_property(problem.path)}::"
                     f"{_annotation_value(problem.code + ': ' + problem.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(report: FixReport) -> str:
    """GitHub-flavoured Markdown (a job summary, a pull request's body): the summary table
    per file, then each dead link with what was found for it."""
    headers = ["file", *VERDICTS, "rewritten"]
    totals = report.counts()
    rows = [[f"`{_cell(f.path)}`", *(str(f.counts.get(v, 0)) for v in VERDICTS),
             str(f.rewritten)] for f in report.files]
    rows.append(["**total**", *(str(totals[v]) for v in VERDICTS),
                 str(sum(f.rewritten for f in report.files))])
    out = ["| " + " | ".join(headers) + " |", "|---" + "|--:" * (len(headers) - 1) + "|",
           *("| " + " | ".join(row) + " |" for row in rows), ""]
    problems = _problems(report)
    if problems:
        out += ["| where | link | verdict | new address |", "|---|---|---|---|"]
        out += [f"| `{_cell(link.path)}:{link.line}` | {_cell(link.url)} | {link.verdict}"
                f"{' (rewritten)' if link.written else ' (in the diff)' if link.rewritten else ''}"
                f" | {_cell(link.new_url or '')} |" for link in problems]
        out.append("")
    out += [f"- {_cell(p.path)}: {p.code}: {_cell(p.message)}" for p in report.problems]
    out.append(f"{report.distinct_urls} distinct URLs, {report.dead_left} dead link(s) left"
               + ("" if report.written else " (dry run)") + ".")
    return "\n".join(out) + "\n"


FORMATS = {"text": to_text, "json": to_json, "junit": to_junit, "github": to_github,
           "markdown": to_markdown}


def render(report: FixReport, fmt: str, version: str = "0") -> str:
    """The report in `fmt`: text (diff and summary), json, sarif, junit, github or
    markdown."""
    if fmt == "sarif":
        return to_sarif(report, version)
    return FORMATS[fmt](report)


__all__ = ["render", "summary_table", "to_github", "to_json", "to_junit", "to_markdown",
           "to_sarif", "to_text"]
