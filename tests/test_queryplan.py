"""The query plan (pure): cheapest and best first, anchors only when usable, expansion per
source as configured, method filter and the query budget."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pagetrail.tools.evidence.queryplan import QueryEvidence, plan_queries
from pagetrail.tools.settings import Settings


def evidence(**overrides: object) -> QueryEvidence:
    fields: dict[str, object] = dict(
        title="Solar farms double in a year",
        tags=["solar", "energy"],
        ls5=["solar", "farms", "midwest", "output", "doubled"],
        ls7=["solar", "farms", "midwest", "output", "doubled", "grid", "panels"],
        anchor="solar farm boom",
        anchor_usable=True,
        expansion_terms={"context": ["midwest", "grid", "panels"],
                         "url": ["energy", "solar", "farms"],
                         "memento": ["output", "doubled", "year"]},
        url_terms=["energy", "solar", "farms"],
        lnls=["solar", "boom", "report", "farms"],
    )
    fields.update(overrides)
    return QueryEvidence(**fields)  # type: ignore[arg-type]


def test_title_first_and_link_neighbourhood_last():
    plan = plan_queries(evidence())
    methods = [q.method for q in plan]
    assert methods[0] == "TI" and methods[-1] == "LNLS"
    assert [q.stage for q in plan] == sorted(q.stage for q in plan)
    assert methods.index("LS5") < methods.index("LS7")
    assert methods.index("ANC") < methods.index("ANC+")


def test_expansion_queries_per_source_follow_the_setting():
    one = [q for q in plan_queries(evidence(), expansion_per_source=1) if q.method == "ANC+"]
    two = [q for q in plan_queries(evidence(), expansion_per_source=2) if q.method == "ANC+"]
    assert len(one) == 3 and len(two) == 6
    assert all(q.text.startswith("solar farm boom ") for q in two)
    # A term already in the anchor is no expansion ('solar' from the URL is skipped).
    assert "solar farm boom solar" not in {q.text for q in two}
    assert plan_queries(evidence(), expansion_per_source=0) == [
        q for q in plan_queries(evidence()) if q.method != "ANC+"]


def test_unusable_anchor_gives_no_anchor_query():
    plan = plan_queries(evidence(anchor="click here", anchor_usable=False))
    assert not {"ANC", "ANC+"} & {q.method for q in plan}


def test_method_filter_and_budget():
    only_url = plan_queries(evidence(), methods=frozenset({"URL"}))
    assert [q.method for q in only_url] == ["URL"]
    assert only_url[0].text == "energy solar farms"
    assert len(plan_queries(evidence(), max_queries=4)) == 4
    assert plan_queries(QueryEvidence()) == []


def test_expansion_setting_is_bounded():
    assert Settings(expansion_per_source=5).expansion_per_source == 5
    with pytest.raises(ValidationError):
        Settings(expansion_per_source=11)
