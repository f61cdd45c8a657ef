"""The 3D plugin's costs, printed as tables.

    .venv/bin/python bench/threed.py [--calls 30] [--faces 1000000]
    .venv/bin/python bench/threed.py --quick      # 5 calls each, a 50,000-face mesh (CI)

1. Time per tool call against the same operation in bare bpy. The tool path is what the agent
   pays: pydantic validation, a JSON-lines round trip to the Blender worker process, the
   operation, and saving the .blend (the step's checkpoint). The bare path runs the same
   operation function (``plugins.threed.ops``) directly in a process that imported bpy, without
   and with the same save. Target: a tool call under 2 times the bare operation. Medians of
   ``--calls`` calls, in milliseconds.
2. The check suite on a torus of ``--faces`` triangles (default one million): building the
   trimesh, closed solid, dimensions, face count, bodies, Chamfer distance and filled-voxel IoU
   against a copy moved by 1 mm. Seconds.

Targets are reported, not asserted. The exit status is non-zero when the benchmark breaks: a
tool call that returns an error, the bare child process failing, or a check that gives the
torus a wrong verdict (not a closed solid, wrong dimensions, face count or number of bodies, a
Chamfer distance outside (0, 5 mm) or an IoU under 0.9 for the copy moved by 1 mm).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console
from rich.table import Table

#: (label, operation, arguments for call i) — the same for both paths.
CASES = [
    ("add_primitive cube", "add_primitive", lambda i: {"name": f"Box{i}", "kind": "cube", "size": [0.1, 0.2, 0.3], "location": [i * 0.3, 0, 0]}),
    ("transform", "transform", lambda i: {"name": f"Box{i}", "location": [i * 0.3, 1, 0], "rotation_deg": [0, 0, 15]}),
    ("set_material", "set_material", lambda i: {"object": f"Box{i}", "material": "Oak", "preset": "oak"}),
    ("add_modifier bevel", "add_modifier", lambda i: {"name": f"Box{i}", "kind": "bevel", "width": 0.005, "segments": 2}),
    ("inspect_scene (50)", "inspect_scene", lambda i: {"offset": 0, "limit": 50}),
]


def bare(calls: int, scene: str) -> dict[str, dict[str, float]]:
    """Runs in a child process with bpy: median ms of each operation, without and with a save."""
    import bpy

    from plugins.threed import ops

    out = {}
    for save in (False, True):
        ops.new_scene({})
        for label, op, make in CASES:
            times = []
            for i in range(calls):
                start = time.perf_counter()
                ops.OPS[op](make(i))
                if save and op in ops.MUTATING:
                    bpy.ops.wm.save_as_mainfile(filepath=scene, check_existing=False, compress=False)
                times.append(time.perf_counter() - start)
            out.setdefault(label, {})["saved" if save else "plain"] = statistics.median(times) * 1000
    return out


def tool_calls(calls: int, root: Path) -> dict[str, float]:
    """Median ms of each operation through the plugin's tool (worker already started)."""
    from core.sandbox import open_sandbox
    from core.tools import ToolContext
    from plugins.threed import tools

    (root / "ws").mkdir()
    (root / "scratch").mkdir()
    ctx = ToolContext(workspace=root / "ws", sandbox=open_sandbox(root / "ws", root / "scratch"), scratch=root / "scratch")
    by_name = {t.name: t for t in tools.THREED_TOOLS}
    tools.worker(ctx).call("inspect_scene", {}, save=False)  # start Blender outside the timing
    out = {}
    try:
        for label, op, make in CASES:
            times = []
            for i in range(calls):
                start = time.perf_counter()
                result = by_name[op](make(i), ctx)
                times.append(time.perf_counter() - start)
                assert not result.is_error, result.output
            out[label] = statistics.median(times) * 1000
    finally:
        tools.close_worker(ctx)
    return out


