"""Terminal-Bench / Harbor tasks in a real container built from their own Dockerfile
(``core.sandbox.container``, ``plugins.coding.terminal_bench.container`` and ``verify``), on the
real engine: skipped only where no container engine answers (``.ci/run`` starts Docker's daemon).

The fixture tasks (``data/harbor/``, Harbor's format) build on Horizon's local stand-in base images
(built once per engine store: the ``base_images`` fixture), so the first run builds three small
task images and later runs find them cached.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from core import eval as ev
from core.errors import UserError
from core.sandbox import SandboxLimits, open_container
from plugins.coding import terminal_bench as tb

HARBOR = Path(__file__).parent / "data" / "harbor"
TASKS = ["apt-and-pip", "outside-workdir", "tmp-workdir"]


@pytest.fixture(scope="module")
def base_images(engine):
    """Horizon's stand-in base images, built when the engine lacks them (about 2 minutes, once)."""
    from core.sandbox.images import ensure_base

    return {name: ensure_base(engine, name) for name in ("debian", "python")}


@pytest.fixture(autouse=True)
def no_forced_sandbox(monkeypatch):
    monkeypatch.delenv(tb.SANDBOX_VARIABLE, raising=False)


def eval_records(policy: str) -> tuple[dict, list[dict], str]:
    """``agent eval coding data/harbor --policy POLICY``: its summary, its result records, its output."""
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["eval", "coding", str(HARBOR), "--policy", policy, "--workers", "2", "--backend", "processes"])
    assert result.exit_code == 0, result.output
    summary = Path(re.search(r"summary \(JSON\): (\S+)", result.output).group(1))
    records = [json.loads(line) for line in (summary.parent / "results.jsonl").read_text().splitlines()]
    return json.loads(summary.read_text()), records, result.output


def test_tasks_load_into_containers_with_their_reasons(horizon_home, base_images):
    tasks = {t.name: t for t in ev.load_suite(HARBOR)}
    assert sorted(tasks) == TASKS
    for name, task in tasks.items():
        container = task.metadata["container"]
        assert container["image"].startswith(f"horizon-task/{name}:") and "workspace_alias" not in task.metadata
        assert "container built from its Dockerfile" in task.metadata["terminal_bench"]["reason"]
    apt = tasks["apt-and-pip"].metadata["container"]
    assert (apt["workdir"], apt["cpus"], apt["memory_bytes"], apt["allow_internet"]) == ("/app", 1.0, 1 << 30, False)
    assert apt["notes"] == [f"base image python:3.13-slim-bookworm is not available here; the local {base_images['python']} stood in for it"]
    assert "RUN apt-get update" in tasks["apt-and-pip"].metadata["terminal_bench"]["reason"]
    assert tasks["outside-workdir"].metadata["container"]["workdir"] == "/root"
    assert "WORKDIR /root" in tasks["outside-workdir"].metadata["terminal_bench"]["reason"]
    assert {"README.txt", ".bashrc"} <= {p.name for p in tasks["outside-workdir"].repo.iterdir()}  # the image's /root, copied out
    assert sorted(p.name for p in tasks["tmp-workdir"].repo.iterdir()) == ["seed.txt"]
    again = ev.load_task(HARBOR / "apt-and-pip")
    assert again.metadata["container"]["image"] == apt["image"] and again.repo == tasks["apt-and-pip"].repo  # cached by content


