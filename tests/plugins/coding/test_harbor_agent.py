"""Horizon's Harbor agent (``plugins.coding.harbor``) driving a Harbor-format task through an
environment with Harbor's interface (``harbor_env.FolderEnvironment``: a folder standing for the
container, commands run with bash under bubblewrap), the way Harbor's trial does it:
``setup(environment)``, ``run(instruction, environment, context)``, then the task's
``tests/test.sh`` in the same container, whose ``/logs/verifier/reward.txt`` is the reward."""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import closing
from pathlib import Path

import pytest

from core.reward import Trajectory
from core.store import RunStore
from plugins.coding.harbor import HarborCodingPlugin, HorizonAgent
from plugins.coding.harbor.agent import REWARD_VERSION
from plugins.coding.plugin import TERMINAL_BENCH_PROMPT
from tests.plugins.coding.harbor_env import AgentContext, build_task_container, verify

TASK = Path(__file__).parent / "data" / "harbor-wordcount"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")

#: The scripted policy that solves the task: file tools on the mirror, commands in the container.
SOLVE = [
    {"tool": "view_file", "arguments": {"path": "wordcount.py"}},
    {"tool": "edit_file", "arguments": {"path": "wordcount.py", "old_text": "len(text.splitlines())", "new_text": "len(text.split())"}},
    # the edit must be in the container before this command runs, or the count is 3
    {"tool": "shell", "arguments": {"command": "python3 wordcount.py input.txt > count.txt && wc -l < input.txt > /tmp/lines.txt"}},
    {"tool": "view_file", "arguments": {"path": "count.txt"}},  # made by the command: the mirror must have it
    {"tool": "shell", "arguments": {"command": "rm old.log && ls"}},
    # the last change before finish: it reaches the container only by the push at the end
    {"tool": "edit_file", "arguments": {"path": "NOTES.md", "old_text": "", "new_text": "wordcount.py counted lines, not words\n"}},
    {"tool": "finish", "arguments": {"summary": "count() splits on whitespace; counts written; old.log removed; notes written"}},
]
FINISH_ONLY = [{"tool": "finish", "arguments": {"summary": "finished without changing anything"}}]


def trial(tmp_path: Path, turns: list[dict]) -> tuple[HorizonAgent, AgentContext, float, object]:
    """One Harbor trial of the fixture task with a scripted policy: (agent, context, reward, environment)."""
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    env = build_task_container(TASK, tmp_path / "container")
    agent = HorizonAgent(logs_dir=tmp_path / "logs" / "agent", model_name="openai/unused", script=str(script), max_steps=len(turns) + 1)
    context = AgentContext()

    async def main() -> float:
        await agent.setup(env)
        await agent.run((TASK / "instruction.md").read_text(), env, context)
        return await verify(TASK, env)

    reward = asyncio.run(main())
    return agent, context, reward, env


@needs_bwrap
def test_the_scripted_policy_solves_the_task_through_harbors_interface(tmp_path):
    agent, context, reward, env = trial(tmp_path, SOLVE)
    assert reward == 1.0
    app = env.path("/app")
    assert (app / "NOTES.md").read_text() == "wordcount.py counted lines, not words\n"  # pushed at the end
    assert not (app / "old.log").exists() and (app / "count.txt").read_text() == "9\n"
    assert "download_dir" in env.calls and "upload_file" in env.calls

    # the run is a normal Horizon run in its store under the trial's logs
    home = tmp_path / "logs" / "agent" / "horizon"
    meta = context.metadata["horizon"]
    assert meta["run_id"] == agent.run_id and meta["exit_status"] == "submitted" and meta["steps"] == len(SOLVE)
    assert meta["workdir"] == "/app" and Path(meta["run_dir"]) == home / "runs" / agent.run_id
    with closing(RunStore(home / "runs" / agent.run_id / "trajectory.duckdb")) as store:
        row = store.run()
    assert row["plugin"] == "coding" and row["status"] == "finished" and row["exit_status"] == "submitted"
    # Horizon gives no reward of its own: Harbor's verifier does
    assert (row["reward_status"], row["reward_version"], row["reward"]) == ("not_applicable", REWARD_VERSION, None)
    trajectory = Trajectory.from_run(agent.run_id, home)
    assert trajectory.messages[0].content == TERMINAL_BENCH_PROMPT
    assert "working folder is /app" in trajectory.messages[1].content and "wordcount.py" in trajectory.messages[1].content
    calls = trajectory.tool_data
    assert [c["tool"] for c in calls] == [t["tool"] for t in SOLVE]
    assert not any(c["is_error"] for c in calls), calls
    shown = [m.content for m in trajectory.messages if m.role == "tool"]
    assert "9" in shown[3]  # view_file saw the file the command wrote in the container
    assert "old.log" not in shown[4].split("--- stdout ---", 1)[1] and not (trajectory.workspace / "old.log").exists()
    # the mirror is the container's working folder at the end; the patch has every change
    assert (trajectory.workspace / "count.txt").read_text() == "9\n"
    patch = Path(meta["patch"]).read_text()
    assert "+    return len(text.split())" in patch and "NOTES.md" in patch and "old.log" in patch
    # the context has Horizon's totals (a scripted policy reports no tokens: zeros, not None)
    assert (context.n_input_tokens, context.n_cache_tokens, context.n_output_tokens) == (0, 0, 0)
    assert context.cost_usd == 0.0


