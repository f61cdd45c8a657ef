"""Terminal-Bench task folders: reading them (and refusing what needs Docker), the sandbox's
second view of the workspace at /app, and grading real episodes of suites/terminal-bench."""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from core import eval as ev
from core.errors import UserError
from core.sandbox import BwrapSandbox, open_sandbox
from plugins.coding import terminal_bench as tb

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "suites" / "terminal-bench"
NEEDS_APT = Path(__file__).parent / "data" / "needs-apt"
NAMES = ["csv-summary", "fix-calc", "log-pipeline"]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")


@pytest.fixture(autouse=True)
def bubblewrap_only(monkeypatch):
    """These tests are of the bubblewrap path: what it honours and refuses, whether or not a
    container engine runs here (the container path: test_terminal_bench_container.py)."""
    monkeypatch.setenv(tb.SANDBOX_VARIABLE, "bwrap")


def harbor_task(folder: Path, dockerfile: str, files: dict[str, str] | None = None) -> Path:
    """A Terminal-Bench 2 task folder with this Dockerfile and build-context files."""
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "instruction.md").write_text("Write /app/out.txt.\n")
    (folder / "task.toml").write_text('version = "1.0"\n[verifier]\ntimeout_sec = 30.0\n[agent]\ntimeout_sec = 90.0\n')
    (folder / "environment" / "Dockerfile").write_text(textwrap.dedent(dockerfile))
    for name, text in (files or {}).items():
        (folder / "environment" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "environment" / name).write_text(text)
    (folder / "tests" / "test_outputs.py").write_text("def test_out():\n    assert open('/app/out.txt').read() == 'ok'\n")
    return folder


# --------------------------------------------------------------------------- reading


def test_suite_reads_as_coding_tasks_with_their_starting_trees(horizon_home):
    tasks = ev.load_suite(SUITE)
    assert [t.name for t in tasks] == NAMES
    for task in tasks:
        assert task.plugin("threed") == "coding"
        assert task.repo.is_relative_to(horizon_home / "cache" / "terminal-bench")
        meta = task.metadata["terminal_bench"]
        assert task.metadata["workspace_alias"] == meta["workdir"] == "/app"
        assert meta["tests"] == ["test_outputs.py"] and meta["test_timeout_s"] == 60.0 and meta["agent_timeout_s"] == 600.0
        assert task.spec.instruction == (task.folder / "instruction.md").read_text().strip()
    by_name = {t.name: t for t in tasks}
    assert sorted(p.name for p in by_name["fix-calc"].repo.iterdir()) == ["calc.py"]  # COPY calc.py /app/
    assert (by_name["csv-summary"].repo / "sales.csv").read_bytes() == (SUITE / "csv-summary" / "environment" / "sales.csv").read_bytes()
    again = ev.load_task(SUITE / "fix-calc")
    assert again.repo == by_name["fix-calc"].repo  # built once per content


def test_dockerfile_copies_env_args_and_folders(tmp_path):
    folder = harbor_task(tmp_path / "t", """\
        # syntax=docker/dockerfile:1
        ARG DATA=data
        FROM --platform=linux/amd64 python:3.11-slim AS base
        ENV GREETING="hello there" \\
            MODE=test PATH="/opt/venv/bin:$PATH"
        WORKDIR /app
        COPY ${DATA}/ ./inputs/
        COPY --chmod=755 run.sh *.cfg /app/bin/
        RUN mkdir -p /app/out logs && pip install --no-cache-dir pytest
        WORKDIR /app
        CMD ["bash"]
        """, {"data/a.txt": "A", "data/sub/b.txt": "B", "run.sh": "echo", "x.cfg": "1", "y.cfg": "2"})  # fmt: skip
    task = tb.read_task(folder)
    assert task.layout == tb.LAYOUT_TB2 and task.environment.base_image == "python:3.11-slim"
    assert task.environment.env == {"GREETING": "hello there", "MODE": "test", "PATH": "/opt/venv/bin:"}
    assert tb.task_metadata(task)["terminal_bench"]["env"] == {"GREETING": "hello there", "MODE": "test"}  # not PATH
    assert (task.test_timeout_s, task.agent_timeout_s) == (30.0, 90.0)
    tree = tmp_path / "tree"
    tb.build_start_tree(task, tree)
    files = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*"))
    assert files == ["bin", "bin/run.sh", "bin/x.cfg", "bin/y.cfg", "inputs", "inputs/a.txt", "inputs/sub", "inputs/sub/b.txt", "logs", "out"]
    assert (tree / "bin" / "run.sh").stat().st_mode & 0o777 == 0o755


