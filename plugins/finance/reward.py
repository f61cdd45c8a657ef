"""The finance reward: answers scored by value and by evidence page, accounting checks, and the report's traceability.

    answer_value   share of questions answered right by value: a numeric answer within the
                   relative tolerance (same unit family, explicit scale; a compound rate by a
                   formula with a power or root), a prose answer that says what the gold must
                   contain (its yes or no, its figures, its named items; see
                   ``plugins.finance.questions``); a prose gold with nothing to check counts
                   for the page only
    answer_page    share of all questions answered with a gold evidence page
    checks         share of accounting identities that hold on the task's filings
                   (``plugins.finance.checks``); 0 when nothing could be compared
    report         share of a report's figures that trace to a stored value or a recorded
                   derivation, 0 when the report states any number that cites no figure;
                   counted only when the task asks for a report

    reward = weighted mean of the components counted (weights 0.4 answer_value, 0.2
    answer_page, 0.2 report; components with nothing to score are left out). ``checks`` is
    recorded with weight 0: the filings are ingested at set-up, so the identities hold or not
    whatever the agent does, and counting them gave an episode that did nothing 0.25-0.5. It
    counts (weight 1) only for a task with neither questions nor a report. A run that answers
    nothing scores 0 on both answer parts. ``correct``: every counted component is 1.

A task whose set-up failed (missing or unreadable task file) or none of whose filings could be
read (each ingested with status ``error``: not a PDF, truncated, encrypted) gets "not
applicable" (``core.reward``): there was nothing the agent could have done (version 2; version
1 scored the unreadable-filings case 0). Version 3: the narrative's numbers are read by
``plugins.finance.narrative_numbers`` (every number however written: ``999_000 million``,
``ninety-five percent``, ``12k``, ``(3.4)``, full-width digits; names that are not numbers come
from the filings database, not from figures.json), so a narrative number that cites no figure,
or one whose value differs from the cited figure at its printed precision, lowers "report
traced"; version 2 skipped any word with ``_`` and numbers written as words. Version 4: any such
number scores the report 0 (version 3 added one to the share's denominator for each, so a report
with an invented number still scored 0.8): ``write_report`` refuses a report with one, so only an
edit after it can make one. Version 5: prose answers are graded by what they say, not by their
page alone (version 4 gave a wrong text answer on the right page full credit), and a compound
rate needs a compound formula (an arithmetic mean of yearly rates was accepted for a CAGR).
``REWARD_VERSION`` changes whenever this definition does.
"""

from __future__ import annotations

from typing import Any

from core.api import RewardComponent, RewardResult
from plugins.finance.checks import CheckSummary
from plugins.finance.questions import Question, score_answer

WEIGHTS = {"answer_value": 0.4, "answer_page": 0.2, "report": 0.2}
#: The version of this reward, stored with every verdict (``RewardResult.version``).
REWARD_VERSION = "finance-qa/5"


def grade(questions: list[Question], answers: dict[str, dict[str, Any]], checks: CheckSummary, tolerance: float,
          report: tuple[float, dict[str, Any]] | None) -> RewardResult:
    """Combine the parts into a scored ``RewardResult`` (``REWARD_VERSION``).

    Args:
        questions: the task's questions with gold answers.
        answers: recorded answers by question id.
        checks: the identities on the task's filings.
        tolerance: relative tolerance for values.
        report: ``(share traced, detail)`` when the report is scored, else None.
    """
    components: dict[str, RewardComponent] = {}
    per_question = {q.qid: score_answer(q, answers.get(q.qid), tolerance) for q in questions}
    numeric = [q for q in questions if per_question[q.qid].value_correct is not None]  # numbers, and prose with something to check
    if numeric:
        right = [q.qid for q in numeric if per_question[q.qid].value_correct]
        components["answer_value"] = RewardComponent(value=len(right) / len(numeric), weight=WEIGHTS["answer_value"], detail={
            "correct": right, "numeric_questions": sum(q.gold_value is not None for q in numeric),
            "text_questions": sum(q.gold_value is None for q in numeric), "tolerance": tolerance,
            "scores": {q.qid: per_question[q.qid].detail for q in numeric},
            "page_only": [q.qid for q in questions if per_question[q.qid].value_correct is None]})
    if questions:
        right_pages = [q.qid for q in questions if per_question[q.qid].page_correct]
        components["answer_page"] = RewardComponent(value=len(right_pages) / len(questions), weight=WEIGHTS["answer_page"],
                                                    detail={"correct": right_pages, "questions": len(questions)})
    failed = [f"{r.doc_name} {r.period_label}: {r.name} ({r.lhs:,.0f} vs {r.rhs:,.0f})" for r in checks.results if not r.passed]
    components["checks"] = RewardComponent(value=checks.score, weight=0.0 if questions or report is not None else 1.0, detail={
        "status": checks.status, "compared": len(checks.results), "failed": failed, "uncompared_documents": checks.uncompared})
    if report is not None:
        components["report"] = RewardComponent(value=report[0], weight=WEIGHTS["report"], detail=report[1])
    parts = []
    if numeric:
        parts.append(f"{len(components['answer_value'].detail['correct'])}/{len(numeric)} values right")
    if questions:
        parts.append(f"{len(components['answer_page'].detail['correct'])}/{len(questions)} evidence pages right")
    parts.append(f"checks {checks.status} ({sum(r.passed for r in checks.results)}/{len(checks.results)})")
    if report is not None:
        parts.append(f"report {report[0]:.0%} traced")
    counted = [c for c in components.values() if c.weight > 0]
    return RewardResult.scored(REWARD_VERSION, components, correct=all(c.value == 1.0 for c in counted), summary=", ".join(parts))