def check_suite(faces: int) -> tuple[list[tuple[str, float, str]], list[str]]:
    """Seconds of each check on a torus of about ``faces`` triangles, and the checks whose
    verdict on the torus is wrong (see the module docstring)."""
    import trimesh

    from plugins.threed import checks

    minor = max(3, int((faces / 4) ** 0.5))
    major = max(3, faces // (2 * minor))
    rows = []
    start = time.perf_counter()
    raw = trimesh.creation.torus(major_radius=0.3, minor_radius=0.05, major_sections=major, minor_sections=minor)
    mesh = trimesh.Trimesh(raw.vertices, raw.faces, process=True)
    rows.append(("build trimesh (merge vertices)", time.perf_counter() - start, f"{len(mesh.faces):,} triangles"))
    moved = mesh.copy()
    moved.apply_translation([0.001, 0, 0])
    # the polygonal torus falls short of its 0.7 x 0.7 x 0.1 m design by up to twice the sagitta
    # of its coarser sections (noticeable only under about 20,000 faces)
    sagitta = max(0.35 * (1 - math.cos(math.pi / major)), 0.05 * (1 - math.cos(math.pi / minor)))
    tolerance = 0.001 + 2 * sagitta
    wrong = []
    for label, fn, right in (
        ("closed_solid", lambda: checks.closed_solid([mesh]), None),
        ("dimensions", lambda: checks.dimensions(mesh, [0.7, 0.7, 0.1], tolerance), None),
        ("face_count", lambda: checks.face_count(mesh, 2_000_000), None),
        ("bodies", lambda: checks.bodies([mesh], 1), None),
        ("chamfer (10k samples each way)", lambda: checks.chamfer_distance(mesh, moved), lambda d: 0 < d < 0.005),
        ("filled-voxel IoU (48 per side)", lambda: checks.volumetric_iou(mesh, moved)[0], lambda iou: iou > 0.9),
    ):
        start = time.perf_counter()
        outcome = fn()
        seconds = time.perf_counter() - start
        if right is None:  # a Check
            said, ok = outcome.message, outcome.passed
        else:
            said = f"{outcome * 1000:.3f} mm" if label.startswith("chamfer") else f"IoU {outcome:.3f}"
            ok = right(outcome)
        rows.append((label, seconds, said))
        if not ok:
            wrong.append(f"{label}: {said}")
    rows.append(("total", sum(r[1] for r in rows), ""))
    return rows, wrong


def main() -> None:
    """Parse the arguments, time the tool calls and the check suite, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=None, help="calls per operation (median; default 30)")
    parser.add_argument("--faces", type=int, default=None, help="triangles of the checked mesh (default 1,000,000)")
    parser.add_argument("--quick", action="store_true", help="5 calls per operation, a 50,000-face mesh (CI)")
    parser.add_argument("--bare", metavar="SCENE", help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args()
    args.calls = args.calls or (5 if args.quick else 30)
    args.faces = args.faces or (50_000 if args.quick else 1_000_000)
    if args.bare:
        print(json.dumps(bare(args.calls, args.bare)))
        return
    console = Console(width=max(Console().width, 110))
    with tempfile.TemporaryDirectory(prefix="bench-threed-") as tmp:
        child = subprocess.run([sys.executable, __file__, "--calls", str(args.calls), "--bare", str(Path(tmp) / "bare.blend")],
                               capture_output=True, text=True, check=True, cwd=ROOT)
        bare_ms = json.loads(child.stdout.strip().splitlines()[-1])
        tool_ms = tool_calls(args.calls, Path(tmp))
    table = Table(title=f"3D tool call vs bare bpy (median of {args.calls}, ms)")
    for col in ("operation", "tool call", "bare op", "bare op + save", "tool / bare", "tool / (bare + save)"):
        table.add_column(col, justify="left" if col == "operation" else "right")
    for label, *_ in CASES:
        t, b, s = tool_ms[label], bare_ms[label]["plain"], bare_ms[label]["saved"]
        table.add_row(label, f"{t:.2f}", f"{b:.2f}", f"{s:.2f}", f"{t / b:.1f}x", f"{t / s:.1f}x")
    console.print(table)
    suite = Table(title=f"check suite on a {args.faces:,}-face mesh (s)")
    for col in ("check", "seconds", "result"):
        suite.add_column(col, justify="right" if col == "seconds" else "left")
    rows, wrong = check_suite(args.faces)
    for label, seconds, said in rows:
        suite.add_row(label, f"{seconds:.2f}", said)
    console.print(suite)
    if wrong:
        sys.exit("wrong verdicts on the torus:\n  " + "\n  ".join(wrong))


if __name__ == "__main__":
    main()
