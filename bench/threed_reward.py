"""Does the 3D reward rank a right build above its plausible wrong twin?

    .venv/bin/python bench/threed_reward.py                  # all pairs (bench/threed_reward_data/pairs.py)
    .venv/bin/python bench/threed_reward.py --words          # only the pairs scored with the request alone
    .venv/bin/python bench/threed_reward.py --quick          # CI: 4 request-alone pairs
    .venv/bin/python bench/threed_reward.py --markdown       # the table as Markdown (bench/README.md)
    .venv/bin/python bench/threed_reward.py --previews DIR --only chair/legs-stacked,...   # also render PNGs

Every build is a fresh episode on a task folder holding the object's ``task.json``: the plugin's
own ``setup``, then the build's calls through the plugin's typed tools (the functions a model
calls), then the plugin's ``reward`` (``threed-geometry/8``; the cost of its look renders and drop test is printed). Each right build is built once and
compared with each of its twins. The table gives both rewards, the margin, what the twin scores on
the per-object and scene checks alone (what version 2 judged: the boxes), and the component that
separates the pair most (the largest weighted drop from right to twin).

Two sets of pairs: the ``assembly`` ones (``OBJECTS``/``TWINS``: task files that state the
object's parts, sizes and assembly) and the request-alone ones (``WORDS_OBJECTS``/``WORDS_TWINS``,
named ``words-*``: ``task.json`` holds only the request, so the whole-object checks are the ones
the reward derives from the words and the scene, ``plugins/threed/structure.py``).

The exit status is non-zero when any twin is not strictly below its right build (by at least
``WORDS_MARGIN``, 0.3, for a request-alone pair), when a right build fails a check of its own,
or when a tool call of a build fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rich.console import Console
from rich.table import Table
from threed_reward_data.pairs import OBJECTS, QUICK, TWINS, WORDS_MARGIN, WORDS_OBJECTS, WORDS_TWINS, Call

from core.plugin import Task
from core.reward import RewardResult, Trajectory
from core.sandbox import open_sandbox
from core.tools import ToolContext
from plugins.threed.plugin import ThreeDPlugin
from plugins.threed.tools import close_worker, threed_tools

TOOLS = {t.name: t for t in threed_tools()}


#: Seconds per build: the reward's whole call, the look's renders in it (``look_data``) and its drop test (``drop_test``).
COSTS: list[dict[str, float]] = []


def look_seconds(verdict: RewardResult) -> dict[str, float]:
    """The worker's seconds per look render (rays, beauty, bare, data) that the verdict records, or {}."""
    for c in verdict.components.values():
        if "look_seconds" in c.detail:
            return c.detail["look_seconds"]
    return {}


def build(task_json: dict[str, Any], calls: list[Call], root: Path, preview: Path | None = None) -> tuple[RewardResult, float]:
    """One episode: set up a workspace with ``task_json``, make ``calls``, return the reward and seconds
    (the reward's own seconds and its look renders' are appended to ``COSTS``).

    Raises:
        RuntimeError: a tool call failed (the build script is wrong, not the reward).
    """
    shutil.rmtree(root, ignore_errors=True)
    workspace, scratch = root / "ws", root / "scratch"
    workspace.mkdir(parents=True)
    scratch.mkdir()
    (workspace / "task.json").write_text(json.dumps(task_json))
    ctx = ToolContext(workspace=workspace, sandbox=open_sandbox(workspace, scratch), scratch=scratch)
    plugin = ThreeDPlugin()
    task = Task(plugin="threed", instruction=task_json["request"], repo=workspace)
    start = time.perf_counter()
    try:
        plugin.setup(task, ctx)
        done = []  # what the reward sees of the episode's calls (it scores 0 for a run that built nothing)
        for name, args in calls:
            result = TOOLS[name](args, ctx)
            if result.is_error:
                raise RuntimeError(f"{name}({args}) failed: {result.output}")
            done.append({"tool": name, "arguments": args, "is_error": False, "data": result.data})
        if preview is not None:
            out = TOOLS["render_preview"]({"path": "preview.png", "engine": "eevee", "width": 480, "height": 360, "samples": 16,
                                           "time_limit_s": 300}, ctx)
            if out.is_error:
                raise RuntimeError(f"render failed: {out.output}")
            preview.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(workspace / "preview.png", preview)
        judged = time.perf_counter()
        verdict = plugin.reward(task, Trajectory(context=ctx, tool_data=done))
        dropped = verdict.components.get("physics/stands")
        COSTS.append({"reward": time.perf_counter() - judged, "look": sum(look_seconds(verdict).values()),
                      "drop": (dropped.detail.get("timing_s") or {}).get("total", 0.0) if dropped else 0.0})
    finally:
        close_worker(ctx)
    return verdict, time.perf_counter() - start


def separating(right: RewardResult, twin: RewardResult) -> str:
    """The component whose weighted value drops most from the right build to the twin, with its message."""
    total = sum(c.weight for c in twin.components.values()) or 1.0
    best, drop = "-", 0.0
    for name, c in twin.components.items():
        before = right.components.get(name)
        loss = ((before.value if before else 1.0) - c.value) * c.weight / total
        if loss > drop:
            best, drop = name, loss
    if best == "-":
        return best
    return f"{best}: {twin.components[best].detail.get('message', '')}"


def boxes_only(verdict: RewardResult) -> float:
    """What version 2 would have scored: the mean of the per-object and scene checks, without ``assembly/*`` and ``structure/*``."""
    values = [c.value for n, c in verdict.components.items() if not n.startswith(("assembly/", "structure/"))]
    return sum(values) / len(values)