def test_reference_solutions_pass_and_finish_only_fails(horizon_home, base_images):
    from core.reward import Trajectory

    solved, records, output = eval_records("reference")
    assert (solved["episodes"], solved["resolved_tasks"], solved["infra_failures"]) == (3, 3, 0), output
    assert all(r["reward_version"] == tb.REWARD_VERSION and r["reward"] == 1.0 for r in records), records
    outside = next(r for r in records if r["task"] == "outside-workdir")
    trajectory = Trajectory.from_run(outside["run_id"], horizon_home)
    assert (trajectory.workspace / "notes.md").is_file()  # written in /root, the mounted workspace
    assert not (trajectory.workspace / "tests").exists()  # the tests went to /tests, never into the workspace
    container_diff = (horizon_home / "runs" / outside["run_id"] / "container.diff").read_text()
    assert "+++ b/tmp/solution/answer.txt" in container_diff and "+forty-two" in container_diff  # the run artefact
    assert "b/root/notes.md" not in container_diff and "+++ b/solution/answer.txt" in container_diff  # the working folder's changes are patch.diff's
    assert "notes.md" in (horizon_home / "runs" / outside["run_id"] / "patch.diff").read_text()
    opening = trajectory.messages[1].content
    assert "ubuntu:24.04 is not available here" in opening and "run in this same container" in opening
    failed, records, output = eval_records("finish-only")
    assert (failed["episodes"], failed["resolved_tasks"], failed["infra_failures"]) == (3, 0, 0), output
    assert {r["summary"] for r in records} == {"reward 0 from reward.txt", "reward 0 from reward.json (answer 0, notes 0)"}


def test_the_verifier_sees_the_whole_container_and_reads_reward_json(horizon_home, base_images, tmp_path):
    task = ev.load_task(HARBOR / "outside-workdir")
    workspace, scratch = tmp_path / "ws", tmp_path / "scratch"
    shutil.copytree(task.repo, workspace, symlinks=True)  # as core.workspace copies (the image's /root has links)
    from plugins.coding.terminal_bench.verify import verify_in_container

    with open_container(task.metadata["container"], workspace, scratch) as sandbox:
        tb_meta = task.metadata["terminal_bench"]
        half = sandbox.run(["bash", "-c", "mkdir -p /tmp/solution && echo forty-two > /tmp/solution/answer.txt"])
        assert half.ok, half
        verdict = verify_in_container(tb_meta, sandbox, scratch)
        assert verdict.reward == 0.5 and not verdict.correct, verdict  # mean of {"answer": 1, "notes": 0}
        assert (verdict.components["reward:answer"].value, verdict.components["reward:notes"].value) == (1.0, 0.0)
        (workspace / "notes.md").write_text("# notes\n")  # through the file tools' side: the host workspace
        verdict = verify_in_container(tb_meta, sandbox, scratch)
        assert verdict.reward == 1.0 and verdict.correct and verdict.components["report"].detail["source"] == "reward.json"


def test_network_memory_and_time_limits_are_enforced(horizon_home, base_images, tmp_path):
    task = ev.load_task(HARBOR / "tmp-workdir")
    spec = task.metadata["container"]
    assert (spec["workdir"], spec["memory_bytes"], spec["allow_internet"]) == ("/tmp", 256 << 20, False)
    workspace = tmp_path / "ws"
    shutil.copytree(task.repo, workspace, symlinks=True)  # as core.workspace copies (the image's /root has links)
    with open_container(spec, workspace, tmp_path / "scratch") as sandbox:
        seen = sandbox.run(["sh", "-c", "pwd; cat seed.txt; echo hi > made.txt; cat /etc/entrypoint-ran"])
        assert seen.stdout.split() == ["/tmp", "seed", "ready"] and (workspace / "made.txt").read_text() == "hi\n"
        net = sandbox.run(["python3", "-c", "import socket; socket.create_connection(('pypi.org', 443), timeout=5)"])
        assert net.exit_code != 0 and ("gaierror" in net.stderr or "unreachable" in net.stderr.lower()), net
        hog = sandbox.run(["python3", "-c", "b = bytearray(600 << 20); print('allocated')"])
        assert "allocated" not in hog.stdout and hog.exit_code != 0, hog  # the 256 MiB limit kills it
        slow = sandbox.run(["sleep", "30"], limits=SandboxLimits(timeout_s=2))
        assert slow.timed_out and slow.duration_s < 20, slow
        after = sandbox.run(["cat", "/tmp/seed.txt"])  # the container outlives a killed command
        assert after.ok and after.stdout == "seed\n"
    assert sandbox.container is None