def test_terminal_bench_1_layout(tmp_path):
    folder = tmp_path / "tb1"
    (folder / "tests").mkdir(parents=True)
    (folder / "task.yaml").write_text("instruction: |-\n  Write hello to /app/hello.txt.\ndifficulty: easy\nmax_agent_timeout_sec: 180\nmax_test_timeout_sec: 30\n")
    (folder / "Dockerfile").write_text("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\nCOPY seed.txt /app/\n")
    (folder / "seed.txt").write_text("seed")
    (folder / "docker-compose.yaml").write_text("services:\n  client:\n    build:\n      dockerfile: Dockerfile\n    command: [sh, -c, sleep infinity]\n")
    (folder / "run-tests.sh").write_text("uv run pytest $TEST_DIR/test_outputs.py -rA\n")
    (folder / "solution.sh").write_text("echo hello > hello.txt\n")
    (folder / "tests" / "test_outputs.py").write_text("def test_hello():\n    assert open('/app/hello.txt').read() == 'hello\\n'\n")
    task = tb.read_task(folder)
    assert task.layout == tb.LAYOUT_TB1 and task.instruction == "Write hello to /app/hello.txt."
    assert (task.agent_timeout_s, task.test_timeout_s, task.tests) == (180.0, 30.0, ["test_outputs.py"])
    assert task.solution == folder / "solution.sh" and [c.source.name for c in task.environment.copies] == ["seed.txt"]
    (folder / "docker-compose.yaml").write_text("services:\n  client:\n    build: .\n  db:\n    image: postgres:16\n")
    with pytest.raises(UserError, match=r"docker-compose.yaml: needs Docker: it defines the services client, db"):
        tb.read_task(folder)


def test_apt_get_is_refused_naming_file_line_and_why():
    with pytest.raises(UserError) as refused:
        ev.load_task(NEEDS_APT)
    assert str(refused.value).startswith(f"{NEEDS_APT / 'environment' / 'Dockerfile'}:6: needs Docker: RUN apt-get update")
    assert "installs system packages" in str(refused.value)


@pytest.mark.parametrize("dockerfile, files, why", [
    ("FROM golang:1.22 AS build\nWORKDIR /src\nFROM python:3.11-slim\nWORKDIR /app\n", {}, ":3: needs Docker: a second FROM makes a multi-stage build"),
    ("FROM python:3.11-slim\nWORKDIR /app\nCOPY --from=builder /out /app/\n", {}, ":3: needs Docker: COPY --from=builder"),
    ("FROM python:3.11-slim\nWORKDIR /app\nCOPY conf.ini /etc/app/conf.ini\n", {"conf.ini": ""}, ":3: needs Docker: it puts files at /etc/app/conf.ini, outside the working folder /app"),
    ("FROM python:3.11-slim\nWORKDIR /app\nRUN curl -sSL https://example.com/x.sh | sh\n", {}, ":3: needs Docker: RUN curl"),
    ("FROM python:3.11-slim\nWORKDIR /app\nRUN uv pip install --system numpy==0.0.1\n", {}, ":3: needs Docker: pip install numpy==0.0.1"),
    ("FROM python:3.11-slim\nWORKDIR /app\nRUN pip install surely-not-installed-horizon-pkg\n", {}, ":3: needs Docker: pip install surely-not-installed-horizon-pkg installs what"),
    ("FROM python:3.11-slim\nWORKDIR /app\nADD https://example.com/data.csv /app/\n", {}, ":3: needs Docker: ADD https://example.com/data.csv downloads"),
    ("FROM python:3.11-slim\nWORKDIR /app\nCOPY ../secret /app/\n", {}, ":3: needs Docker: ../secret lies outside the build context"),
    ("FROM python:3.11-slim\nCOPY x.txt /x.txt\n", {"x.txt": ""}, ": no WORKDIR"),
    ("FROM python:3.11-slim\nWORKDIR /app\nCOPY missing.txt /app/\n", {}, ":3: COPY source missing.txt is not in the build context"),
])  # fmt: skip
def test_what_needs_docker_is_refused(tmp_path, dockerfile, files, why):
    folder = harbor_task(tmp_path / "t", dockerfile, files)
    with pytest.raises(UserError, match="Dockerfile" + re.escape(why)):
        ev.load_task(folder)


