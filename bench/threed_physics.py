"""Does it stand? The drop test's verdicts and cost on six objects built through the 3D tools.

    .venv/bin/python bench/threed_physics.py             # the six objects, 5 drop tests each (median seconds)
    .venv/bin/python bench/threed_physics.py --quick     # CI: 2 objects, 1 drop test each

Each object is built in one Blender worker with the plugin's typed tools (the builds of
``bench/threed_reward_data/pairs.py``), then ``drop_test`` (``plugins/threed/physics_probe.py``:
Blender's rigid body world, a level drop and 8 nudged 5°) runs on it and ``physics.judge`` gives
the verdict. The table gives the verdict, the tilt and settle time of the drop that decided it, the
rigid bodies, and the seconds: the worker's own (building the bodies, simulating 3 s at 30 frames
of 10 substeps) and the whole call as the reward makes it. The exit status is 1 when a verdict is not
the expected one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rich.console import Console
from rich.table import Table
from threed_reward_data.pairs import chair, lamp, shelf, wine_glass, without

from core.sandbox import open_sandbox
from core.tools import ToolContext
from plugins.threed import physics
from plugins.threed.tools import close_worker, threed_tools, worker

TOOLS = {t.name: t for t in threed_tools()}

#: (object, its build, the verdict it must get)
OBJECTS = [
    ("standing chair", chair, "stands"),
    ("chair missing two legs", lambda: without(without(chair(), "Leg.BL"), "Leg.BR"), "tipped"),
    ("lamp", lamp, "stands"),
    ("top-heavy lamp (6 cm base)", lambda: lamp(base_radius=0.03), "tipped"),
    ("bookcase", shelf, "stands"),
    ("wine glass", wine_glass, "stands"),
]
QUICK = ["standing chair", "chair missing two legs"]


def main() -> int:
    """Build each object, drop it, print the table; 1 when a verdict is not the expected one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI: two objects, one drop test each")
    parser.add_argument("--repeat", type=int, default=5, help="drop tests per object (the seconds are their median)")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    chosen = [o for o in OBJECTS if not args.quick or o[0] in QUICK]
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="threed-physics-") as tmp:
        ws, scratch = Path(tmp) / "ws", Path(tmp) / "scratch"
        ws.mkdir()
        scratch.mkdir()
        ctx = ToolContext(workspace=ws, sandbox=open_sandbox(ws, scratch), scratch=scratch)
        try:
            for what, build, expected in chosen:
                worker(ctx).call("new_scene", {})
                for name, call_args in build():
                    if name in ("add_light", "set_camera"):
                        continue  # nothing to drop
                    result = TOOLS[name](call_args, ctx)
                    if result.is_error:
                        sys.exit(f"{what}: {name}({call_args}) failed: {result.output}")
                runs = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    data = worker(ctx).call("drop_test", {}, save=False, timeout_s=120)
                    runs.append((time.perf_counter() - start, data["timing_s"]))
                verdict = physics.judge(data)
                d = verdict.detail
                median = {k: statistics.median(t[k] for _, t in runs) for k in ("build", "simulate")}
                rows.append((what, d["verdict"], d["decided_by"], d["tilt_deg"], d["settle_s"], " | ".join(", ".join(b) for b in d["bodies"]),
                             median["build"], median["simulate"], statistics.median(s for s, _ in runs)))
                if d["verdict"] != expected:
                    failures.append(f"{what}: {d['verdict']}, expected {expected} ({verdict.message})")
        finally:
            close_worker(ctx)
    table = Table(title=f"drop test: 3 s simulated, level + 8 drops nudged 5°, median of {repeat}")
    for column in ("object", "verdict", "decided by", "tilt °", "settle s", "rigid bodies", "build s", "simulate s", "call s"):
        table.add_column(column, justify="right" if column.endswith((" s", "°")) else "left")
    for what, v, by, tilt, settle, bodies, b, s, total in rows:
        table.add_row(what, v, by, f"{tilt:.1f}", "-" if settle is None else f"{settle:.2f}", bodies, f"{b:.3f}", f"{s:.3f}", f"{total:.3f}")
    Console(width=220).print(table)
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