def test_unpullable_images_are_swapped_for_stand_ins_and_stages_kept(engine, base_images):
    from core.sandbox.images import base_tag, derived_dockerfile

    text, swapped = derived_dockerfile(engine, textwrap.dedent("""\
        FROM ubuntu:24.04 AS build
        COPY --from=ghcr.io/astral-sh/uv:0.8.15 /uv /uvx /usr/local/bin/
        FROM python:3.12-slim
        COPY --from=build /usr/local/bin/uv /usr/local/bin/uv
    """))
    assert text.splitlines() == [
        f"FROM {base_images['debian']} AS build", f"COPY --from={base_tag('uv')} /uv /uvx /usr/local/bin/",
        f"FROM {base_images['python']}", "COPY --from=build /usr/local/bin/uv /usr/local/bin/uv",
    ]
    assert set(swapped) == {"ubuntu:24.04", "ghcr.io/astral-sh/uv:0.8.15", "python:3.12-slim"}


def test_a_failing_build_is_refused_when_the_task_is_loaded(horizon_home, base_images, tmp_path):
    folder = tmp_path / "broken"
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "instruction.md").write_text("Do it.\n")
    (folder / "task.toml").write_text('version = "1.0"\n')
    (folder / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (folder / "environment" / "Dockerfile").write_text(textwrap.dedent("""\
        FROM ubuntu:24.04
        WORKDIR /app
        RUN echo building && exit 3
    """))
    with pytest.raises(UserError, match=r"Dockerfile: the image could not be built .*exit code"):
        ev.load_task(folder)


def test_a_task_whose_test_script_installs_what_its_tests_import_runs_in_the_container(horizon_home, base_images):
    """The published sparql-university (../shared/data, skipped when absent): its Dockerfile only
    copies a file, but its run-tests.sh installs rdflib, which Horizon's Python lacks, so it gets
    the container (where run-tests.sh runs, as in Harbor), with that reason in the set-up text."""
    folder = HARBOR.parents[4].parent / "shared" / "data" / "terminal-bench" / "tb1-core" / "sparql-university"
    if not (folder / "run-tests.sh").is_file():
        pytest.skip(f"the published Terminal-Bench tasks are not at {folder.parents[1]} (../shared/data is not present)")
    task = ev.load_task(folder)
    assert task.metadata["terminal_bench"]["sandbox"] == "container" and task.metadata["container"]["workdir"] == "/app"
    reason = task.metadata["terminal_bench"]["reason"]
    assert "container built from its Dockerfile" in reason and "run-tests.sh:23: its tests need rdflib==7.1.4" in reason, reason
    assert (task.repo / "university_graph.ttl").is_file()


def test_the_stand_ins_have_uv_where_astral_sh_would_put_it(engine, base_images):
    """Dockerfiles that install uv from astral.sh (unreachable here) then run ``/root/.local/bin/uv``
    (tb1's pandas-sql-query) find it there, as after the installer; ``uv`` is on PATH too."""
    done = engine.call(["run", "--rm", *engine.run_options(), base_images["debian"], "sh", "-c", "/root/.local/bin/uv --version && /root/.local/bin/uvx --version && uv --version"])
    lines = done.stdout.decode().split("\n")
    assert lines[0].startswith("uv ") and lines[1].startswith("uv") and lines[2] == lines[0], lines


def test_an_ubuntu_images_stand_in_says_it_is_debian(engine, base_images, tmp_path):
    """tb1's mcmc-sampling-stan and rstan-to-pystan pin Ubuntu 24.04's package versions
    (``gfortran=4:13.2.0-7ubuntu1``), which the Debian stand-in cannot have: the set-up text says so."""
    from core.sandbox.images import build_task_image

    (tmp_path / "Dockerfile").write_text(f"FROM ubuntu:24.04\nWORKDIR /app\nRUN echo {tmp_path.name} > /app/made\n")
    built = build_task_image(engine, "ubuntu-note", tmp_path / "Dockerfile", tmp_path)
    try:
        assert built.notes[-1].startswith(f"base image ubuntu:24.04 is not available here; the local {base_images['debian']} stood in for it")
        assert "not Ubuntu" in built.notes[-1] and "Ubuntu version pin" in built.notes[-1], built.notes
    finally:
        engine.call(["rmi", "-f", built.tag], check=False)
