"""Questions with gold answers (FinanceBench format) and scoring an answer by value and by page.

FinanceBench (Islam et al., 2023, "FinanceBench: A New Benchmark for Financial Question
Answering") gives each question a gold ``answer`` string and ``evidence`` pages (0-based).
Here pages are 1-based everywhere, so a gold page is ``evidence_page_num + 1``.

Value scoring needs the unit and scale explicit on both sides. The gold's come from the
question ("Answer in USD millions", "in units of percents") and the answer string ("$1577.00",
"1.9%", "24.26"); an answer states its own (``value=1577, unit="USD", scale="millions"``). Both
are brought to the base unit (USD, percent, or a plain ratio) and compared with a relative
tolerance (1% by default: gold answers are rounded, e.g. "$8.70" billions for 8,738 millions).
A question that asks for a compound rate (CAGR, "compound annual growth") is right only when its
formula has a power or a root (``plugins.finance.formula``), or cites one fact (the filing prints
the rate): an average of yearly rates is not a compound rate, even when the two come close.

Questions whose gold is prose (FinanceBench's domain-relevant and novel-generated types) are
scored by what the gold must contain (``text_gold``): its yes or no, the figures it states in
digits (each found in the answer's text within the tolerance or at the gold's printed
precision; all of one or two, two thirds of more: ``figures_needed``; years, pages,
periods, list markers and number words are not figures: ``plugins.finance.narrative_numbers``
reads them), and, for a
short answer that names things ("United States, EMEA, APAC, and LACC"; "Customer deposits"),
each named item. An answer that states more than ``SHOTGUN_FACTOR`` times as many figures as the
gold (plus two) is not credited: listing every number on the page must not find the right one. A
prose gold with none of these (an explanation) is scored by page only, as before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugins.finance.formula import fact_ids, has_power
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


#: Words that ask for a compound rate: its formula needs a power or a root.
_COMPOUND = re.compile(r"\b(cagr|compound(?:ed)?(?:\s+annual)?(?:\s+growth)?|compounded)\b", re.IGNORECASE)
#: A gold answer's yes or no (FinanceBench writes "Yes, ...", "No. ...", "No the ...").
_POLARITY = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
#: An answer may state at most this many times the gold's figures (plus two).
SHOTGUN_FACTOR = 2
#: A gold of named items: at most this many, each of at most ``ITEM_WORDS`` words.
MAX_ITEMS, ITEM_WORDS = 8, 4


def asks_compound_rate(question: str) -> bool:
    """Whether the question asks for a compound rate (CAGR, compound annual growth)."""
    return bool(_COMPOUND.search(question))


@dataclass(frozen=True)
class TextGold:
    """What a prose gold answer says that an answer must say too (``text_gold``).

    Attributes:
        polarity: ``"yes"``, ``"no"``, ``"none"`` ("There are none") or None.
        figures: ``(value in base units, is a percent, printed decimals, scale)`` of each figure it states.
        items: the named items of a short answer that names things (lower case), else empty.
    """

    polarity: str | None
    figures: tuple[tuple[float, bool, int, float], ...]
    items: tuple[str, ...]

    @property
    def checkable(self) -> bool:
        """Whether there is anything to check beyond the page."""
        return bool(self.polarity or self.figures or self.items)


def _figures(text: str) -> list[tuple[float, bool, int, float]]:
    """The figures ``text`` states in digits (number words such as "three" and list markers such as
    "(2)" are not figures an answer must repeat)."""
    from plugins.finance.narrative_numbers import find_numbers

    found = []
    for m in find_numbers(text):
        if m.value is None or m.why or not re.search(r"\d", m.text):
            continue
        if re.fullmatch(r"\(\d{1,2}\)", m.text.strip()):
            continue  # "(1) usual and customary pricing litigation; (2) ..."
        if not m.percent and m.scale == 1 and _DURATION.match(text[m.end:m.end + 8]):
            continue  # "the 12 months ended", "a 52-week year"
        found.append((m.value * m.scale, m.percent, m.decimals, m.scale))
    return found


def figures_needed(count: int) -> int:
    """How many of a gold's ``count`` figures an answer must state: all of one or two, else two
    thirds (rounded up): a gold that adds a derived figure ("a drop of 2.2%") or a restatement
    ("about $2.77 of assets per $1 of revenue") is still matched by an answer that gives the rest."""
    return count if count <= 2 else -(-2 * count // 3)


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9&]+", text.lower()))


#: FinanceBench's notes appended to a gold answer ("The answer here assumes FY2023 refers to the
#: 12 months ended on January 28, 2023 ..."): about the question, not part of the answer.
_GOLD_NOTE = re.compile(r"\s*\b(the|this) answer (here )?assumes\b.*$", re.IGNORECASE | re.DOTALL)
#: A length of time ("12 months ended", "a 52-week year"): a period, not a figure to repeat.
_DURATION = re.compile(r"^\s*[-\s]?(months?|weeks?|days?|years?)\b", re.IGNORECASE)


def text_gold(gold: str) -> TextGold:
    """Read what a prose gold answer must contain (see the module's docstring)."""
    gold = _GOLD_NOTE.sub("", gold)
    match = _POLARITY.match(gold)
    polarity = match[1].lower() if match else None
    if re.fullmatch(r"(there (are|is|were|was) )?none", _words(gold)):
        polarity = "none"  # "There are none": an answer that says none (or no) is right
    figures = tuple(_figures(gold))
    items: tuple[str, ...] = ()
    if polarity is None and not figures and not re.search(r"[.;:!?]\s*\S", gold.strip()):
        parts = [p.strip() for p in re.split(r",|;|\band\b|&", gold.strip().rstrip(".")) if p.strip()]
        if 0 < len(parts) <= MAX_ITEMS and all(len(p.split()) <= ITEM_WORDS for p in parts):
            items = tuple(_words(p) for p in parts if _words(p))
    return TextGold(polarity, figures, items)


def _figure_found(figure: tuple[float, bool, int, float], stated: list[tuple[float, bool, int, float]], tolerance: float) -> bool:
    """Whether a stated figure matches the gold's: within the tolerance or the gold's printed
    precision ("$1.8 bn" is matched by $1,824 million). A percent may be stated as points ("a
    decline of 1.1 points" for the gold's "1.1%"): the percent sign is not compared, the value
    and its scale are."""
    value, _, decimals, scale = figure
    allowed = max(tolerance * abs(value), 0.5 * 10 ** -decimals * scale)
    return any(abs(v - value) <= allowed for v, *_ in stated)


def score_text(gold: TextGold, text: str, tolerance: float = 0.01) -> tuple[bool, dict[str, Any]]:
    """Whether ``text`` says what ``gold`` must contain, and what was compared.

    Returns:
        ``(correct, detail)``: ``detail`` names the missing polarity, figures and items, or why
        the answer was not credited.
    """
    stated = _figures(text)
    detail: dict[str, Any] = {"gold_polarity": gold.polarity, "gold_figures": [f[0] for f in gold.figures], "gold_items": list(gold.items)}
    if len(stated) > SHOTGUN_FACTOR * len(gold.figures) + 2:
        return False, {**detail, "why": f"the answer states {len(stated)} figures for a gold of {len(gold.figures)}: not credited"}
    match = _POLARITY.match(text)
    said = match[1].lower() if match else None
    if gold.polarity == "none" and re.search(r"\b(none|no|not any)\b", text.lower()):
        said = "none"
    missing_figures = [f[0] for f in gold.figures if not _figure_found(f, stated, tolerance)]
    words = f" {_words(text)} "
    missing_items = [i for i in gold.items if f" {i} " not in words]
    enough = len(gold.figures) - len(missing_figures) >= figures_needed(len(gold.figures))
    ok = (gold.polarity is None or said == gold.polarity) and enough and not missing_items
    detail.update(polarity=said, missing_figures=missing_figures, figures_needed=figures_needed(len(gold.figures)), missing_items=missing_items)
    return ok, detail


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
    """Score one recorded answer (``None`` when the question was not answered: both parts wrong).

    A numeric gold is compared by value (and, for a compound rate, by the formula's form); a prose
    gold by what it must contain (``text_gold``, ``score_text``), or by page only when it holds
    nothing to check (``value_correct`` None).
    """
    gold_text = text_gold(question.gold_text) if question.gold_value is None else None
    checkable = gold_text is not None and gold_text.checkable
    if answer is None:
        return Score(False if question.gold_value is not None or checkable else None, False, {"answered": False})
    page_ok = answer.get("document") == question.doc_name and answer.get("page") in question.gold_pages
    detail: dict[str, Any] = {"answered": True, "page": answer.get("page"), "gold_pages": question.gold_pages}
    if gold_text is not None:
        if not checkable:
            return Score(None, page_ok, {**detail, "checked": "page only: the gold answer states no yes/no, figure or named item"})
        ok, compared = score_text(gold_text, str(answer.get("text") or ""), tolerance)
        return Score(ok, page_ok, {**detail, "checked": "text", **compared})
    if answer.get("value") is None:
        return Score(False, page_ok, {**detail, "why": "no numeric value given"})
    got, family = base_value(float(answer["value"]), answer["unit"], answer.get("scale", "units"))
    ok = family == question.gold_unit and abs(got - question.gold_value) <= tolerance * abs(question.gold_value)
    detail.update(value=got, unit=family, gold_value=question.gold_value, gold_unit=question.gold_unit)
    formula = str(answer.get("formula") or "")
    if ok and asks_compound_rate(question.text) and not has_power(formula) and len(fact_ids(formula) or answer.get("fact_ids") or []) > 1:
        ok = False
        detail["why"] = ("the question asks for a compound rate and the formula has no power or root "
                         "(e.g. (({end} / {start}) ** (1 / years) - 1) * 100): an average is not a compound rate")
    return Score(ok, page_ok, detail)
