"""Horizon's mesh checks beside Blender's 3D-print checks (``print3d``), file by file.

Four verdicts are compared on each file, both sides welding at ``MERGE_DISTANCE_M``:

- ``file``: Horizon reads it (``load_parts``) / Blender's importer makes a mesh of it;
- ``closed_solid``: Horizon's ``closed_solid`` / the toolbox's Solid check (no non-manifold edge,
  no bad contiguous edge, on every object);
- ``bodies``: Horizon's ``bodies`` count / the toolbox's Shells (Mesh Island count, summed over
  objects);
- ``self_intersections``: faces that cross another face of their object, Horizon's
  ``self_intersections`` / the toolbox's Intersect Face count (a BVH overlap).

Where they differ, a rule below may explain it from Blender's own numbers (a definition that
differs on purpose, not a wrong answer); a difference no rule explains is a finding to fix.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugins.threed import checks

ROOT = Path(__file__).resolve().parents[2]

#: Files the comparison reads (Blender imports these three; Horizon reads more).
SUFFIXES = {".stl", ".obj", ".ply"}


@dataclass
class Verdict:
    """One side's verdict on one check: ``ok`` (None where the check did not run), a reason."""

    ok: bool | None
    reason: str
    count: int | None = None  # bodies / shells


@dataclass
class Comparison:
    """Both sides on one check of one file; ``explained`` says why a disagreement is expected."""

    check: str
    horizon: Verdict
    blender: Verdict
    agree: bool | None  # None: not comparable (a side refused the file)
    explained: str | None = None


def horizon_verdicts(path: Path, merge_distance_m: float = checks.MERGE_DISTANCE_M) -> dict[str, Verdict]:
    """Horizon's ``file``, ``closed_solid`` and ``bodies`` verdicts on a file (coordinates taken as metres)."""
    try:
        parts = checks.load_parts(path, merge_distance_m=merge_distance_m)
    except checks.MeshFileError as exc:
        return {"file": Verdict(False, str(exc))}
    solid = checks.closed_solid(parts)
    n = sum(checks.body_count(p) for p in parts)
    merged = sum(p.metadata.get("merged_vertices", 0) for p in parts)
    nearby = sum(p.metadata.get("merged_nearby", 0) for p in parts)
    return {
        "file": Verdict(True, f"{len(parts)} object(s), {sum(len(p.faces) for p in parts)} triangles; "
                              f"{merged} vertices merged, {nearby} of them only nearby"),
        "closed_solid": Verdict(solid.passed, solid.message),
        "bodies": Verdict(None, f"{n} bod{'y' if n == 1 else 'ies'} (faces joined through edges)", n),
        "self_intersections": _count_verdict(checks.self_intersections(parts).detail),
    }


def _count_verdict(detail: dict[str, Any]) -> Verdict:
    """Horizon's self-intersection count as a ``Verdict`` (not compared where it was not checked)."""
    if not detail["checked"]:
        return Verdict(None, "not checked (too many overlapping triangle boxes)")
    faces = sum(d["faces"] for d in detail["parts"])
    return Verdict(faces == 0, f"{faces} intersecting faces", faces)


def run_blender(paths: list[Path], merge_distance_m: float = checks.MERGE_DISTANCE_M, python: str = sys.executable,
                timeout_s: float = 600) -> dict[str, dict[str, Any]]:
    """``print3d.check_file`` on each path in one child process of ``python`` (which must import bpy).

    Returns:
        ``{str(path): result}``.

    Raises:
        RuntimeError: the child failed (its stderr's tail in the message).
    """
    with tempfile.TemporaryDirectory(prefix="horizon-print3d-") as tmp:
        out = Path(tmp) / "out.jsonl"
        proc = subprocess.run([python, "-m", "plugins.threed.print3d", "--merge-distance", repr(merge_distance_m), "--out", str(out),
                               *map(str, paths)], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False)
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"Blender's checks failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
        results = [json.loads(line) for line in out.read_text().splitlines()]
    return {r["file"]: r for r in results}


