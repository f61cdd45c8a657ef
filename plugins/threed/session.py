"""One agent episode for the Blender add-on, in its own process, reporting as JSON lines.

    python -m plugins.threed.session --task-dir DIR --request TEXT [--policy scripted --script FILE]
                                     [--base-url URL --model NAME] [--no-sandbox]

The add-on starts this process so the agent loop never runs on Blender's main thread. It runs a
normal Horizon run (``core.runner.Run``) on ``DIR`` (the open scene saved as ``scene.blend``,
plus an optional ``task.json``) and writes one JSON object per line to stdout:

    {"type": "started", "run_id": "..."}
    {"type": "step", "step": 3, "tool": "add_primitive", "args": {...validated...},
     "ok": true, "output": "added cube 'Tabletop' ...", "seconds": 0.08}
    {"type": "end", "status": "finished", "exit_status": "submitted", "reward": 1.0, "summary": "..."}
    {"type": "error", "message": "..."}               (the run could not start)

``args`` are the tool's validated arguments (pydantic ``model_dump``), so the add-on can apply
the same operation (``plugins.threed.ops``) to the open scene. SIGINT stops the run after the
step in flight (it stays resumable with ``agent resume``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.api import HorizonError, Limits, Pricing, Run, Task, ToolError, load_settings, make_policy, policy_spec
from plugins.threed.tools import threed_tools

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
    args = parser.parse_args(argv)

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind == "tool" and data["call"] is not None:
            call = data["call"]
            _emit(out, {"type": "step", "step": data["step"], "tool": call.name, "args": _validated(call.name, call.arguments),
                        "ok": not data["is_error"], "output": data["output"][:2000], "seconds": round(data["duration_s"], 3)})
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
