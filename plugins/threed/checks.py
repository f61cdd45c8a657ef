"""Geometry checks with trimesh: each returns a ``Check`` (verdict, value in [0, 1], details).

Units are metres throughout (Blender's default unit; STL files carry none, so a caller states
theirs). Meshes come from ``meshfile`` (``load_parts``, ``load_npz``, re-exported here), welded:
vertices closer than ``MERGE_DISTANCE_M`` (10 µm) are one vertex, whatever their UVs or normals,
so format splits never count as open edges. The checks:

- ``closed_solid``: trimesh's ``is_volume`` (watertight, consistent winding, positive finite
  volume), not merely watertight; the details count open (boundary) edges and edges shared by
  more than two faces, and ``back_to_back_pairs_dropped``: pairs of faces on the same three
  vertices wound opposite ways, which the weld makes of two slivers and drops (``meshfile.weld``).
- ``self_intersections``: faces of one part that cross each other, counted (not part of
  ``closed_solid``; a closed mesh can pass through itself).
- ``dimensions``: the axis-aligned bounding box against requested sizes, within a tolerance.
- ``face_count``: triangles within ``[min, max]``.
- ``bodies``: connected pieces (faces joined through shared edges).
- ``materials``: the required material names are assigned.
- ``reference``: symmetric Chamfer distance between surface samples and the IoU of *filled*
  voxels against a reference mesh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import trimesh
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from plugins.threed.meshfile import MERGE_DISTANCE_M, MeshFileError, load_npz, load_parts, weld  # noqa: F401 - re-exported


@dataclass
class Check:
    """One check's outcome.

    Attributes:
        name: the check's name (``closed_solid``, ``dimensions``, ...).
        passed: the verdict.
        value: the score in [0, 1] (1 when passed; some checks give partial credit).
        message: one line for people and models ("leg is 0.310 m high, asked 0.410 +- 0.005 m").
        detail: the measured numbers.
    """

    name: str
    passed: bool
    value: float
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


def combine(parts: list[trimesh.Trimesh]) -> trimesh.Trimesh:
    """One mesh holding every part (vertices not merged across parts)."""
    return parts[0] if len(parts) == 1 else trimesh.util.concatenate(parts)


# -- single-mesh checks ----------------------------------------------------------------------


def _edge_ids(mesh: trimesh.Trimesh) -> np.ndarray:
    """One integer per undirected edge of each face corner: (3m,) in ``mesh.edges_sorted`` order."""
    edges = mesh.edges_sorted.astype(np.int64)
    return edges[:, 0] * (int(edges.max()) + 1) + edges[:, 1]  # a 1-D unique is ~50x faster than rows


def edge_counts(mesh: trimesh.Trimesh) -> tuple[int, int]:
    """(boundary edges used by one face, non-manifold edges used by more than two faces)."""
    if len(mesh.faces) == 0:
        return 0, 0
    _, counts = np.unique(_edge_ids(mesh), return_counts=True)
    return int((counts == 1).sum()), int((counts > 2).sum())


def _solid_defects(d: dict[str, Any]) -> list[str]:
    """The reasons one part's details (``closed_solid``'s) say it is not a volume, worst first."""
    why = []
    if d["boundary_edges"]:
        why.append(f"{d['boundary_edges']} open edges (holes)")
    if d["non_manifold_edges"]:
        why.append(f"{d['non_manifold_edges']} edges shared by more than two faces")
    if not d["winding_consistent"]:
        why.append("faces wound inconsistently (some normals flipped)")
    if not why and d["signed_volume_m3"] is not None and d["signed_volume_m3"] < 0:
        why.append(f"inside out (volume {d['signed_volume_m3']:.6g} m³: every face points inwards)")
    elif not why:
        why.append("no positive volume (flat)")
    return why


def closed_solid(parts: list[trimesh.Trimesh]) -> Check:
    """Every part is a volume in trimesh's sense (``is_volume``): watertight, consistently wound,
    with a positive finite volume. Being watertight alone is not enough.

    Args:
        parts: welded meshes in metres (``load_parts``, ``load_npz``).

    Returns:
        A ``Check`` whose message names every defect of the first failing part (open edges,
        edges of more than two faces, inconsistent winding, inside out); ``detail["parts"]`` holds
        each part's counts and volume (m³; the signed volume only where the part is watertight).
    """
    details = []
    for part in parts:
        boundary, nonmanifold = edge_counts(part)
        watertight = bool(part.is_watertight)
        details.append({
            "watertight": watertight, "winding_consistent": bool(part.is_winding_consistent),
            "is_volume": bool(part.is_volume), "boundary_edges": boundary, "non_manifold_edges": nonmanifold,
            "volume_m3": float(part.volume) if part.is_volume else None,
            "signed_volume_m3": float(part.volume) if watertight else None,
            "merged_vertices": part.metadata.get("merged_vertices", 0),
            "back_to_back_pairs_dropped": part.metadata.get("back_to_back_pairs", 0),
        })
    ok = all(d["is_volume"] for d in details)
    if ok:
        message = f"closed solid ({sum(d['volume_m3'] for d in details):.6g} m³)"
    else:
        bad = [i for i, d in enumerate(details) if not d["is_volume"]]
        where = f" (part {bad[0] + 1} of {len(parts)}; {len(bad)} failing)" if len(parts) > 1 else ""
        message = f"not a closed solid: {'; '.join(_solid_defects(details[bad[0]]))}{where}"
    dropped = sum(d["back_to_back_pairs_dropped"] for d in details)
    if dropped:
        message += f"; {dropped} back-to-back face pair{'s' if dropped > 1 else ''} made by the weld dropped"
    return Check("closed_solid", ok, 1.0 if ok else 0.0, message, {"parts": details})


def self_intersections(parts: list[trimesh.Trimesh]) -> Check:
    """No part's faces cross each other (``intersect.crossing_pairs``: an edge of one triangle
    through the interior of another that shares no vertex with it; coplanar overlaps and touching
    are not counted). Blender's 3D-Print Toolbox counts the same thing as "Intersect Face".

    Not part of ``closed_solid``: a closed, consistently wound mesh can still pass through itself
    (a print of it is ambiguous). Faces of different parts are not compared.

    Returns:
        A ``Check`` whose ``detail["parts"]`` holds each part's ``faces`` (faces that cross another)
        and ``pairs`` (crossing pairs); ``detail["checked"]`` is False (and the check passes, saying
        so) where a part's broad phase would exceed ``intersect.MAX_CELL_PAIRS`` (dense fans).
    """
    from plugins.threed.intersect import TooManyPairs, crossing_pairs

    details = []
    for i, part in enumerate(parts):
        try:
            pairs = crossing_pairs(part.vertices, part.faces)
        except TooManyPairs as exc:  # a dense fan: not judged rather than judged wrong
            where = f"part {i + 1} of {len(parts)}" if len(parts) > 1 else "the mesh"
            return Check("self_intersections", True, 1.0, f"self-intersections not checked: {where} has {exc}",
                         {"parts": details, "checked": False})
        details.append({"faces": len(np.unique(pairs)), "pairs": len(pairs)})
    faces = sum(d["faces"] for d in details)
    ok = faces == 0
    message = ("no self-intersections" if ok else
               f"{faces} face{'s' if faces > 1 else ''} cross{'' if faces > 1 else 'es'} another face of the same part "
               f"({sum(d['pairs'] for d in details)} crossing pairs)")
    return Check("self_intersections", ok, 1.0 if ok else 0.0, message, {"parts": details, "checked": True})


UNIT_TO_M = {"m": 1.0, "cm": 0.01, "mm": 0.001}


def dimensions(mesh: trimesh.Trimesh, expected: list[float], tolerance: float, unit: str = "m") -> Check:
    """Axis-aligned bounding box sizes (x, y, z) against ``expected`` within ``tolerance``.

    Args:
        expected: requested sizes along x, y, z in ``unit``; ``None`` entries are not checked.
        tolerance: allowed absolute difference per axis, in ``unit``.
        unit: ``m``, ``cm`` or ``mm``.
    """
    scale = UNIT_TO_M[unit]
    measured = (mesh.extents / scale).tolist() if len(mesh.faces) else [0.0, 0.0, 0.0]
    misses = []
    for axis, got, want in zip("xyz", measured, expected):
        if want is not None and abs(got - want) > tolerance:
            misses.append(f"{axis} is {got:.4g} {unit}, asked {want:.4g} ± {tolerance:.3g} {unit}")
    ok = not misses
    message = "dimensions " + ("within tolerance" if ok else "off: " + "; ".join(misses))
    return Check("dimensions", ok, 1.0 if ok else 0.0, message,
                 {"measured": [round(v, 6) for v in measured], "expected": expected, "tolerance": tolerance, "unit": unit})


def face_count(mesh: trimesh.Trimesh, max_faces: int | None = None, min_faces: int = 1) -> Check:
    """Triangle count in ``[min_faces, max_faces]`` (a budget for real-time use)."""
    n = len(mesh.faces)
    ok = n >= min_faces and (max_faces is None or n <= max_faces)
    bounds = f"[{min_faces}, {max_faces if max_faces is not None else '∞'}]"
    return Check("face_count", ok, 1.0 if ok else 0.0, f"{n} triangles, allowed {bounds}", {"faces": n, "min": min_faces, "max": max_faces})


def body_count(mesh: trimesh.Trimesh) -> int:
    """Connected components of faces joined through shared edges, an edge shared by three or more
    faces included (trimesh's ``face_adjacency`` pairs only edges of exactly two faces, which
    split a mesh at every non-manifold edge); two solids touching only at a corner are two bodies."""
    m = len(mesh.faces)
    if m == 0:
        return 0
    _, edge = np.unique(_edge_ids(mesh), return_inverse=True)
    face = np.repeat(np.arange(m), 3)  # edges_sorted lists each face's three edges in turn
    # a graph of faces (nodes 0..m-1) and edges (nodes m..): a face is linked to its three edges
    graph = coo_matrix((np.ones(len(face), dtype=np.int8), (face, m + edge.ravel())), shape=(m + edge.max() + 1,) * 2)
    _, labels = connected_components(graph, directed=False)
    return len(np.unique(labels[:m]))


def bodies(parts: list[trimesh.Trimesh], expected: int = 1) -> Check:
    """Connected pieces (faces joined through shared edges, per part) equal ``expected``."""
    n = sum(body_count(p) for p in parts)
    ok = n == expected
    return Check("bodies", ok, 1.0 if ok else 0.0, f"{n} bod{'y' if n == 1 else 'ies'}, asked {expected}", {"bodies": n, "expected": expected})


def materials(assigned: list[str | None], required: list[str], faces_per_slot: list[int] | None = None) -> Check:
    """Every required material name is assigned (case-insensitive) and, when face counts per slot
    are given, used by at least one face; an object without any material fails."""
    names = [a for a in assigned if a]
    used = names if faces_per_slot is None else [a for a, n in zip(assigned, faces_per_slot) if a and n > 0]
    lower = {u.lower() for u in used}
    missing = [r for r in required if r.lower() not in lower]
    ok = bool(used) and not missing
    if not used:
        message = "no material assigned"
    elif missing:
        message = f"missing material(s) {', '.join(missing)}; assigned: {', '.join(used)}"
    else:
        message = f"materials {', '.join(used)}"
    return Check("materials", ok, 1.0 if ok else 0.0, message, {"assigned": names, "used": used, "required": required})


# -- against a reference ---------------------------------------------------------------------


def chamfer_distance(a: trimesh.Trimesh, b: trimesh.Trimesh, samples: int = 10000, seed: int = 0) -> float:
    """Symmetric Chamfer distance in metres: points sampled uniformly by area on each surface, the
    mean distance from ``a``'s points to ``b``'s surface and from ``b``'s points to ``a``'s,
    averaged (the point-to-surface form of the Chamfer distance of Fan et al., 2017, "A Point Set
    Generation Network for 3D Object Reconstruction", unsquared). Measuring to the surface, not
    to the other sample set, leaves no sampling floor: identical meshes score 0.

    Args:
        samples: points sampled on each surface.
        seed: sampling seed, so a score is reproducible.
    """
    pa = trimesh.sample.sample_surface(a, samples, seed=seed)[0]
    pb = trimesh.sample.sample_surface(b, samples, seed=seed + 1)[0]
    return float((_to_surface(pa, b).mean() + _to_surface(pb, a).mean()) / 2)


def _to_surface(points: np.ndarray, mesh: trimesh.Trimesh, k: int = 4, seed: int = 0) -> np.ndarray:
    """Distance (m) from each point to the nearest point of ``mesh``'s surface.

    Candidate triangles come from a scipy cKDTree over seeds on the surface (every triangle's
    centroid plus as many area-uniform samples as there are points), the ``k`` nearest seeds'
    triangles per point; the exact point-triangle distance (trimesh) is taken over those. It
    avoids trimesh's rtree-based ``closest_point`` (rtree is not a dependency here).
    """
    samples, sample_faces = trimesh.sample.sample_surface(mesh, len(points), seed=seed)
    seeds = np.vstack([mesh.triangles_center, samples])
    seed_faces = np.concatenate([np.arange(len(mesh.faces)), sample_faces])
    k = min(k, len(seeds))
    _, nearest = cKDTree(seeds).query(points, k=k, workers=-1)
    candidates = seed_faces[nearest.reshape(len(points), k)]
    closest = trimesh.triangles.closest_point(mesh.triangles[candidates.ravel()], np.repeat(points, k, axis=0))
    return np.linalg.norm(closest - np.repeat(points, k, axis=0), axis=1).reshape(-1, k).min(axis=1)


def filled_voxels(mesh: trimesh.Trimesh, lo: np.ndarray, shape: tuple[int, int, int], pitch: float,
                  per_voxel: int = 16, seed: int = 0) -> np.ndarray:
    """Boolean grid (``shape``, cubes of side ``pitch`` metres from corner ``lo``) of the voxels
    the solid fills: voxels its surface passes through, found from area-uniform surface samples
    (``per_voxel`` per ``pitch``² of area, plus every vertex), then the enclosed interior filled by
    scipy's ``ndimage.binary_fill_holes``. A void sealed inside a solid counts as filled; an open
    cavity (a cup's) does not. Sampling replaces trimesh's ``voxelize``, which subdivides long
    thin triangles for seconds."""
    count = int(np.clip(mesh.area / pitch**2 * per_voxel, 10_000, 5_000_000))
    points = np.vstack([trimesh.sample.sample_surface(mesh, count, seed=seed)[0], mesh.vertices])
    index = np.clip(np.floor((points - lo) / pitch).astype(np.int64), 0, np.array(shape) - 1)
    grid = np.zeros(shape, dtype=bool)
    grid[index[:, 0], index[:, 1], index[:, 2]] = True
    return ndimage.binary_fill_holes(grid)


def volumetric_iou(a: trimesh.Trimesh, b: trimesh.Trimesh, resolution: int = 48) -> tuple[float, float]:
    """IoU of the filled voxels of two solids on one grid; returns ``(iou, pitch_m)``.

    The pitch is the largest extent of both meshes' joint bounding box divided by ``resolution``;
    the grid has one voxel of margin on every side, so the outside stays connected for filling.
    """
    lo = np.minimum(a.bounds[0], b.bounds[0])
    hi = np.maximum(a.bounds[1], b.bounds[1])
    pitch = float((hi - lo).max()) / resolution
    lo = lo - pitch
    shape = tuple(int(n) for n in np.ceil((hi - lo) / pitch).astype(np.int64) + 2)
    va, vb = filled_voxels(a, lo, shape, pitch), filled_voxels(b, lo, shape, pitch)
    union = int((va | vb).sum())
    return (int((va & vb).sum()) / union if union else 0.0), pitch


def reference(mesh: trimesh.Trimesh, ref: trimesh.Trimesh, max_chamfer_m: float, min_iou: float) -> Check:
    """Chamfer distance at most ``max_chamfer_m`` and filled-voxel IoU at least ``min_iou``."""
    chamfer = chamfer_distance(mesh, ref)
    iou, pitch = volumetric_iou(mesh, ref)
    ok = chamfer <= max_chamfer_m and iou >= min_iou
    value = 0.5 * min(1.0, max_chamfer_m / chamfer if chamfer > 0 else 1.0) + 0.5 * min(1.0, iou / min_iou if min_iou > 0 else 1.0)
    message = (f"against the reference: Chamfer {chamfer * 1000:.2f} mm (≤ {max_chamfer_m * 1000:.2f}), "
               f"filled-voxel IoU {iou:.3f} (≥ {min_iou:.2f})")
    return Check("reference", ok, 1.0 if ok else round(value, 4), message,
                 {"chamfer_m": chamfer, "iou": iou, "voxel_pitch_m": pitch, "max_chamfer_m": max_chamfer_m, "min_iou": min_iou})