def test_prebuilt_image_and_compose_are_refused(tmp_path):
    folder = harbor_task(tmp_path / "t", "FROM python:3.11-slim\nWORKDIR /app\n")
    (folder / "environment" / "docker-compose.yaml").write_text("services:\n  main: {}\n  redis: {image: redis}\n")
    with pytest.raises(UserError, match="environment: a docker-compose file .* multi-container environments are not run"):
        tb.read_task(folder)
    (folder / "environment" / "docker-compose.yaml").unlink()
    (folder / "environment" / "Dockerfile").unlink()
    (folder / "task.toml").write_text('[environment]\ndocker_image = "ghcr.io/x/y:1"\n')
    with pytest.raises(UserError, match=r"task.toml: needs Docker: it runs the prebuilt image ghcr.io/x/y:1"):
        tb.read_task(folder)


# --------------------------------------------------------------------------- the sandbox's alias


@needs_bwrap
def test_sandbox_shows_the_workspace_again_at_the_alias(tmp_path):
    workspace, scratch = tmp_path / "ws", tmp_path / "scratch"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "seed.txt").write_text("seed")
    sandbox = BwrapSandbox(workspace, scratch, alias="/app")
    result = sandbox.run(["bash", "-c", "cat /app/seed.txt; echo made > /app/made.txt; mkdir /app/sub && echo deep > /app/sub/d.txt"])
    assert result.exit_code == 0 and result.stdout == "seed", result.stderr
    assert (workspace / "made.txt").read_text() == "made\n" and (workspace / "sub" / "d.txt").read_text() == "deep\n"
    for path in ("/app/.git/x", "/new-top-level-file", "/usr/x"):  # .git read-only there too; / and the host read-only
        assert sandbox.run(["bash", "-c", f"echo no > {path}"]).exit_code != 0, path
    assert not (workspace / ".git" / "x").exists()
    assert BwrapSandbox(workspace, scratch).run(["test", "-e", "/app"]).exit_code == 1  # no alias: no /app


def test_alias_must_be_a_place_a_folder_can_be_bound(tmp_path):
    (tmp_path / "ws").mkdir()
    for bad, why in [("app", "absolute"), ("/usr", "system folder"), ("/", "system folder"), (str(tmp_path), "workspace or scratch"),
                     ("/etc/passwd/app", "cannot be made"), ("/etc/passwd", "not a folder")]:  # fmt: skip
        with pytest.raises(ValueError, match=why):
            BwrapSandbox(tmp_path / "ws", tmp_path / "scratch", alias=bad)
    with pytest.raises(UserError, match="only the sandbox can provide"):
        open_sandbox(tmp_path / "ws", tmp_path / "scratch", isolated=False, alias="/app")
    with pytest.raises(ValueError, match="would lie in the workspace"):
        BwrapSandbox(tmp_path / "ws", tmp_path / "scratch", alias="/app", binds={tmp_path: "/app/tests"})


