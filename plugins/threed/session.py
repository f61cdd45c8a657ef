"""One agent episode for the Blender add-on, in its own process, reporting as JSON lines.

    python -m plugins.threed.session --task-dir DIR --request TEXT [--policy scripted --script FILE]
                                     [--base-url URL --model NAME] [--no-sandbox]
                                     [--replayed-tools NAME,NAME,...]

The add-on starts this process so the agent loop never runs on Blender's main thread. It runs a
normal Horizon run (``core.runner.Run``) on ``DIR`` (the open scene saved as ``scene.blend``,
plus an optional ``task.json``) and writes one JSON object per line to stdout:

    {"type": "started", "run_id": "..."}
    {"type": "step", "step": 3, "tool": "add_primitive", "args": {...validated...},
     "ok": true, "output": "added cube 'Tabletop' ...", "seconds": 0.08, "scene_file": null}
    {"type": "end", "status": "finished", "exit_status": "submitted", "reward": 1.0, "summary": "..."}
    {"type": "error", "message": "..."}               (the run could not start)

``args`` are the tool's validated arguments (pydantic ``model_dump``), so the add-on can apply
the same operation (``plugins.threed.ops``) to the open scene. A step the add-on cannot repeat
(a tool not named in ``--replayed-tools``: ``run_blender_python``, whose code the add-on never
runs, or a tool newer than the add-on) but that changed the saved scene carries ``scene_file``:
a copy of the agent's scene after that step (``DIR/snapshots/step-NNN.blend``), which the
add-on copies into the open scene. Whether the scene changed is read from the workspace's
scene file, which the worker saves after every scene-changing call. SIGINT stops the run after
the step in flight (it stays resumable with ``agent resume``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from core.api import HorizonError, Limits, Pricing, Run, Task, ToolContext, ToolError, load_settings, make_policy, policy_spec
from plugins.threed.tools import task_spec, threed_tools

_TOOLS = {t.name: t for t in threed_tools()}


def _emit(out, record: dict[str, Any]) -> None:
    out.write(json.dumps(record, default=str) + "\n")
    out.flush()


def _validated(name: str, raw: Any) -> dict[str, Any] | None:
    tool = _TOOLS.get(name)
    if tool is None:
        return None
    try:
        return tool.parse(raw).model_dump()
    except ToolError:
        return None


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:  # not saved yet: the worker starts lazily
        return None


class SceneSnapshots:
    """Copies of the agent's saved scene after steps the add-on cannot repeat from their arguments.

    Args:
        start: the scene file the run started from.
        folder: where the copies go (``step-NNN.blend``); created on first use.
        replayed: the tools the add-on repeats itself from their arguments (no copy for those).
    """

    def __init__(self, start: Path, folder: Path, replayed: set[str]) -> None:
        self.folder, self.replayed = folder, replayed
        self._digest = _digest(start)  # the scene the run started from (the task folder's copy)

    def after_step(self, scene: Path, step: int, tool: str, *, whole: bool = False) -> str | None:
        """Note the scene file ``scene``'s state after ``step``; return the path of a copy when
        the step changed the scene and the add-on does not repeat ``tool`` (or ``whole``: the
        add-on missed earlier steps and needs the whole scene), else None."""
        digest = _digest(scene)
        changed, self._digest = digest is not None and digest != self._digest, digest
        if not changed or (tool in self.replayed and not whole):
            return None
        return self.copy(scene, step)

    def copy(self, scene: Path, step: int) -> str:
        """Copy the scene file ``scene`` as the copy of ``step``; return the copy's path."""
        self.folder.mkdir(parents=True, exist_ok=True)
        copy = self.folder / f"step-{step:03d}.blend"
        shutil.copyfile(scene, copy)
        return str(copy)


def step_report(data: dict[str, Any], ctx: ToolContext, snapshots: SceneSnapshots, *, whole: bool = False) -> dict[str, Any]:
    """The step report of the loop's ``tool`` event ``data`` (with a ``call``), as the add-on applies it.

    Args:
        data: the event (``step``, ``call``, ``is_error``, ``output``, ``duration_s``).
        ctx: the run's tool context (its workspace holds the scene file the worker saves).
        snapshots: the run's ``SceneSnapshots``; a scene-changing step not repeated from its
            arguments gets a copy of the scene (``scene_file``).
        whole: send a copy of the scene even for a step the add-on repeats (it missed earlier ones).

    Returns:
        ``{"type": "step", "step", "tool", "args" (validated, or None), "ok", "output" (2,000
        characters at most), "seconds", "scene_file" (a path or None)}``.
    """
    call = data["call"]
    scene_file = None
    if not _TOOLS.get(call.name) or not _TOOLS[call.name].read_only:  # set-up has run: task_spec reads its copy
        scene_file = snapshots.after_step(ctx.workspace / task_spec(ctx).scene, data["step"], call.name, whole=whole)
    return {"type": "step", "step": data["step"], "tool": call.name, "args": _validated(call.name, call.arguments),
            "ok": not data["is_error"], "output": data["output"][:2000], "seconds": round(data["duration_s"], 3),
            "scene_file": scene_file}


def main(argv: list[str] | None = None, out=sys.stdout) -> int:
    """Run one episode and report it; returns 0 when it ran to the end, 1 when it could not start."""
    parser = argparse.ArgumentParser(prog="python -m plugins.threed.session")
    parser.add_argument("--task-dir", required=True, type=Path)
    parser.add_argument("--request", required=True)
    parser.add_argument("--policy", default="auto")
    parser.add_argument("--script", type=Path)
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--no-sandbox", action="store_true")
    parser.add_argument("--replayed-tools", default="", help="comma-separated tools the add-on repeats from their arguments")
    args = parser.parse_args(argv)
    replayed = {name for name in args.replayed_tools.split(",") if name}
    snapshots = SceneSnapshots(args.task_dir / "scene.blend", args.task_dir.resolve() / "snapshots", replayed)

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind == "tool" and data["call"] is not None:
            _emit(out, step_report(data, run.episode.ctx, snapshots))
        elif kind == "verify":
            _emit(out, {"type": "verify", "summary": data["reward"].summary, "reward": data["reward"].reward, "version": data["reward"].version})

    try:
        settings = load_settings(base_url=args.base_url, model=args.model)
        spec = policy_spec(args.policy, settings, args.script)
        run = Run.start(
            Task(plugin="threed", instruction=args.request, repo=args.task_dir.resolve()), make_policy(spec, settings),
            policy_config=spec, limits=Limits(max_steps=args.max_steps), pricing=Pricing(), isolated=not args.no_sandbox,
            on_event=on_event,
        )
    except (HorizonError, TypeError, ValueError) as exc:
        _emit(out, {"type": "error", "message": str(exc)})
        return 1
    _emit(out, {"type": "started", "run_id": run.run_id})
    try:
        result = run.execute()
    finally:
        run.close()
    _emit(out, {"type": "end", "status": result.status, "exit_status": result.exit_status.value,
                "reward": result.reward, "summary": result.exit_detail, "run_id": result.run_id})
    return 0


if __name__ == "__main__":
    sys.exit(main())
