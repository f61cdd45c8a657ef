"""Horizon's mesh checks beside Blender's 3D-print checks, on every mesh of a folder.

    .venv/bin/python bench/mesh_checks.py [MESHES] [--markdown]
    .venv/bin/python bench/mesh_checks.py --quick      # CI: the same run (the shared set takes seconds)

MESHES is the argument, else ``$HORIZON_MESHES``, else ``../shared/data/meshes`` next to the
repository; when it is missing the script says so and exits 0. Every ``.stl``, ``.obj`` and
``.ply`` under it, and meshes of the repository's own written by code into a temporary folder
(``made/``: n-gons that trimesh's fan gets wrong, a back-to-back pair the weld makes), is loaded by Horizon (``checks.load_parts``: welded at ``MERGE_DISTANCE_M``)
and by Blender (``plugins/threed/print3d.py`` in a child process: Blender's importer, merge by
distance at the same distance, the 3D-Print Toolbox's Solid, Intersections, Degenerate and Shells
checks computed with bmesh and Geometry Nodes), and three verdicts are compared
(``plugins/threed/compare.py``): the file is readable, the mesh is a closed solid (Blender: the
toolbox's Solid), the number of bodies (Blender: the toolbox's Shells), the faces that cross another (Blender: the toolbox's Intersect Face).
``--markdown`` prints the
table as Markdown (for docs/mesh-checks.md).

The exit status is non-zero when the comparison breaks: Blender's child fails, or Horizon and
Blender disagree where no known difference of definition explains it (``compare._explain``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Horizon's tests/ is a namespace package; verl's wheel installs a regular top-level ``tests``
# package that would win the import, so the name is bound to Horizon's folder first (as pytest's
# importlib mode binds it).
_tests = types.ModuleType("tests")
_tests.__path__ = [str(Path(__file__).resolve().parents[1] / "tests")]
sys.modules.setdefault("tests", _tests)

from rich.console import Console
from rich.table import Table

from plugins.threed import checks, compare, meshfile

DEFAULT = ROOT / ".." / "shared" / "data" / "meshes"
#: The advice every refusal ends with (left out of the Markdown table).
FIX = meshfile.ADVICE


def mark(agree: bool | None, explained: str | None) -> str:
    """The agreement cell: yes, no (explained), NO (a finding), or n/a."""
    return {True: "yes", None: "n/a"}.get(agree, "no (explained)" if explained else "NO")


def verdict(v: compare.Verdict, check: str) -> str:
    """A verdict cell: pass/fail (or a count) and the reason."""
    if check in ("bodies", "self_intersections") and v.count is not None:
        return v.reason
    return f"{'pass' if v.ok else 'fail' if v.ok is False else '-'}: {v.reason}"


def main() -> None:
    """Run both sides on every mesh, print the table and the disagreements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("meshes", nargs="?", type=Path, help="folder of meshes (default $HORIZON_MESHES or ../shared/data/meshes)")
    parser.add_argument("--quick", action="store_true", help="CI mode: the same run")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    folder = (args.meshes or Path(os.environ.get("HORIZON_MESHES") or DEFAULT)).resolve()
    if not folder.is_dir():
        print(f"skipped: no meshes at {folder} (give a folder, set HORIZON_MESHES, or put ../shared/data/meshes next to "
              "the repository)")
        return
    with tempfile.TemporaryDirectory(prefix="horizon-made-meshes-") as made:
        run(folder, Path(made), args.markdown)


def write_made(folder: Path) -> None:
    """Meshes of this repository's own, written by code (``tests/plugins/threed/mesh_files.py``)
    into ``folder``: closed n-gon OBJs that trimesh's fan gets wrong (an L-shaped prism; a block
    whose L-shaped top and notch square share the fan's diagonal) and a closed box with a
    back-to-back sliver pair that the 10 µm weld makes; two closed boxes that pass through each
    other in one solid (self-intersections)."""
    from tests.plugins.threed.mesh_files import (
        back_to_back_triangles,
        crossing_boxes_triangles,
        l_prism_obj,
        notched_block_obj,
        write_stl,
    )

    l_prism_obj(folder / "l_prism.obj")
    notched_block_obj(folder / "notched_block.obj")
    write_stl(folder / "slivers_back_to_back.stl", back_to_back_triangles())
    write_stl(folder / "crossing_boxes.stl", crossing_boxes_triangles())