def main() -> int:
    """Build the pairs, print the table and the minimum separation; 1 when any twin is not below its right build."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI: the pairs in QUICK only")
    parser.add_argument("--words", action="store_true", help="only the pairs scored with the request alone (words-*)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--only", default="", help="comma-separated object/twin pairs, e.g. chair/legs-stacked")
    parser.add_argument("--previews", type=Path, help="render each build of the selected pairs to DIR/<object>-<twin>.png (Eevee, 480x360)")
    args = parser.parse_args()
    objects = {**OBJECTS, **WORDS_OBJECTS}
    chosen = [(o, t) for o, t, _, _ in (WORDS_TWINS if args.words else [*TWINS, *WORDS_TWINS])]
    if args.quick:
        chosen = QUICK
    if args.only:
        chosen = [tuple(p.split("/", 1)) for p in args.only.split(",")]
    twins = {(o, t): (why, make) for o, t, why, make in [*TWINS, *WORDS_TWINS]}
    unknown = [p for p in chosen if p not in twins]
    if unknown:
        sys.exit(f"unknown pair(s) {unknown}; known: {', '.join(f'{o}/{t}' for o, t in twins)}")
    console = Console(width=200)
    rows, failures, started = [], [], time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="threed-reward-") as tmp:
        rights: dict[str, RewardResult] = {}
        for obj, twin_name in chosen:
            task_json, make_right = objects[obj]
            if obj not in rights:
                png = args.previews / f"{obj}-right.png" if args.previews else None
                rights[obj], seconds = build(task_json, make_right(), Path(tmp) / obj, png)
                console.print(f"{obj} right build: {rights[obj].reward:.3f} in {seconds:.1f} s, reward {COSTS[-1]['reward']:.1f} s, "
                              f"look {COSTS[-1]['look']:.1f} s, drop test {COSTS[-1]['drop']:.2f} s ({rights[obj].summary})")
                if not rights[obj].correct:
                    failures.append(f"{obj}: the right build fails a check ({rights[obj].summary})")
            why, make = twins[(obj, twin_name)]
            png = args.previews / f"{obj}-{twin_name}.png" if args.previews else None
            twin, seconds = build(task_json, make(), Path(tmp) / f"{obj}-{twin_name}", png)
            right = rights[obj]
            margin = right.reward - twin.reward
            rows.append((f"{obj}/{twin_name}", why, right.reward, twin.reward, margin, boxes_only(twin), separating(right, twin)))
            console.print(f"  {obj}/{twin_name}: {twin.reward:.3f} (margin {margin:+.3f}) in {seconds:.1f} s, reward "
                          f"{COSTS[-1]['reward']:.1f} s, look {COSTS[-1]['look']:.1f} s, drop test {COSTS[-1]['drop']:.2f} s")
            least = WORDS_MARGIN if obj in WORDS_OBJECTS else 0.0
            if margin <= 0 or margin < least:
                failures.append(f"{obj}/{twin_name}: the twin scores {twin.reward:.3f}, not below {right.reward:.3f}"
                                + (f" by more than {least:g}" if least else ""))
    if args.markdown:
        print("| pair | wrong twin | right | twin | margin | twin, boxes only (v2) | separated by |\n|---|---|---:|---:|---:|---:|---|")
        for pair, why, r, t, m, old, sep in rows:
            print(f"| {pair} | {why} | {r:.3f} | {t:.3f} | {m:+.3f} | {old:.3f} | {sep.replace('|', '/')} |")
    else:
        table = Table(title="threed reward: right builds vs wrong twins")
        for column in ("pair", "wrong twin", "right", "twin", "margin", "twin, boxes only (v2)", "separated by"):
            table.add_column(column, justify="left" if column in ("pair", "wrong twin", "separated by") else "right")
        for pair, why, r, t, m, old, sep in rows:
            table.add_row(pair, why, f"{r:.3f}", f"{t:.3f}", f"{m:+.3f}", f"{old:.3f}", sep)
        console.print(table)
    margins = [m for *_, m, _, _ in rows]
    looked = [c for c in COSTS if c["look"] > 0]
    if looked:
        reward_s, look_s = (sorted(c[k] for c in looked) for k in ("reward", "look"))
        print(f"reward of the {len(looked)} builds whose task asks a look (of {len(COSTS)}): median {reward_s[len(looked) // 2]:.1f} s "
              f"(max {reward_s[-1]:.1f}), of which the look's renders (threed-geometry/8) median {look_s[len(looked) // 2]:.1f} s "
              f"(max {look_s[-1]:.1f})")
    dropped = sorted(c["drop"] for c in COSTS if c["drop"] > 0)
    if dropped:
        print(f"drop test (Blender rigid body world) in {len(dropped)} of {len(COSTS)} rewards: median {dropped[len(dropped) // 2]:.2f} s "
              f"(max {dropped[-1]:.2f})")
    print(f"{len(rows)} pairs in {time.perf_counter() - started:.0f} s; minimum separation {min(margins):+.3f}; "
          f"twins below their right build: {sum(m > 0 for m in margins)}/{len(rows)}")
    alone = [m for (pair, *_), m in zip(rows, margins, strict=True) if pair.startswith("words-")]
    if alone:
        print(f"with the request alone: {len(alone)} pairs, minimum separation {min(alone):+.3f}, "
              f"{sum(m >= WORDS_MARGIN for m in alone)}/{len(alone)} by at least {WORDS_MARGIN:g}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
