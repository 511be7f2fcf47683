"""tools/policy.py: the one place of the recovery's thresholds, and who reads it."""

from __future__ import annotations

import json

import pytest

from pagetrail.tools import policy
from pagetrail.tools.settings import Settings


def test_budget_defaults_are_the_settings_defaults():
    from pagetrail.tools.recovery.context import Budget

    settings = Settings()
    budget = Budget()
    assert (budget.max_queries, budget.max_candidates, budget.seconds) == (
        settings.max_queries, settings.max_candidates, settings.recovery_seconds)
    assert Budget.from_settings(settings) == budget


def test_the_evaluator_judges_confidence_with_the_policy():
    from pagetrail.tools.eval import evaluate

    assert evaluate.CONFIDENT is policy.CONFIDENT
    assert policy.CONFIDENT == policy.RECOMMEND_AT


def test_answer_rules():
    assert policy.recommends(policy.RECOMMEND_AT)
    assert not policy.recommends(policy.RECOMMEND_AT - 0.01)
    assert policy.weak_anchor_confidence(0.9) == policy.WEAK_ANCHOR_CLAMP
    assert policy.weak_anchor_confidence(0.1) == 0.1
    assert not policy.recommends(policy.weak_anchor_confidence(1.0))  # never recommended
    assert policy.archived_confidence(None) == policy.ARCHIVED_AS_ANSWER
    assert policy.archived_confidence(0.2) == policy.ARCHIVED_AS_ANSWER
    assert policy.archived_confidence(0.8) == policy.ARCHIVED_AS_FALLBACK


def test_direct_evidence_floors_are_the_policys():
    from pagetrail.tools.models import Scores
    from pagetrail.tools.ranking.rank import direct_evidence_floor

    assert direct_evidence_floor(Scores(pick=1.0)) == policy.PICK_FLOOR
    assert direct_evidence_floor(Scores(redirect=1.0, same_site=True)) == policy.REDIRECT_FLOOR
    assert direct_evidence_floor(Scores(rule_support=1.0, same_site=True)) == pytest.approx(
        policy.RULE_FLOOR + policy.RULE_SUPPORT)


def test_fitted_values_come_from_the_one_data_file(tmp_path):
    from pagetrail.tools.ranking import rank

    assert rank.CALIBRATION_FILE == policy.FITTED_FILE
    assert policy.fitted(tmp_path / "none.json") is None
    path = tmp_path / "fitted.json"
    path.write_text(json.dumps({"format": 1, "intercept": -1.0, "coefficients": {"final": 2}}))
    assert policy.fitted(path) == {"format": 1, "intercept": -1.0, "coefficients": {"final": 2}}
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        policy.fitted(path)


# Modules of the recovery and the ranking that hold no policy of their own (the lab code —
# classifier, related pages, alias inference — keeps its own, fitted, thresholds).
LAB = {"classify.py", "related.py", "aliases.py"}


def _policy_literals(path):
    """Module-level numeric constants and comparisons with a fractional literal (the
    thresholds a module would keep of its own)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(
                node.value, ast.Constant) and type(node.value.value) in (int, float):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{path.name}:{node.lineno} {t.id}" for t in targets
                      if isinstance(t, ast.Name) and t.id.isupper()]
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for value in [node.left, *node.comparators]:
                if isinstance(value, ast.Constant) and type(value.value) is float \
                        and value.value not in (0.0, 1.0):
                    found.append(f"{path.name}:{node.lineno} {value.value}")
    return found


def test_no_threshold_outside_the_policy():
    from pathlib import Path

    import pagetrail.tools as tools

    root = Path(tools.__file__).parent
    paths = [p for folder in ("ranking", "recovery") for p in (root / folder).rglob("*.py")
             if p.name not in LAB]
    literals = [hit for path in paths for hit in _policy_literals(path)]
    assert literals == []


def test_one_source_weight_table():
    from pathlib import Path

    import pagetrail.tools as tools

    root = Path(tools.__file__).parent
    tables = [p.name for folder in ("ranking", "recovery") for p in (root / folder).rglob("*.py")
              if '"anchor": 2.0' in p.read_text(encoding="utf-8")]
    assert tables == []
    assert set(policy.SOURCE_WEIGHTS) == {"context_similarity", "text_match"}
    for weights in policy.SOURCE_WEIGHTS.values():
        assert set(weights) == {"anchor", "context", "linking", "url"}
