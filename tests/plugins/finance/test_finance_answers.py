"""Answers graded by value: prose answers by what their gold must contain, compound rates by their formula.

The prose golds are FinanceBench's own (``../shared/data/financebench/questions.jsonl``, written
by others); each wrong answer below is on the gold evidence page, which finance-qa/4 credited in
full as a value (it scored prose by page only).
"""

from __future__ import annotations

import pytest

from plugins.finance.checks import CheckSummary
from plugins.finance.formula import FormulaError, evaluate, has_power
from plugins.finance.questions import Question, load_questions, score_answer, text_gold
from plugins.finance.reward import REWARD_VERSION, grade
from tests.plugins.finance.conftest import DATA

QUESTIONS = DATA / "financebench" / "questions.jsonl"


@pytest.fixture(scope="module")
def bench() -> dict[str, Question]:
    if not QUESTIONS.is_file():
        pytest.skip(f"FinanceBench questions not found at {QUESTIONS.resolve()} (../shared/data is not present)")
    return {q.qid: q for q in load_questions(QUESTIONS)}


def find(bench: dict[str, Question], words: str) -> Question:
    (question,) = [q for q in bench.values() if words in q.text]
    return question


def answer(question: Question, text: str, page: int | None = None) -> dict:
    return {"document": question.doc_name, "page": page or question.gold_pages[0], "value": None, "unit": "text", "text": text}


def test_prose_answers_are_graded_by_what_the_gold_says(bench):
    geographies = find(bench, "geographies that American Express primarily operates")
    assert text_gold(geographies.gold_text).items == ("united states", "emea", "apac", "lacc")
    right = score_answer(geographies, answer(geographies, "It operates in the United States, EMEA, APAC and LACC."))
    wrong = score_answer(geographies, answer(geographies, "The United States and Canada."))
    assert right.value_correct is True and right.page_correct
    assert wrong.value_correct is False and wrong.page_correct  # the right page no longer makes a wrong answer right
    assert wrong.detail["missing_items"] == ["emea", "apac", "lacc"]

    margin = find(bench, "Does Adobe have an improving operating margin profile as of FY2022")
    assert text_gold(margin.gold_text).polarity == "no"
    assert score_answer(margin, answer(margin, "No: the operating margin fell from 36.8% in FY2021 to 34.6% in FY2022.")).value_correct
    assert not score_answer(margin, answer(margin, "Yes, it went from 36.8% to 34.6%.")).value_correct  # the wrong way round
    assert not score_answer(margin, answer(margin, "No, it declined from 38% to 33%.")).value_correct  # the wrong figures

    none = find(bench, "Which debt securities are registered to trade on a national securities exchange under American Express")
    assert score_answer(none, answer(none, "None: no debt securities are registered under Section 12(b).")).value_correct
    assert not score_answer(none, answer(none, "The 3.125% Notes due 2026.")).value_correct


def test_an_answer_listing_every_number_is_not_credited(bench):
    quick = find(bench, "quick ratio")
    assert [f[0] for f in text_gold(quick.gold_text).figures] == [0.54]
    assert score_answer(quick, answer(quick, "No. The quick ratio was about 0.54, so Verizon lacks liquidity.")).value_correct
    shotgun = "No. " + ", ".join(f"{x / 100:.2f}" for x in range(40, 70))  # 0.40, 0.41, ... 0.69: 0.54 is among them
    scored = score_answer(quick, answer(quick, shotgun))
    assert scored.value_correct is False and "not credited" in scored.detail["why"]


def test_the_reward_counts_prose_answers_as_values(bench):
    geographies = find(bench, "geographies that American Express primarily operates")
    explanation = find(bench, "AMEX have an improving operating margin profile")  # "Performance is not measured through operating margin"
    assert not text_gold(explanation.gold_text).checkable
    answers = {geographies.qid: answer(geographies, "The United States and Canada."),
               explanation.qid: answer(explanation, "It is not a useful metric for a bank.")}
    result = grade([geographies, explanation], answers, CheckSummary(status="not_compared", score=0.0, results=[], uncompared=[]), 0.01, None)
    value = result.components["answer_value"]
    assert result.version == REWARD_VERSION == "finance-qa/5"
    assert value.value == 0.0 and value.detail["text_questions"] == 1 and value.detail["page_only"] == [explanation.qid]
    assert result.components["answer_page"].value == 1.0 and result.reward < 0.5  # finance-qa/4: 1.0 (two right pages, no value part)


CAGR = Question("q-cagr", "ACME_2023_10K", "What is ACME's 3-year revenue CAGR from FY2020 to FY2023? Answer in units of percents.",
                "metrics-generated", "0.45%", 0.448, "percent", [40])


def test_a_compound_rate_needs_a_compound_formula():
    facts = {"A:p40:l3:c0": 1013.5, "A:p40:l3:c3": 1000.0, "A:p40:l3:c1": 1010.0, "A:p40:l3:c2": 1004.0}
    compound = "(({A:p40:l3:c0} / {A:p40:l3:c3}) ** (1 / 3) - 1) * 100"
    mean = "(({A:p40:l3:c2} / {A:p40:l3:c3} - 1) + ({A:p40:l3:c1} / {A:p40:l3:c2} - 1) + ({A:p40:l3:c0} / {A:p40:l3:c1} - 1)) / 3 * 100"
    assert evaluate(compound, facts) == pytest.approx(0.448, abs=1e-3) and has_power(compound) and not has_power(mean)
    base = {"document": "ACME_2023_10K", "page": 40, "unit": "percent", "scale": "units"}
    right = score_answer(CAGR, {**base, "value": 0.448, "formula": compound})
    averaged = score_answer(CAGR, {**base, "value": 0.449, "formula": mean})  # within the 1% tolerance, but an average
    printed = score_answer(CAGR, {**base, "value": 0.448, "formula": "{A:p40:l9:c0}"})  # the filing prints the rate
    assert right.value_correct and printed.value_correct
    assert averaged.value_correct is False and "compound rate" in averaged.detail["why"]


@pytest.mark.parametrize(("formula", "words"), [
    ("(-8) ** 0.5", "fractional power"), ("10 ** 1000", "larger than 100"), ("2 ** 2 ** 2 ** 2 ** 2", "larger than 100"),
    ("0 ** -1", "division by zero"), ("1e300 ** 90", "too large"), ("{x} ** abs(2)", "only numbers"),
])
def test_powers_are_bounded(formula, words):
    with pytest.raises(FormulaError, match=words):
        evaluate(formula, {"x": 2.0})
