"""The agent command line, run as a user would: bad input and a dead model server, on ``notes``,
the test plugin (tests/notes_plugin).

Issue 17: `agent run coding` on the example (the main job) and the coding reward's not-applicable
verdict moved unchanged to tests/plugins/coding/test_coding_cli.py.
"""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from tests.core.policy.models_server import ModelsServer, closed_port

runner = CliRunner()
NOTES_SUITE = Path(__file__).resolve().parents[1] / "notes_plugin" / "suite"


@pytest.fixture
def script(tmp_path):
    """A notes script: write the answer, then finish."""
    path = tmp_path / "answer.jsonl"
    turns = [{"tool": "write_file", "arguments": {"path": "ANSWER.txt", "text": "done\n"}}, {"tool": "finish", "arguments": {"summary": "answered"}}]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def test_user_errors_are_one_clean_line(notes_plugin, script):
    result = runner.invoke(app, ["run", "nope", "x"])
    assert result.exit_code == 2
    assert "error: no plugin named 'nope'" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["show", "20990101-000000-dead"])
    assert result.exit_code == 2 and "no run" in result.output
    result = runner.invoke(app, ["run", "notes", "x", "--policy", "openai"])
    assert result.exit_code == 2 and "--base-url" in result.output
    result = runner.invoke(app, ["run", "notes", "x", "--repo", "/nonexistent/repo", "--policy", "scripted", "--script", str(script)])
    assert result.exit_code == 2 and "not a folder" in result.output
    result = runner.invoke(app, ["run", "notes", "  ", "--policy", "scripted", "--script", str(script)])
    assert result.exit_code == 2 and "the task is empty" in result.output
    for flag, value in [("--max-steps", "0"), ("--max-steps", "-3"), ("--max-time", "0"), ("--max-cost", "-1")]:
        result = runner.invoke(app, ["run", "notes", "x", flag, value])
        assert result.exit_code == 2 and "Traceback" not in result.output, (flag, value)


def test_a_dead_model_server_is_found_before_anything_is_set_up(notes_plugin, notes_folder, horizon_home):
    """Issue 30: ``--base-url`` with nothing listening (a real closed port) or a server answering
    500 stops at once, exit code 2, with the URL, what failed and what to do, and no run made."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = runner.invoke(app, ["run", "notes", "fix", "--repo", str(notes_folder), "--base-url", url, "--model", "m"])
    said = " ".join(result.output.split())
    assert result.exit_code == 2, said
    assert f"the model server did not answer GET {url}/models: cannot connect: nothing is listening there" in said
    assert "vllm serve" in said and "llama-server" in said and "leave it out to use the embedded model" in said
    assert not (horizon_home / "runs").exists() or not any((horizon_home / "runs").iterdir())
    with ModelsServer(status=500, body=b"upstream engine died") as broken:
        result = runner.invoke(app, ["eval", "notes", str(NOTES_SUITE), "--policy", "openai", "--base-url", broken.url, "--model", "m"])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "it answered HTTP 500: 'upstream engine died'" in said, said
    assert not (horizon_home / "evals").exists() or not any((horizon_home / "evals").iterdir())


def test_a_dead_model_server_from_the_config_file_is_named_with_the_file(notes_plugin, notes_folder, horizon_home):
    """``agent serve`` recorded a server in ``config.toml`` that has since stopped: ``--policy auto``
    says which file set the URL, and stops before any set-up."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    horizon_home.mkdir(parents=True, exist_ok=True)
    (horizon_home / "config.toml").write_text(f'base_url = "{url}"\nmodel = "m"\n')
    result = runner.invoke(app, ["run", "notes", "fix", "--repo", str(notes_folder)])
    said = " ".join(result.output.split())
    assert result.exit_code == 2, said
    assert f"the model server (its URL is set by {horizon_home / 'config.toml'}) did not answer GET {url}/models" in said
    assert not (horizon_home / "runs").exists() or not any((horizon_home / "runs").iterdir())


def test_a_model_server_that_dies_mid_run_ends_it_resumably(notes_plugin, notes_folder):
    """A server that answered the probe but fails the run's model call: the run stops resumably
    (``model_error``) and says ``agent resume``; resuming against a dead server says so again."""
    with ModelsServer(post_status=400) as server:
        result = runner.invoke(app, ["run", "notes", "fix", "--repo", str(notes_folder), "--base-url", server.url, "--model", "m"])
    assert result.exit_code == 1
    assert "model_error" in result.output and "agent resume" in result.output
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", result.output).group(1)
    again = runner.invoke(app, ["resume", run_id, "--base-url", "http://127.0.0.1:9/v1"])
    assert again.exit_code == 1 and "cannot reach the model server at http://127.0.0.1:9/v1" in again.output