def blender_verdicts(result: dict[str, Any]) -> tuple[dict[str, Verdict], dict[str, Any]]:
    """Blender's ``file``, ``closed_solid`` (the toolbox's Solid) and ``bodies`` (Shells) verdicts
    from one ``print3d.check_file`` result, and its counts summed over the objects (with the
    signed ``volume_m3``; empty when Blender refused the file)."""
    if "error" in result:
        return {"file": Verdict(False, result["error"])}, {}
    objs = result["objects"]
    total = {k: sum(o[k] for o in objs) for k in ("faces", "non_manifold_edges", "boundary_edges", "bad_contiguous_edges",
                                                  "intersect_faces", "zero_faces", "shells", "edge_islands", "merged_vertices")}
    volume = sum(o["volume_m3"] for o in objs)
    solid = total["non_manifold_edges"] == 0 and total["bad_contiguous_edges"] == 0
    reason = (f"{total['non_manifold_edges']} non-manifold edges ({total['boundary_edges']} open), "
              f"{total['bad_contiguous_edges']} bad contiguous; volume {volume:.6g} m³")
    extras = [f"{total[k]} {label}" for k, label in (("intersect_faces", "intersecting faces"), ("zero_faces", "zero-area faces"))
              if total[k]]
    return {
        "file": Verdict(True, f"{len(objs)} object(s), {total['faces']} faces; {total['merged_vertices']} vertices merged by distance"),
        "closed_solid": Verdict(solid, ("solid: " if solid else "not solid: ") + reason + "".join(f"; {e}" for e in extras)),
        "bodies": Verdict(None, f"{total['shells']} shell{'' if total['shells'] == 1 else 's'} ({total['edge_islands']} joined through edges)", total["shells"]),
        "self_intersections": Verdict(total["intersect_faces"] == 0, f"{total['intersect_faces']} intersecting faces",
                                      total["intersect_faces"]),
    }, {**total, "volume_m3": volume}


def _explain(check: str, horizon: Verdict, blender: Verdict, numbers: dict[str, Any]) -> str | None:
    """Why Horizon and Blender differ on ``check``, when one of the known definitional
    differences accounts for it (judged from Blender's own numbers); else None."""
    if check == "file" and horizon.ok is False and blender.ok:
        return "Horizon refuses a malformed file that Blender's importer reads in part, skipping what it cannot read"
    if check == "closed_solid" and not horizon.ok and blender.ok and numbers["volume_m3"] <= 0:
        return ("inside out: the toolbox's Solid check ignores orientation, Horizon asks for a positive volume "
                f"(Blender's signed volume is {numbers['volume_m3']:.6g} m³)")
    if check == "bodies" and horizon.count == numbers["edge_islands"]:
        return ("pieces that touch only at a vertex: the toolbox's Shells (Mesh Island) joins them, Horizon counts "
                "faces joined through edges, as Blender's edge-linked count does")
    return None


def compare(horizon: dict[str, Verdict], blender: dict[str, Verdict], numbers: dict[str, Any]) -> list[Comparison]:
    """The four comparisons of one file (``horizon_verdicts``; ``blender_verdicts``' two
    values), each with ``agree`` and, where they differ, the rule's explanation (``None``:
    unexplained, a finding)."""
    rows = []
    for check in ("file", "closed_solid", "bodies", "self_intersections"):
        h = horizon.get(check, Verdict(None, "not checked: the file was refused"))
        b = blender.get(check, Verdict(None, "not checked: the file was refused"))
        if check == "file":
            agree = h.ok == b.ok
        elif h.ok is None and h.count is None or b.ok is None and b.count is None:
            agree = None
        else:
            agree = h.count == b.count if check in ("bodies", "self_intersections") else h.ok == b.ok
        explained = _explain(check, h, b, numbers) if agree is False else None
        rows.append(Comparison(check, h, b, agree, explained))
    return rows


def mesh_files(folder: Path) -> list[Path]:
    """Every file under ``folder`` (recursively) whose suffix is in ``SUFFIXES``, sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
