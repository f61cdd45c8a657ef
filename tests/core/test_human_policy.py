"""``--policy human``: a person (here a thread playing one) answers each model request over the
OpenAI wire, through the exchange folder, and the run is stored like any other."""

from __future__ import annotations

import json
import threading
from contextlib import closing

from typer.testing import CliRunner

from core.cli import app
from core.plugin import Task
from core.policy.human import Exchange, HumanPolicy, ToolCallAnswer
from core.runner import Run, open_store
from core.state import Limits, Pricing

FIX = {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}


def drive(exchange: Exchange, answers: list[tuple[str | None, list[ToolCallAnswer]]], seen: list[str]) -> None:
    """Answer each request in turn, keeping what ``describe`` showed (what ``agent human wait`` prints)."""
    import time

    for content, calls in answers:
        while exchange.pending() is None:
            time.sleep(0.05)
        seen.append(exchange.describe(exchange.pending()))
        exchange.answer(content, calls)


def test_a_person_drives_a_run_over_the_openai_wire(tmp_path, notes_plugin, notes_folder):
    policy = HumanPolicy(tmp_path / "exchange")
    seen: list[str] = []
    answers = [
        ("Let me read the log.", [ToolCallAnswer("view_file", {"path": "log.md"})]),
        (None, [ToolCallAnswer("edit_file", FIX)]),
        (None, [ToolCallAnswer("finish", {"summary": "answered"})]),
    ]
    driver = threading.Thread(target=drive, args=(policy.exchange, answers, seen), daemon=True)
    driver.start()
    run = Run.start(Task(plugin=notes_plugin, instruction="write done in ANSWER.txt", repo=notes_folder), policy,
                    policy_config={"kind": "human", "exchange": str(tmp_path / "exchange")}, limits=Limits(max_steps=5),
                    pricing=Pricing(), home=tmp_path / "home")  # fmt: skip
    try:
        result = run.execute()
    finally:
        run.close()
    driver.join(10)
    assert (result.status, result.reward, result.steps) == ("finished", 1.0, 3)
    # the first request carries what a model server gets: the system prompt, the task and the tool schemas
    first = json.loads((tmp_path / "exchange" / "req-0001.json").read_text())
    assert first["model"] == "human" and first["messages"][0]["role"] == "system"
    assert {t["function"]["name"] for t in first["tools"]} >= {"view_file", "edit_file", "shell", "finish"}
    assert "* tool view_file" in seen[0] and "--- system" in seen[0]
    # later requests show only what is new: the tool call and its observation
    assert "--- system" not in seen[1] and "[tool call call_1_0] view_file" in seen[1] and "1: # Log" in seen[1]
    with closing(open_store(result.run_id, tmp_path / "home")) as store:
        row = store.run()
    assert row["policy"].startswith("human:") and row["reward"] == 1.0


def test_the_answer_command_refuses_what_it_cannot_send(tmp_path):
    runner = CliRunner()
    exchange = Exchange(tmp_path / "ex")
    nothing = runner.invoke(app, ["human", "answer", str(tmp_path / "ex"), "--content", "hi"])
    assert nothing.exit_code == 2 and "no request is waiting" in nothing.output
    exchange.put_request({"messages": [{"role": "user", "content": "x"}]})
    bad = runner.invoke(app, ["human", "answer", str(tmp_path / "ex"), "--tool", "view_file", "--args", "{path: x}"])
    assert bad.exit_code == 2 and "is not JSON" in bad.output
    unpaired = runner.invoke(app, ["human", "answer", str(tmp_path / "ex"), "--tool", "view_file"])
    assert unpaired.exit_code == 2 and "1 --tool but 0 --args" in unpaired.output
    ok = runner.invoke(app, ["human", "answer", str(tmp_path / "ex"), "--tool", "view_file", "--args", '{"path": "a.py"}'])
    assert ok.exit_code == 0 and exchange.pending() is None
    assert json.loads((tmp_path / "ex" / "resp-0001.json").read_text())["tool_calls"] == [{"name": "view_file", "arguments": {"path": "a.py"}}]


def test_a_client_retry_joins_the_waiting_request(tmp_path):
    exchange = Exchange(tmp_path / "ex")
    body = {"messages": [{"role": "user", "content": "x"}]}
    assert exchange.put_request(body) == exchange.put_request(body) == 1
    exchange.answer("ok", [])
    assert exchange.put_request(body) == 2  # answered: the same messages again are a new request


def test_the_wait_command_prints_the_request_as_written(tmp_path):
    """``agent human wait`` prints text as the request holds it: brackets, backslashes and a
    rich-markup look-alike come out unchanged (old_text copied from the screen must match), and
    terminal control sequences are still removed."""
    exchange = Exchange(tmp_path / "ex")
    text = "items[0] = d['k'] \\n [bold]not markup[/bold]\x1b[2J"
    exchange.put_request({"messages": [{"role": "user", "content": text}]})
    shown = CliRunner().invoke(app, ["human", "wait", str(tmp_path / "ex"), "--timeout", "5"])
    assert shown.exit_code == 0, shown.output
    assert "items[0] = d['k'] \\n [bold]not markup[/bold]" in shown.output and "\\[" not in shown.output
    assert "\x1b" not in shown.output
