"""A whole finance episode: the scripted FinanceBench trajectory through the real tools, run store and reward."""

from __future__ import annotations

import json
from contextlib import closing

import pytest

from core.errors import UserError
from core.plugin import Task
from core.policy import ScriptedPolicy, load_script
from core.runner import Run, open_store
from core.state import ExitStatus, Limits, Pricing
from plugins.finance.formula import evaluate, fact_ids
from plugins.finance.numbers import SCALES
from plugins.finance.report_tool import report_traceability
from plugins.finance.store import connect
from tests.plugins.finance.conftest import FILINGS, ROOT, need_data

TASK = ROOT / "examples" / "finance" / "financebench"
SCRIPT = ROOT / "examples" / "finance" / "scripts" / "financebench.jsonl"


def run_episode(turns, repo=TASK, max_steps=None):
    started = Run.start(
        Task(plugin="finance", instruction="answer the questions about these filings and write a report", repo=repo),
        ScriptedPolicy(turns), policy_config={"kind": "scripted", "script": "inline"},
        limits=Limits(max_steps=max_steps or len(turns) + 2), pricing=Pricing(),
    )
    try:
        return started, started.execute()
    finally:
        started.close()


@pytest.fixture(scope="module")
def episode(filings_db, tmp_path_factory, finance_cache):
    """The scripted FinanceBench episode, run once (ingestion reuses the session's parse cache)."""
    with pytest.MonkeyPatch.context() as mp:
        home = tmp_path_factory.mktemp("home")
        mp.setenv("HORIZON_HOME", str(home))
        mp.setenv("HORIZON_FINANCE_CACHE", str(finance_cache))
        started, result = run_episode(load_script(SCRIPT))
        with closing(open_store(result.run_id)) as store:
            stored = {"rewards": store.rewards(), "steps": store.steps(), "messages": store.messages()}
    return started, result, stored


def test_scripted_financebench_episode_scores_full_marks(episode):
    _, result, stored = episode
    assert result.status == "finished" and result.exit_status == ExitStatus.SUBMITTED, result.exit_detail
    calls = [c for s in stored["steps"] for c in s["tool_calls"]]
    assert [c["output"][:200] for c in calls if c["is_error"]] == []
    rewards = stored["rewards"]
    assert rewards["answer_value"]["value"] == 1.0, rewards["answer_value"]["detail"]
    assert rewards["answer_value"]["detail"]["numeric_questions"] == 14 and rewards["answer_value"]["detail"]["text_questions"] == 7
    assert rewards["answer_page"]["value"] == 1.0 and rewards["answer_page"]["detail"]["questions"] == 24
    assert rewards["checks"]["value"] == 1.0 and rewards["checks"]["detail"]["status"] == "passed"
    assert rewards["report"]["value"] == 1.0, rewards["report"]["detail"]
    assert result.reward == 1.0
    task_message = stored["messages"][1].content
    assert "financebench_id_03029" in task_message and "$1577" not in task_message  # questions shown, gold answers not


def test_every_scripted_answer_is_a_stored_value_or_a_derivation_with_its_page(episode):
    started, _, _ = episode
    answers = json.loads((started.folder / "scratch" / "finance" / "answers.json").read_text())
    con = connect(started.folder / "scratch" / "finance" / "filings.duckdb", read_only=True)
    try:
        numeric = [a for a in answers.values() if a["unit"] != "text"]
        assert len(numeric) == 14 and len(answers) == 24
        for a in numeric:
            ids = fact_ids(a["formula"])
            stored = {r[0]: r[1:] for r in con.execute(
                "SELECT fact_id, value, page, doc_name FROM facts WHERE fact_id IN (SELECT unnest(?))", [ids]).fetchall()}
            assert set(stored) == set(ids), a
            computed = evaluate(a["formula"], {k: v[0] for k, v in stored.items()})
            stated = a["value"] * SCALES[a["scale"]]
            decimals = 0 if float(a["value"]).is_integer() else len(repr(float(a["value"])).split(".")[1])
            assert abs(stated - computed) <= 0.5 * 10 ** -decimals * SCALES[a["scale"]], a  # the value is the facts' result, rounded
            assert a["page"] in {v[1] for v in stored.values()} and {v[2] for v in stored.values()} == {a["document"]}
        single = [a for a in numeric if a["formula"].strip("-{}") in a["fact_ids"] and len(a["fact_ids"]) == 1]
        assert len(single) >= 6  # capex, PP&E, OCF, total assets, COGS, current liabilities: read straight off a page
    finally:
        con.close()


def test_the_report_in_the_workspace_traces_every_figure(episode):
    started, _, _ = episode
    report = started.folder / "workspace" / "report"
    assert (report / "report.md").is_file() and (report / "report.html").is_file()
    assert len(list((report / "charts").glob("*.png"))) >= 8
    con = connect(started.folder / "scratch" / "finance" / "filings.duckdb", read_only=True)
    try:
        share, detail = report_traceability(con, started.folder / "workspace")
    finally:
        con.close()
    assert share == 1.0 and detail["figures"] > 300 and not detail["problems"] and not detail["numbers_without_figure"]