@needs_bwrap
def test_finish_only_leaves_reward_zero(tmp_path):
    _, context, reward, env = trial(tmp_path, FINISH_ONLY)
    assert reward == 0.0
    assert (env.path("/app") / "old.log").exists() and not (env.path("/app") / "count.txt").exists()
    assert context.metadata["horizon"]["steps"] == 1 and context.metadata["horizon"]["exit_status"] == "submitted"


def test_the_plugin_offers_the_tools_that_work_across_the_mirror():
    plugin = HarborCodingPlugin("/app")
    names = [t.name for t in plugin.tools()]
    assert "run_tests" not in names and "static_check" not in names and {"shell", "edit_file", "view_file", "finish"} <= set(names)
    shell = next(t for t in plugin.tools() if t.name == "shell")
    assert "container" in shell.description and "no network" not in shell.description
    assert HorizonAgent.name() == "horizon" and HorizonAgent(logs_dir="/nonexistent").version()


@needs_bwrap
def test_the_model_comes_from_harbors_model_name_and_kwargs_and_its_tokens_fill_the_context(tmp_path, monkeypatch):
    from tests.core.policy.fault_server import FaultServer, completion

    def responder(body: dict) -> dict:
        turn = SOLVE[sum(1 for m in body["messages"] if m["role"] == "assistant")]
        return completion([{"name": turn["tool"], "arguments": json.dumps(turn["arguments"])}],
                          usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                                 "prompt_tokens_details": {"cached_tokens": 40}})  # fmt: skip

    monkeypatch.setenv("HZ_HARBOR_TEST_KEY", "sk-test")
    env = build_task_container(TASK, tmp_path / "container")
    context = AgentContext()
    with FaultServer(responder) as server:
        agent = HorizonAgent(logs_dir=tmp_path / "logs", model_name="hosted_vllm/org/model-7b", base_url=server.url,
                             api_key_env="HZ_HARBOR_TEST_KEY", max_steps="20")  # fmt: skip

        async def main() -> float:
            await agent.setup(env)
            await agent.run((TASK / "instruction.md").read_text(), env, context)
            return await verify(TASK, env)

        reward = asyncio.run(main())
        bodies = [b for _, b in server.requests if b is not None]
    assert reward == 1.0
    assert {b["model"] for b in bodies} == {"org/model-7b"}  # model_name without its provider
    assert len(bodies) == len(SOLVE)
    assert "tests you cannot see" in bodies[0]["messages"][0]["content"]  # the Terminal-Bench prompt
    assert "run_tests" not in {t["function"]["name"] for t in bodies[0]["tools"]}
    n = len(SOLVE)
    assert (context.n_input_tokens, context.n_cache_tokens, context.n_output_tokens) == (100 * n, 40 * n, 20 * n)
    assert context.metadata["horizon"]["exit_status"] == "submitted"


def test_without_a_server_the_agent_says_what_to_give(tmp_path, monkeypatch):
    from core.errors import ConfigError, UserError

    for var in ("HORIZON_BASE_URL", "HORIZON_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HORIZON_HOME", str(tmp_path / "home"))
    agent = HorizonAgent(logs_dir=tmp_path, model_name="openai/m")
    with pytest.raises(ConfigError, match="base-url"):
        agent._policy()
    with pytest.raises(UserError, match="max_steps=.many. is not a int"):
        HorizonAgent(logs_dir=tmp_path, max_steps="many")
