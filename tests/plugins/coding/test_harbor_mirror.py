"""The Harbor agent's mirror of the container's working folder (``plugins.coding.harbor.mirror``)
against an environment with Harbor's interface (``harbor_env.FolderEnvironment``), and the agent
stopped by Harbor's time limit."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from plugins.coding.harbor import HorizonAgent
from plugins.coding.harbor import mirror as mirror_module
from plugins.coding.harbor.bridge import LoopBridge
from plugins.coding.harbor.mirror import ARCHIVE_OVER, ContainerMirror
from tests.plugins.coding.harbor_env import AgentContext, FolderEnvironment, build_task_container

TASK = Path(__file__).parent / "data" / "harbor-wordcount"
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")


def with_mirror(env: FolderEnvironment, local: Path, steps) -> object:
    """Run ``steps(mirror, run)`` in a worker thread (as the agent does), ``run(command)`` executing in the container."""

    async def main() -> object:
        bridge = LoopBridge(asyncio.get_running_loop())
        mirror = ContainerMirror(env, bridge, "/app")

        def work() -> object:
            mirror.download_start(local)
            mirror.attach(local)

            def run(command: str) -> None:
                mirror.push()
                result = bridge.call(env.exec, command, cwd="/app", timeout_sec=60)
                assert result.return_code == 0, result
                mirror.pull()

            return steps(mirror, run)

        return await asyncio.to_thread(work)

    return asyncio.run(main())


def test_both_directions_many_files_folders_and_what_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(mirror_module, "MAX_FILE_BYTES", 1000)
    env = FolderEnvironment(tmp_path / "root", default_cwd="/app")
    (env.path("/app") / "keep.txt").parent.mkdir(parents=True)
    (env.path("/app") / "keep.txt").write_text("keep")
    local = tmp_path / "mirror"
    many = ARCHIVE_OVER + 4

    def steps(mirror: ContainerMirror, run) -> None:
        run(f"mkdir -p gen/deep && for i in $(seq {many}); do echo $i > gen/deep/f$i.txt; done; "
            "head -c 5000 /dev/zero > big.bin; mkdir __pycache__ && echo x > __pycache__/c.pyc")
        assert sorted(p.name for p in (local / "gen" / "deep").iterdir()) == sorted(f"f{i}.txt" for i in range(1, many + 1))
        assert (local / "gen" / "deep" / f"f{many}.txt").read_text() == f"{many}\n"  # came as one tar archive
        assert not (local / "big.bin").exists() and not (local / "__pycache__").exists()  # too large; a cache
        # the file tools' side: a new folder with a file, an edit, a deletion, Horizon's own folder
        (local / "new" / "sub").mkdir(parents=True)
        (local / "new" / "sub" / "a.txt").write_text("from the tools")
        (local / "keep.txt").write_text("edited")
        shutil.rmtree(local / "gen")
        (local / ".horizon").mkdir()
        (local / ".horizon" / "call-1.txt").write_text("observation")
        run("cat new/sub/a.txt keep.txt > both.txt; rm -r new")
        assert (local / "both.txt").read_text() == "from the toolsedited"
        assert not (local / "new").exists()  # removed in the container, so in the mirror

    with_mirror(env, local, steps)
    app = env.path("/app")
    assert not (app / "gen").exists() and (app / "keep.txt").read_text() == "edited" and (app / "big.bin").stat().st_size == 5000
    assert not (app / ".horizon").exists()  # Horizon's observations never reach the container


class BusyboxFolder(FolderEnvironment):
    """A container whose ``find`` has no ``-printf`` (busybox)."""

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
        if "-printf" in command:
            command = "echo 'find: unrecognized: -printf' >&2; exit 1"
        return await super().exec(command, cwd, env, timeout_sec, user)


def test_without_find_printf_the_listing_compares_contents(tmp_path):
    env = BusyboxFolder(tmp_path / "root", default_cwd="/app")
    env.path("/app").mkdir(parents=True)
    for name in ("a.txt", "b.txt"):
        (env.path("/app") / name).write_text(name)
    local = tmp_path / "mirror"

    def steps(mirror: ContainerMirror, run) -> tuple[int, bool]:
        before = (local / "b.txt").stat().st_mtime_ns
        run("echo changed > a.txt; echo c > c.txt")
        assert (local / "a.txt").read_text() == "changed\n" and (local / "c.txt").read_text() == "c\n"
        return (local / "b.txt").stat().st_mtime_ns == before, mirror._find_works

    untouched, find_works = with_mirror(env, local, steps)
    assert untouched and not find_works  # b.txt was not rewritten: its content had not changed


def test_harbors_time_limit_stops_the_agent_and_it_leaves_the_container_alone(tmp_path):
    turns = [{"tool": "shell", "arguments": {"command": "sleep 4; echo late > late.txt"}},
             {"tool": "shell", "arguments": {"command": "echo after > after.txt"}},
             {"tool": "finish", "arguments": {"summary": "done"}}]  # fmt: skip
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    env = build_task_container(TASK, tmp_path / "container")
    agent = HorizonAgent(logs_dir=tmp_path / "logs", script=str(script))
    context = AgentContext()

    async def main() -> int:
        await agent.setup(env)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent.run("do it", env, context), timeout=2)  # as Harbor's trial applies its agent timeout
        calls = len(env.calls)
        await asyncio.sleep(4)
        return len(env.calls) - calls

    assert asyncio.run(main()) == 0  # nothing more ran in the container after the cancellation
    assert not (env.path("/app") / "after.txt").exists()