@needs_bwrap
@pytest.mark.parametrize("alias", ["/srv/app", "/usr/src/app", "/opt/app", "/home/app", "/var/www/app"])
def test_alias_under_an_existing_host_folder(tmp_path, alias):
    workspace, scratch, extra = tmp_path / "ws", tmp_path / "scratch", tmp_path / "extra"
    workspace.mkdir()
    extra.mkdir()
    (workspace / "seed.txt").write_text("seed")
    (extra / "data.txt").write_text("data")
    sandbox = BwrapSandbox(workspace, scratch, alias=alias, binds={extra: "/tests"})
    parent = str(Path(alias).parent)
    script = f"cat {alias}/seed.txt /tests/data.txt && echo made > {alias}/made.txt && python -c 'print(1)'"
    result = sandbox.run(["bash", "-c", script])
    assert result.exit_code == 0 and result.stdout == "seeddata1\n", result.stderr
    assert (workspace / "made.txt").read_text() == "made\n"
    for path in (f"{parent}/new-file", "/tests/new-file", "/usr/new-file"):  # the host folders stay read-only
        assert sandbox.run(["bash", "-c", f"echo no > {path}"]).exit_code != 0, path
    if Path(parent).is_dir():  # what the host folder holds is still seen
        listed = sandbox.run(["ls", "-A", parent]).stdout.split()
        assert set(os.listdir(parent)) <= set(listed), listed


# --------------------------------------------------------------------------- episodes


@needs_bwrap
@pytest.mark.parametrize("policy, solved", [("reference", True), ("finish-only", False)])
def test_episode_is_graded_by_the_tasks_own_tests(horizon_home, tmp_path, policy, solved):
    from core.reward import Trajectory

    (task,) = ev.load_suite(SUITE, ["log-pipeline"])
    (spec,) = ev.episode_specs([task], plugin="coding", attempts=1, policy=policy, policy_config=None, limits={"max_steps": 5},
                               pricing={}, isolated=True, home=horizon_home, scripts_dir=tmp_path / "scripts")  # fmt: skip
    result = ev.run_episode(spec)
    assert result.exit_status == "submitted" and result.run_id, result
    assert (result.reward, result.resolved, result.reward_version) == (1.0 if solved else 0.0, solved, "terminal-bench/2"), result
    trajectory = Trajectory.from_run(result.run_id, horizon_home)
    workspace = trajectory.workspace
    assert (workspace / "top_ips.txt").exists() == solved  # the solution wrote through /app into the workspace
    opening = trajectory.messages[1].content
    assert "/app" in opening and "test_outputs" not in opening  # told where the files are, not shown the tests
    assert not any(p.name == "test_outputs.py" for p in workspace.rglob("*"))  # the tests never enter the workspace
    shell = [t for t in trajectory.tool_data if t["tool"] == "shell"]
    assert [t["is_error"] for t in shell] == ([False] if solved else [])


def test_eval_command_resolves_the_suite_with_the_reference_solutions(horizon_home):
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["eval", "coding", str(SUITE), "--policy", "reference", "--workers", "2", "--backend", "processes"])
    assert result.exit_code == 0, result.output
    brief = json.loads(Path(re.search(r"summary \(JSON\): (\S+)", result.output).group(1)).read_text())
    assert (brief["episodes"], brief["resolved_tasks"], brief["tasks_total"]) == (3, 3, 3), brief
    assert all(brief["tasks"][name]["pass@1"] == 1.0 and brief["tasks"][name]["mean_reward"] == 1.0 for name in NAMES)


# --------------------------------------------------------------------------- grading details


def grade(tmp_path: Path, test_source: str, workspace_files: dict[str, str], **tb_extra):
    """Run ``run_task_tests`` on a workspace made of ``workspace_files``, with one test file."""
    from plugins.coding.terminal_bench.reward import run_task_tests

    task = tmp_path / "task"
    (task / "tests").mkdir(parents=True, exist_ok=True)
    (task / "tests" / "test_outputs.py").write_text(textwrap.dedent(test_source))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in workspace_files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    tb_meta = {"folder": str(task), "workdir": "/app", "tests": ["test_outputs.py"], "test_timeout_s": 60.0,
               "env": {}, "test_env": {}, **tb_extra}  # fmt: skip
    return run_task_tests(tb_meta, workspace, tmp_path / "scratch")


