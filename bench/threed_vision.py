"""What showing a render to the model costs: the render, its text description, and the request.

    .venv/bin/python bench/threed_vision.py            # the three example scenes at 320x240, 16 samples
    .venv/bin/python bench/threed_vision.py --quick    # the low table only, 96x72, 1 sample (CI)

For each example scene (``examples/threed/*.jsonl``, their tool calls up to the first render),
one ``render_preview`` through the real tool and Blender worker, then:

- render s: Blender's render (Cycles, CPU), as the tool reports it;
- describe s: the object-index map and its summary after the render (``probe.render_view``);
- description chars / tokens: the text a text-only model reads (tokens estimated as chars / 4,
  ``core.compaction.CHARS_PER_TOKEN``);
- PNG bytes / data URL chars: what a vision server is sent for the picture (base64: 4/3 of the bytes);
- objects named: every renderable mesh of the scene is named in the description (the check).

Exit status non-zero only when a tool call fails or the description leaves out an object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console
from rich.table import Table

from core.compaction import CHARS_PER_TOKEN
from core.policy.images import data_url
from core.sandbox import open_sandbox
from core.tools import ToolContext
from plugins.threed import tools

SCENES = ["low-table", "pen-holder", "bookshelf"]


def measure(scene: str, width: int, height: int, samples: int) -> dict:
    """Build ``scene`` from its script (up to its first render) and render it once."""
    turns = [json.loads(line) for line in (ROOT / "examples" / "threed" / f"{scene}.jsonl").read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "scratch").mkdir()
        ctx = ToolContext(workspace=root / "ws", sandbox=open_sandbox(root / "ws", root / "scratch"), scratch=root / "scratch")
        try:
            for turn in turns:
                if turn["tool"] in ("render_preview", "finish"):
                    break
                t = next(t for t in tools.threed_tools() if t.name == turn["tool"])  # the artist's toolset too (set_surface)
                result = t(turn["arguments"], ctx)
                if result.is_error:
                    raise SystemExit(f"{scene}: {turn['tool']} failed: {result.output}")
            result = tools.render_preview({"width": width, "height": height, "samples": samples, "time_limit_s": 300}, ctx)
            if result.is_error:
                raise SystemExit(f"{scene}: render_preview failed: {result.output}")
            found = tools.worker(ctx).call("mesh_data", {"folder": str(root / "scratch" / "meshes"), "relations": False}, save=False)
            meshes = [m["name"] for m in found["meshes"]]  # the renderable meshes (a hidden boolean operand is not one)
            description = result.output[result.output.index("What the render shows"):]
            png = result.images[0].read_bytes()
            return {"scene": scene, "render_s": result.data["seconds"], "describe_s": result.data["view_seconds"],
                    "chars": len(description), "png": len(png), "url": len(data_url(result.images[0])),
                    "named": all(f"- {m}:" in description for m in meshes), "meshes": len(meshes), "text": description}
        finally:
            tools.close_worker(ctx)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the low table only, 96x72, 1 sample")
    args = parser.parse_args()
    scenes, (w, h, samples) = (SCENES[:1], (96, 72, 1)) if args.quick else (SCENES, (320, 240, 16))
    rows = [measure(s, w, h, samples) for s in scenes]
    table = Table(title=f"render_preview at {w}x{h}, {samples} samples: the picture vs its description")
    for col in ("scene", "meshes", "render s", "describe s", "description chars", "~tokens", "PNG bytes", "data URL chars", "objects named"):
        table.add_column(col, justify="left" if col == "scene" else "right")
    for r in rows:
        table.add_row(r["scene"], str(r["meshes"]), f"{r['render_s']:.2f}", f"{r['describe_s']:.2f}", str(r["chars"]),
                      str(r["chars"] // CHARS_PER_TOKEN), f"{r['png']:,}", f"{r['url']:,}", "yes" if r["named"] else "NO")
    console = Console(width=200)
    console.print(table)
    console.print(f"\nThe description of {rows[0]['scene']}:\n{rows[0]['text']}", highlight=False, markup=False)
    return 0 if all(r["named"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