def run(folder: Path, made: Path, markdown: bool) -> None:
    """Compare both sides on the meshes under ``folder`` and the made ones (written to ``made``,
    listed as ``made/NAME``); exit non-zero on an unexplained disagreement."""
    write_made(made)
    names = {f: f.relative_to(folder).as_posix() for f in compare.mesh_files(folder)}
    names |= {f: "made/" + f.name for f in compare.mesh_files(made)}
    files = list(names)
    start = time.perf_counter()
    horizon = {f: compare.horizon_verdicts(f) for f in files}
    horizon_s = time.perf_counter() - start
    start = time.perf_counter()
    blender = compare.run_blender(files)
    blender_s = time.perf_counter() - start
    rows = []
    for f in files:
        b, numbers = compare.blender_verdicts(blender[str(f)])
        rows.append((names[f], compare.compare(horizon[f], b, numbers)))
    emit_markdown(rows, folder) if markdown else emit_rich(rows, folder)
    flat = [c for _, cs in rows for c in cs]
    counts = {k: sum(mark(c.agree, c.explained) == k for c in flat) for k in ("yes", "no (explained)", "NO", "n/a")}
    print(f"\n{len(files)} meshes, {len(flat)} comparisons: {counts['yes']} agree, {counts['no (explained)']} differ by a "
          f"known difference of definition, {counts['NO']} unexplained, {counts['n/a']} not comparable (a side refused the "
          f"file). Merge distance {checks.MERGE_DISTANCE_M} m. Horizon {horizon_s:.1f} s, Blender {blender_s:.1f} s "
          "(its start included).")
    unexplained = [f"{name} {c.check}: Horizon {c.horizon.reason} / Blender {c.blender.reason}"
                   for name, cs in rows for c in cs if c.agree is False and not c.explained]
    if unexplained:
        sys.exit("Horizon and Blender disagree without an explanation:\n  " + "\n  ".join(unexplained))


def emit_rich(rows, folder: Path) -> None:
    """The table through rich, then each explained disagreement."""
    console = Console(width=max(Console().width, 160))
    table = Table(title=f"Horizon's checks and Blender's 3D-print checks on {folder}", show_lines=True)
    for col in ("mesh", "check", "Horizon", "Blender", "agree"):
        table.add_column(col, overflow="fold")
    for name, comparisons in rows:
        for c in comparisons:
            table.add_row(name, c.check, verdict(c.horizon, c.check), verdict(c.blender, c.check), mark(c.agree, c.explained))
    console.print(table)
    for name, comparisons in rows:
        for c in comparisons:
            if c.explained:
                console.print(f"{name} {c.check}: {c.explained}")


def emit_markdown(rows, folder: Path) -> None:
    """One Markdown row per mesh: readable and closed solid, then bodies, on both sides."""
    print("| mesh | Horizon `closed_solid` | Blender Solid (non-manifold, bad contiguous; signed volume) | agree "
          "| Horizon `bodies` | Blender Shells (edge-linked) | agree | Horizon `self_intersections` | Blender Intersect Face | agree |")
    print("|---|---|---|---|---:|---:|---|---:|---:|---|")
    for name, (file_, solid, bodies, crossing) in rows:
        both_read = file_.horizon.ok and file_.blender.ok
        h_solid = verdict(solid.horizon, "closed_solid") if file_.horizon.ok else f"refused: {file_.horizon.reason}"
        b_solid = verdict(solid.blender, "closed_solid") if file_.blender.ok else f"refused: {file_.blender.reason}"
        agree_solid = mark(solid.agree, solid.explained) if both_read else mark(file_.agree, file_.explained)
        h_bodies = "-" if bodies.horizon.count is None else str(bodies.horizon.count)
        b_bodies = "-" if bodies.blender.count is None else bodies.blender.reason.split(" joined")[0].replace(" shells", "").replace(" shell", "") + ")"
        print(f"| `{name}` | {_md(h_solid, folder)} | {_md(b_solid, folder)} | {agree_solid} | {h_bodies} | {b_bodies} "
              f"| {mark(bodies.agree, bodies.explained)} | {_n(crossing.horizon)} | {_n(crossing.blender)} "
              f"| {mark(crossing.agree, crossing.explained)} |")


def _n(v: compare.Verdict) -> str:
    """A count cell: the count, or - where the check did not run."""
    return "-" if v.count is None else str(v.count)


def _md(text: str, folder: Path) -> str:
    """``text`` short and safe in a Markdown table cell (no folder, no repeated advice)."""
    for cut, put in ((f"; {FIX}", ""), ("not a closed solid: ", ""), ("pass: closed solid (", "pass ("), ("not solid: ", ""),
                     ("solid: ", ""), (f"{folder}/", ""), ("non-manifold edges", "non-manifold"), ("volume ", "")):
        text = text.replace(cut, put)
    return text.replace("|", "\\|").replace("\n", " ")


if __name__ == "__main__":
    main()