def test_base_url_without_model_takes_the_one_model_the_server_lists(notes_plugin, notes_folder):
    """``--base-url`` alone: the server's one model (vLLM, SGLang, llama.cpp serve one) is used and
    named; a server that lists several is a clean error listing them, before any set-up."""
    with ModelsServer(post_status=400) as server:
        result = runner.invoke(app, ["run", "notes", "fix", "--repo", str(notes_folder), "--base-url", server.url])
    said = " ".join(result.output.split())
    assert f"model m: the one model {server.url} serves" in said, said
    assert "model_error" in said  # it got past the probe to the run's model call, made with model m
    two = json.dumps({"object": "list", "data": [{"id": "a", "object": "model"}, {"id": "b", "object": "model"}]}).encode()
    with ModelsServer(body=two) as server:
        result = runner.invoke(app, ["eval", "notes", str(NOTES_SUITE), "--base-url", server.url])
        assert server.paths == ["GET /v1/models"]  # nothing else was asked
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and f"the model server {server.url} lists 2 models (a, b): say which with --model NAME" in said, said


#: What must not be imported to start ``agent``: a plugin, the run machinery, model clients,
#: numerical and storage libraries (issue 31: every command paid for the 3D plugin's imports).
HEAVY_AT_START = ("plugins", "langgraph", "langchain_core", "openai", "trimesh", "duckdb", "numpy", "bpy", "ray",
                  "llama_cpp", "starlette", "httpx", "pydantic_settings")


@pytest.mark.parametrize("argv", [[], ["--help"], ["human", "wait", "{tmp}", "--timeout", "0"], ["runs"], ["plugins"], ["show", "x"]],
                         ids=["import", "help", "human-wait", "runs", "plugins", "show"])
def test_starting_the_cli_imports_no_plugin_or_heavy_library(argv, tmp_path, monkeypatch):
    """``import core.cli``, ``agent --help``, ``agent human wait`` (a person's every step) and
    ``agent runs`` (the runs catalog, ``core.catalog``; ``tests/core/test_catalog.py`` checks it
    with runs) load no plugin (a plugin's commands are listed from their entry point's metadata)
    and none of ``HEAVY_AT_START``; ``agent plugins`` imports only each plugin's package and its
    ``manifest``. ``agent show`` opens a run store: the control that shows the check sees a heavy
    library when one is imported."""
    import subprocess
    import sys

    monkeypatch.setenv("HORIZON_HOME", str(tmp_path))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = ("import json, sys\nfrom core.cli import app\nargv = json.loads(sys.argv[1])\n"
            "if argv:\n    try:\n        app(argv)\n    except SystemExit:\n        pass\n"
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], capture_output=True, text=True, timeout=120, check=True)
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    if argv == ["plugins"]:  # the manifests: plugins/<name>/manifest.py, beside a package that imports nothing
        loaded = [m for m in loaded if not (m == "plugins" or m.count(".") == 1 and m.startswith("plugins.") or m.endswith(".manifest"))]
    heavy = sorted({m.split(".")[0] for m in loaded if m.split(".")[0] in HEAVY_AT_START})
    if argv == ["show", "x"]:
        assert "duckdb" in heavy  # the control: showing a run opens its DuckDB store
    else:
        assert heavy == [], f"starting agent {' '.join(argv)} imported {heavy}"
    if argv in ([], ["--help"]):  # typer itself loads pydantic once a command converts its arguments, not before
        assert "pydantic" not in loaded, f"agent {' '.join(argv)} imported pydantic (core.state, core.plugin or core.text at import time)"


def test_agent_trust_records_lists_and_revokes_a_file(horizon_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["trust"]).exit_code == 2  # nothing to do: says what to give
    missing = runner.invoke(app, ["trust", "horizon.toml"])
    assert missing.exit_code == 2 and "is not a file" in missing.output
    (tmp_path / "horizon.toml").write_text('model = "m"\n')
    assert runner.invoke(app, ["trust", str(tmp_path)]).exit_code == 0  # a folder means its horizon.toml
    listed = runner.invoke(app, ["trust", "--list"])
    assert str(tmp_path / "horizon.toml") in listed.output and "unchanged" in listed.output
    (tmp_path / "horizon.toml").write_text('model = "other"\n')
    assert "changed since" in runner.invoke(app, ["trust", "--list"]).output
    assert "no longer trusted" in runner.invoke(app, ["trust", "--revoke", "horizon.toml"]).output
    assert "no trusted files" in runner.invoke(app, ["trust", "--list"]).output