@needs_bwrap
def test_grading_keeps_the_workspaces_git_repositories(tmp_path):
    run = grade(tmp_path, """\
        import os
        def test_repos():
            assert os.path.isfile('/app/.git/HEAD') and os.path.isfile('/app/proj/.git/HEAD')
        """, {".git/HEAD": "ref: refs/heads/main\n", "proj/.git/HEAD": "ref: refs/heads/main\n", "proj/a.txt": "a"})
    assert run.outcomes == {"test_outputs.py::test_repos": "passed"}, run.output


def test_suite_filters_by_name_before_reading_and_reports_every_refusal(tmp_path):
    suite = tmp_path / "suite"
    harbor_task(suite / "good", "FROM python:3.11-slim\nWORKDIR /app\n")
    harbor_task(suite / "bad-a", "FROM python:3.11-slim\nWORKDIR /app\nRUN apt-get install -y jq\n")
    harbor_task(suite / "bad-b", "FROM python:3.11-slim\n")
    assert [t.name for t in ev.load_suite(suite, ["good"])] == ["good"]  # the bad ones are not read
    with pytest.raises(UserError) as refused:
        ev.load_suite(suite)
    lines = str(refused.value).splitlines()
    assert len(lines) == 3 and "2 tasks" in lines[0], lines
    assert "bad-a/environment/Dockerfile:3: needs Docker" in lines[1] and "bad-b/environment/Dockerfile: no WORKDIR" in lines[2]


def test_a_task_folder_is_a_suite_of_one():
    (task,) = ev.load_suite(SUITE / "fix-calc")
    assert task.name == "fix-calc" and task.metadata["workspace_alias"] == "/app"


def test_a_folder_without_tasks_names_every_layout(tmp_path):
    with pytest.raises(UserError, match=r"instruction.md and task.toml, or task.yaml.*--task NAME"):
        ev.load_suite(tmp_path)


def test_a_prebuilt_image_without_environment_folder_is_refused_as_such(tmp_path):
    folder = tmp_path / "prebuilt"
    (folder / "tests").mkdir(parents=True)
    (folder / "instruction.md").write_text("Do it.\n")
    (folder / "task.toml").write_text('[environment]\ndocker_image = "ghcr.io/x/y:1"\n')
    assert tb.detect_layout(folder) == tb.LAYOUT_TB2
    with pytest.raises(UserError, match=r"task.toml: needs Docker: it runs the prebuilt image ghcr.io/x/y:1"):
        ev.load_task(folder)


def test_quoted_requirements_and_a_byte_order_mark_are_read(tmp_path):
    folder = harbor_task(tmp_path / "t", "\ufeffFROM python:3.11-slim\nWORKDIR /app\nRUN pip install 'pytest>=1,<100' \"packaging>=1\" && mkdir 'my dir'\n")
    (folder / "instruction.md").write_text("\ufeffWrite /app/out.txt.\n", encoding="utf-8")
    task = tb.read_task(folder)
    assert task.environment.folders == ["my dir"] and task.instruction == "Write /app/out.txt."
    for bad in ("RUN pip install pytest; rm -rf /", "RUN pip install \"$(cat reqs)\"", "RUN mkdir x > log"):
        harbor = harbor_task(tmp_path / str(len(list(tmp_path.iterdir()))), f"FROM python:3.11-slim\nWORKDIR /app\n{bad}\n")
        assert "is a shell command Horizon does not replay" in tb.read_task(harbor).refusal
        with pytest.raises(UserError, match="is a shell command Horizon does not replay.*it needs a container"):
            ev.load_task(harbor)


