"""Questions with gold answers (FinanceBench format) and scoring an answer by value and by page.

FinanceBench (Islam et al., 2023, "FinanceBench: A New Benchmark for Financial Question
Answering") gives each question a gold ``answer`` string and ``evidence`` pages (0-based).
Here pages are 1-based everywhere, so a gold page is ``evidence_page_num + 1``.

Value scoring needs the unit and scale explicit on both sides. The gold's come from the
question ("Answer in USD millions", "in units of percents") and the answer string ("$1577.00",
"1.9%", "24.26"); an answer states its own (``value=1577, unit="USD", scale="millions"``). Both
are brought to the base unit (USD, percent, or a plain ratio) and compared with a relative
tolerance (1% by default: gold answers are rounded, e.g. "$8.70" billions for 8,738 millions).
Questions whose gold is prose (FinanceBench's domain-relevant and novel-generated types) are
scored by page only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugins.finance.numbers import scale_multiplier

#: Units an answer may state, grouped into families that can be compared with each other.
UNIT_FAMILY = {"USD": "USD", "USD/share": "USD/share", "shares": "shares", "percent": "percent",
               "ratio": "ratio", "days": "ratio", "times": "ratio", "text": "text"}


@dataclass
class Question:
    """One question and its gold answer.

    Attributes:
        qid: the question's id (``financebench_id``).
        doc_name: the filing it is about.
        text: the question.
        kind: FinanceBench's ``question_type``.
        gold_text: the gold answer as written.
        gold_value: the gold in base units (USD, percent points, or a ratio), None when prose.
        gold_unit: the unit family of ``gold_value`` ("USD", "percent", "ratio"), None when prose.
        gold_pages: 1-based evidence pages.
    """

    qid: str
    doc_name: str
    text: str
    kind: str
    gold_text: str
    gold_value: float | None
    gold_unit: str | None
    gold_pages: list[int] = field(default_factory=list)


def gold_number(question: str, answer: str, kind: str) -> tuple[float | None, str | None]:
    """The gold value in base units and its unit family, or ``(None, None)`` for prose answers.

    Only FinanceBench's ``metrics-generated`` answers are numbers ("$1577.00", "24.26",
    "1.9%"); the scale comes from the question ("USD millions", "USD billions").
    """
    if kind != "metrics-generated":
        return None, None
    match = re.match(r"^\s*\$?\s*(-?[\d,]*\.?\d+)\s*(%)?", answer)
    if not match:
        return None, None
    number = float(match[1].replace(",", ""))
    q = question.lower()
    if match[2] or "percent" in q:
        return number, "percent"
    if "usd" in q or match.group(0).strip().startswith("$"):
        scale = 1e9 if "billion" in q else 1e6 if "million" in q else 1e3 if "thousand" in q else 1.0
        return number * scale, "USD"
    return number, "ratio"


def load_questions(path: Path, ids: list[str] | None = None) -> list[Question]:
    """Read a FinanceBench-format JSON Lines file.

    Args:
        path: the ``questions.jsonl`` file.
        ids: keep only these ids, in this order (all, in file order, when None).

    Raises:
        ValueError: an id in ``ids`` is not in the file, or a line is not JSON (with its number).
    """
    found: dict[str, Question] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
        value, unit = gold_number(raw["question"], raw["answer"], raw.get("question_type", ""))
        pages = sorted({int(e["evidence_page_num"]) + 1 for e in raw.get("evidence", [])})
        found[raw["financebench_id"]] = Question(raw["financebench_id"], raw["doc_name"], raw["question"],
                                                 raw.get("question_type", ""), raw["answer"], value, unit, pages)
    if ids is None:
        return list(found.values())
    missing = [i for i in ids if i not in found]
    if missing:
        raise ValueError(f"question ids not in {path.name}: {', '.join(missing)}")
    return [found[i] for i in ids]


def base_value(value: float, unit: str, scale: str | float) -> tuple[float, str]:
    """An answer's value in base units and its unit family (``1577, "USD", "millions"`` -> ``1.577e9, "USD"``).

    Raises:
        ValueError: unknown unit or scale (the message lists the valid ones).
    """
    if unit not in UNIT_FAMILY:
        raise ValueError(f"unknown unit {unit!r}; use one of {', '.join(UNIT_FAMILY)}")
    return value * scale_multiplier(scale), UNIT_FAMILY[unit]


@dataclass
class Score:
    """One answer scored.

    Attributes:
        value_correct: within tolerance and the same unit family; None when the gold is prose.
        page_correct: the answer's page is one of the gold evidence pages.
        detail: what was compared.
    """

    value_correct: bool | None
    page_correct: bool
    detail: dict[str, Any]


def score_answer(question: Question, answer: dict[str, Any] | None, tolerance: float = 0.01) -> Score:
    """Score one recorded answer (``None`` when the question was not answered: both parts wrong)."""
    if answer is None:
        return Score(False if question.gold_value is not None else None, False, {"answered": False})
    page_ok = answer.get("document") == question.doc_name and answer.get("page") in question.gold_pages
    detail: dict[str, Any] = {"answered": True, "page": answer.get("page"), "gold_pages": question.gold_pages}
    if question.gold_value is None:
        return Score(None, page_ok, detail)
    if answer.get("value") is None:
        return Score(False, page_ok, {**detail, "why": "no numeric value given"})
    got, family = base_value(float(answer["value"]), answer["unit"], answer.get("scale", "units"))
    ok = family == question.gold_unit and abs(got - question.gold_value) <= tolerance * abs(question.gold_value)
    return Score(ok, page_ok, {**detail, "value": got, "unit": family, "gold_value": question.gold_value,
                               "gold_unit": question.gold_unit})