def test_the_embedded_model_runs_a_short_episode_and_says_what_it_showed(notes_plugin, notes_folder):
    """Without --max-steps the embedded model gets ``EMBEDDED_MAX_STEPS`` (a demonstration, not a
    long wait), the banner says so, and the run ends with a line on what it showed and how to get a
    capable model; a model server's run keeps the usual limit. (``--max-time`` ends the run
    after at most one model call: what is tested is the CLI's choice, not the model.)"""
    from core.cli import EMBEDDED_MAX_STEPS

    done = runner.invoke(app, ["run", "notes", "answer", "--repo", str(notes_folder), "--policy", "embedded", "--max-time", "0.001"])
    said = " ".join(done.output.split())  # rich wraps long lines at the terminal's width
    assert f"at most {EMBEDDED_MAX_STEPS} steps" in said, said
    assert re.search(r"the embedded model ran [01] real steps? of the loop without a fix", said) and "--base-url" in said
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", done.output).group(1)
    shown = json.loads(runner.invoke(app, ["show", run_id, "--json"]).output)
    assert shown["run"]["config"]["limits"]["max_steps"] == EMBEDDED_MAX_STEPS
    with ModelsServer() as server:  # a server that answers the probe
        served = runner.invoke(app, ["run", "notes", "answer", "--repo", str(notes_folder), "--base-url", server.url,
                                     "--model", "m", "--max-time", "0.001"])
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", served.output).group(1)
    assert json.loads(runner.invoke(app, ["show", run_id, "--json"]).output)["run"]["config"]["limits"]["max_steps"] == 30
    assert "embedded model ran" not in served.output


def test_the_step_line_names_the_model_calls_seconds_beside_the_tools():
    """An embedded model's step is mostly the model call: its seconds are on the step's first tool line
    (issue 30: the line showed only the tool's 0.3 s of a 40 s step); a scripted turn shows none."""
    from rich.console import Console

    from core.cli import StepPrinter
    from core.state import Message, ToolCall, Usage

    out = Console(record=True, width=200)
    printer = StepPrinter(out)
    calls = [ToolCall(id="a", name="view_file", arguments='{"path": "x"}'), ToolCall(id="b", name="finish", arguments="{}")]
    printer("model", {"step": 1, "message": Message(role="assistant", content=None, tool_calls=calls),
                      "usage": Usage(), "total": Usage(prompt_tokens=900, completion_tokens=20), "model_s": 41.7})
    for call in calls:
        printer("tool", {"step": 1, "call": call, "output": "ok", "is_error": False, "duration_s": 0.3})
    printer("model", {"step": 2, "message": Message(role="assistant", content=None, tool_calls=calls[:1]),
                      "usage": Usage(), "total": Usage(prompt_tokens=900, completion_tokens=20), "model_s": 0.001})
    printer("tool", {"step": 2, "call": calls[0], "output": "ok", "is_error": False, "duration_s": 0.2})
    first, second, third = out.export_text().splitlines()
    assert first.endswith("920 tok  model 41.7s +  0.3s"), first
    assert second.endswith("920 tok  0.3s") and third.endswith("920 tok  0.2s"), (second, third)


def test_runs_lists_the_newest_fifty_and_says_how_many_more(notes_plugin, tmp_path, monkeypatch, script):
    """Issue 31: a thousand rows are not a listing; the newest 50 are, with a line naming the rest."""
    import shutil

    monkeypatch.setenv("HORIZON_HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("notes\n")
    made = runner.invoke(app, ["run", notes_plugin, "answer", "--repo", str(repo), "--policy", "scripted", "--script", str(script)])
    assert made.exit_code == 0, made.output
    (first,) = (tmp_path / "home" / "runs").iterdir()
    for i in range(3):  # copies of a real run are runs of their own (the catalog adds folders it has no row for)
        shutil.copytree(first, first.with_name(f"20261207-0000{i:02d}-copy{i}"))
    listed = runner.invoke(app, ["runs", "-n", "2"])
    assert listed.exit_code == 0, listed.output
    assert "2 older runs not listed: agent runs --all" in listed.output, listed.output
    assert sum(" finished " in line for line in listed.output.splitlines()) == 2, listed.output
    every = runner.invoke(app, ["runs", "--all"])
    assert "older runs" not in every.output, every.output
    assert sum(" finished " in line for line in every.output.splitlines()) == 4, every.output