@pytest.mark.parametrize("name", ["instruction.md", "task.toml", "environment/Dockerfile"])
def test_a_file_that_is_not_utf8_is_named(tmp_path, name):
    folder = harbor_task(tmp_path / "t", "FROM python:3.11-slim\nWORKDIR /app\n")
    (folder / name).write_bytes((folder / name).read_bytes() + "# caf\u00e9\n".encode("latin-1"))
    with pytest.raises(UserError, match=re.escape(f"{folder / name} is not UTF-8 text") + ".*save it as UTF-8"):
        ev.load_task(folder)


def test_a_task_without_pytest_files_is_refused(tmp_path):
    folder = harbor_task(tmp_path / "t", "FROM python:3.11-slim\nWORKDIR /app\n")
    (folder / "tests" / "test_outputs.py").unlink()
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\ntest -f /app/out.txt\n")
    with pytest.raises(UserError, match=r"tests has no pytest files .*only a container runs its test script: it needs a container"):
        ev.load_task(folder)


@needs_bwrap
def test_tests_get_test_dir_and_the_compose_services_environment(tmp_path):
    folder = tmp_path / "tb1"
    (folder / "tests").mkdir(parents=True)
    (folder / "task.yaml").write_text("instruction: Say hi.\n")
    (folder / "Dockerfile").write_text("FROM python:3.13\nWORKDIR /app\n")
    (folder / "tests" / "test_outputs.py").write_text("def test_x():\n    pass\n")
    for environment in ("    environment:\n      - TEST_DIR=${T_BENCH_TEST_DIR}\n      - MODE=strict\n      - FROM_HOST\n",
                        "    environment:\n      TEST_DIR: ${T_BENCH_TEST_DIR}\n      MODE: strict\n"):  # fmt: skip
        (folder / "docker-compose.yaml").write_text(f"services:\n  client:\n    build:\n      dockerfile: Dockerfile\n{environment}")
        assert tb.read_task(folder).test_env == {"TEST_DIR": "${T_BENCH_TEST_DIR}", "MODE": "strict"}
    run = grade(tmp_path, """\
        import os
        def test_env():
            assert os.environ["MODE"] == "strict"
            assert os.path.isfile(os.path.join(os.environ["TEST_DIR"], "test_outputs.py"))
        """, {}, test_env=tb.read_task(folder).test_env)
    assert run.outcomes == {"test_outputs.py::test_env": "passed"}, run.output


@needs_bwrap
def test_tests_read_their_own_files_at_slash_tests(tmp_path):
    (tmp_path / "task" / "tests").mkdir(parents=True)
    (tmp_path / "task" / "tests" / "expected.txt").write_text("ok")
    run = grade(tmp_path, """\
        import os
        def test_out():
            assert open('/app/out.txt').read() == open('/tests/expected.txt').read()
            assert os.environ['TEST_DIR'] == '/tests'
        """, {"out.txt": "ok"})
    assert run.outcomes == {"test_outputs.py::test_out": "passed"}, run.output


def test_a_workdir_under_an_existing_host_folder_loads(tmp_path):
    folder = harbor_task(tmp_path / "t", "FROM python:3.11-slim\nWORKDIR /srv/app\n")
    assert ev.load_task(folder).metadata["workspace_alias"] == "/srv/app"


def test_the_tasks_own_agent_time_limit_caps_the_episodes(tmp_path, horizon_home):
    """``[agent] timeout_sec`` of a Harbor task lowers ``--time-limit``; it never raises it."""
    folder = harbor_task(tmp_path / "timed", "FROM python:3.11-slim\nWORKDIR /app\n")
    (folder / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 90\n[verifier]\ntimeout_sec = 30\n')
    (task,) = ev.load_suite(folder)

    def wall(limit: float) -> float:
        (spec,) = ev.episode_specs([task], plugin="coding", attempts=1, policy="finish-only", policy_config=None,
                                   limits={"max_steps": 5, "max_wall_s": limit}, pricing={}, isolated=True, home=horizon_home,
                                   scripts_dir=tmp_path / "scripts")  # fmt: skip
        return spec.limits["max_wall_s"]

    assert (wall(3600.0), wall(60.0)) == (90.0, 60.0)