def test_a_wrong_answer_is_refused_and_an_unanswered_run_scores_zero(filings_db, use_cache, tmp_path):
    turns = [
        {"tool": "answer_question", "arguments": {"question_id": "financebench_id_03029", "document": "3M_2018_10K", "page": 60,
                                                  "value": 1600, "unit": "USD", "scale": "millions", "formula": "-{3M_2018_10K:p60:l24:c0}"}},
        {"tool": "answer_question", "arguments": {"question_id": "financebench_id_03029", "document": "3M_2018_10K", "page": 60,
                                                  "value": 1577, "unit": "USD", "scale": "millions"}},
        {"tool": "answer_question", "arguments": {"question_id": "financebench_id_03029", "document": "3M_2018_10K", "page": 58,
                                                  "value": 1577, "unit": "USD", "scale": "millions", "formula": "-{3M_2018_10K:p60:l24:c0}"}},
        {"tool": "sql", "arguments": {"query": "SELECT * FROM read_csv('/etc/passwd')"}},
        {"tool": "sql", "arguments": {"query": "DELETE FROM facts"}},
        {"tool": "get_statement", "arguments": {"document": "NOPE", "statement": "cash_flow"}},
        {"tool": "finish", "arguments": {"summary": "gave up"}},
    ]
    task = tmp_path / "task"
    task.mkdir()
    (task / "task.json").write_text(json.dumps({"filings": ["../shared/data/filings/3M_2018_10K.pdf"],
                                                "questions": "../shared/data/filings/questions.jsonl"}))
    _, result = run_episode(turns, repo=task)
    with closing(open_store(result.run_id)) as store:
        calls = [c for s in store.steps() for c in s["tool_calls"]]
        rewards = store.rewards()
    outputs = [c["output"] for c in calls]
    assert [c["is_error"] for c in calls] == [True, True, True, True, True, True, False]
    assert "the formula gives 1.577e+09" in outputs[0]
    assert "give a formula" in outputs[1] and "page 58 holds none of the cited facts" in outputs[2]
    assert "file system operations are disabled" in outputs[3] or "Permission" in outputs[3]
    assert "read-only" in outputs[4]
    assert "no document 'NOPE'" in outputs[5] and "3M_2018_10K" in outputs[5]
    assert rewards["answer_value"]["value"] == 0.0 and rewards["answer_page"]["value"] == 0.0
    assert rewards["checks"]["value"] == 1.0  # the extraction itself is sound...
    assert rewards["checks"]["weight"] == 0.0  # ...but set-up did it, not the agent: it earns nothing
    assert result.reward == 0.0 and result.correct is False


def test_a_task_folder_without_task_json_is_refused_before_the_run(use_cache, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no task here\n")
    with pytest.raises(UserError, match="task.json not found"):
        run_episode([{"tool": "finish", "arguments": {"summary": "x"}}], repo=empty)


def test_a_market_data_failure_is_an_observation_and_the_run_goes_on(filings_db, use_cache, tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "task.json").write_text(json.dumps({
        "ticker": "MMM", "filings": ["../shared/data/filings/3M_2018_10K.pdf"], "questions": "../shared/data/filings/questions.jsonl",
        "question_ids": ["financebench_id_03029"], "market": {"snapshots": "market", "offline": True}}))
    turns = [
        {"tool": "market_data", "arguments": {"kind": "prices", "as_of": "2019-02-07"}},
        {"tool": "answer_question", "arguments": {"question_id": "financebench_id_03029", "document": "3M_2018_10K", "page": 60,
                                                  "value": 1577, "unit": "USD", "scale": "millions", "formula": "-{3M_2018_10K:p60:l24:c0}"}},
        {"tool": "finish", "arguments": {"summary": "answered; no market data offline"}},
    ]
    _, result = run_episode(turns, repo=task)
    with closing(open_store(result.run_id)) as store:
        calls = [c for s in store.steps() for c in s["tool_calls"]]
    assert calls[0]["is_error"] and "market data unavailable" in calls[0]["output"] and "no snapshot of MMM prices" in calls[0]["output"]
    assert not calls[1]["is_error"] and result.exit_status == ExitStatus.SUBMITTED
    assert result.reward == 1.0  # value, page and checks all right; the failed call cost nothing


def test_a_task_whose_filings_cannot_be_read_is_not_applicable_not_zero(use_cache, tmp_path):
    """Every filing unreadable (a truncated PDF, a text file named .pdf): the agent had nothing to
    work on, so the verdict is "not applicable", which the export's gates keep out of training data."""
    need_data()
    task = tmp_path / "task"
    task.mkdir()
    good = (FILINGS / "ULTABEAUTY_2023Q4_EARNINGS.pdf").read_bytes()
    (task / "TRUNCATED_2023_10K.pdf").write_bytes(good[: len(good) // 3])
    (task / "NOTES_2023_10K.pdf").write_text("not a PDF at all\n")
    (task / "task.json").write_text(json.dumps({"filings": ["TRUNCATED_2023_10K.pdf", "NOTES_2023_10K.pdf"], "report": False}))
    started, result = run_episode([{"tool": "finish", "arguments": {"summary": "nothing could be read"}}], repo=task)
    with closing(open_store(started.run_id)) as store:
        row = store.run()
    assert row["reward_status"] == "not_applicable" and result.reward is None, row
    assert row["reward_version"] == "finance-qa/5" and "none of the task's filings could be read" in row["reward_summary"]
    assert "NOTES_2023_10K" in row["reward_summary"]
