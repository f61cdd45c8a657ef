"""Checks of the object as a whole: parts touch, it rests on the floor and stands, it holds
water, it is symmetric, the camera sees it. Each returns a ``checks.Check``; lengths in metres.

The contact distances and the camera's object-index depths are measured in the Blender worker
(``probe.relations``, Blender's BVH trees); the rest is computed here with numpy and scipy:

- ``contacts`` / ``connected``: a contact graph whose edges are pairs closer than a tolerance.
- ``on_floor``: the named parts' lowest points within the tolerance of the floor, and no part
  below it by more than the tolerance.
- ``stands``: the static tipping angle ``atan(d / h)``, where ``d`` is how far the centre of
  mass lies inside the support polygon (the convex hull of the vertices within the tolerance of
  the floor, seen from above) and ``h`` its height above the floor. It is the tilt at which the
  object would tip over; an object whose centre of mass is outside its footprint has a negative
  angle. The centre of mass assumes one uniform density (trimesh's mass properties of each
  closed part; the area centroid of an open one, weighted as a 1 mm shell).
- ``cavity``: the water a part holds when filled from above, by voxels: the part's filled voxels
  (``checks.filled_voxels``) are walls; water in an empty voxel escapes if it can flow sideways
  or down (6-connected moves, never up) to the grid's side or bottom. What cannot escape is held.
- ``symmetry``: the symmetric Chamfer distance (``checks.chamfer_distance``) between the
  assembly and its mirror image across the plane through its bounding-box centre.
- ``in_view``: from the object-index map, the fraction of the frame where an assembly part is
  the nearest surface (coverage), and the fraction of the pixels where a part is hit at all that
  it is nearest (not hidden).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import trimesh
from scipy import ndimage
from scipy.sparse.csgraph import connected_components
from scipy.spatial import ConvexHull, QhullError

from plugins.threed import checks
from plugins.threed.checks import Check


def contact_distances(contacts: list[dict[str, Any]]) -> dict[frozenset[str], float]:
    """``{frozenset({a, b}): distance_m}`` from the worker's ``contacts`` list."""
    return {frozenset((c["a"], c["b"])): float(c["distance_m"]) for c in contacts}


def touching_pairs(pairs: list[tuple[str, str]], distances: dict[frozenset[str], float], tolerance_m: float) -> Check:
    """Every listed pair of parts is within ``tolerance_m`` (value: the fraction that is).

    Args:
        pairs: part names that must touch.
        distances: ``contact_distances``; a pair not in it is farther apart than the probe measures.
        tolerance_m: the contact tolerance in metres.
    """
    apart = []
    for a, b in pairs:
        d = distances.get(frozenset((a, b)))
        if d is None or d > tolerance_m:
            apart.append(f"{a}-{b} " + ("more than 5 cm apart" if d is None else f"{d * 1000:.1f} mm apart"))
    n = len(pairs)
    ok = not apart
    message = f"all {n} pairs touch (within {tolerance_m * 1000:g} mm)" if ok else f"{len(apart)} of {n} pairs do not touch: {'; '.join(apart[:4])}"
    return Check("contacts", ok, 1.0 if ok else (n - len(apart)) / n, message, {"apart": apart, "tolerance_m": tolerance_m})


def connected(parts: list[str], distances: dict[frozenset[str], float], tolerance_m: float, present: set[str] | None = None) -> Check:
    """The parts form one piece in the contact graph (edges: pairs within ``tolerance_m``).

    Args:
        present: the parts that are in the scene (None: all); an absent part joins no group.

    Value: the share of all ``parts`` in the largest connected group of present parts (0 when
    none is present: a scene without the object is not half connected).
    """
    if present is not None and not present & set(parts):
        return Check("connected", False, 0.0, "none of the assembly's parts is in the scene", {"groups": []})
    absent = [p for p in parts if present is not None and p not in present]
    if absent:
        found = connected([p for p in parts if p not in absent], distances, tolerance_m)
        largest = len(found.detail["groups"][0])
        return Check("connected", False, largest / len(parts), f"missing part(s) {', '.join(absent[:6])}; {found.message}", found.detail)
    index = {p: i for i, p in enumerate(parts)}
    graph = np.zeros((len(parts), len(parts)), dtype=bool)
    for pair, d in distances.items():
        a, b = tuple(pair)
        if a in index and b in index and d <= tolerance_m:
            graph[index[a], index[b]] = graph[index[b], index[a]] = True
    n_groups, labels = connected_components(graph, directed=False)
    groups = [[p for p in parts if labels[index[p]] == g] for g in range(n_groups)]
    groups.sort(key=len, reverse=True)
    ok = n_groups == 1
    if ok:
        message = f"all {len(parts)} parts joined through contacts"
    else:
        loose = [p for g in groups[1:] for p in g]
        message = f"{n_groups} separate groups; not joined to {groups[0][0]}'s group: {', '.join(loose[:6])}"
    return Check("connected", ok, len(groups[0]) / len(parts), message, {"groups": groups})


def on_floor(meshes: dict[str, trimesh.Trimesh], required: list[str], floor_z_m: float, tolerance_m: float) -> Check:
    """The ``required`` parts reach the floor and no part sinks below it (both within ``tolerance_m``).

    With no part named, the assembly's lowest point must be on the floor. Value: the share of
    the required parts on the floor, 0 when a part sinks below it.
    """
    lows = {name: float(m.bounds[0][2]) for name, m in meshes.items()}
    problems = []
    targets = required or [min(lows, key=lows.get)]
    for name in targets:
        if lows[name] - floor_z_m > tolerance_m:
            problems.append(f"{name} floats {(lows[name] - floor_z_m) * 1000:.1f} mm above the floor")
    floating = len(problems)
    sunk = [f"{n} is {(floor_z_m - z) * 1000:.1f} mm below the floor" for n, z in lows.items() if floor_z_m - z > tolerance_m]
    problems += sunk
    ok = not problems
    message = f"{', '.join(targets)} on the floor at z = {floor_z_m:g} m" if ok else "; ".join(problems[:4])
    value = 0.0 if sunk else (len(targets) - floating) / len(targets)
    return Check("on_floor", ok, 1.0 if ok else value, message,
                 {"lowest_z_m": {n: round(z, 6) for n, z in lows.items()}, "floor_z_m": floor_z_m})


def centre_of_mass(meshes: list[trimesh.Trimesh]) -> np.ndarray:
    """Centre of mass (m) of the parts at one uniform density: closed parts by volume, open ones as a 1 mm shell."""
    weights, centres = [], []
    for m in meshes:
        if m.is_volume and m.volume > 0:
            weights.append(float(m.volume))
            centres.append(np.asarray(m.center_mass))
        elif len(m.faces):
            areas = m.area_faces
            weights.append(float(areas.sum()) * 1e-3)
            centres.append((m.triangles_center * areas[:, None]).sum(axis=0) / max(areas.sum(), 1e-18))
    w = np.asarray(weights)
    return (np.asarray(centres) * w[:, None]).sum(axis=0) / w.sum()


def stands(meshes: list[trimesh.Trimesh], floor_z_m: float, tolerance_m: float, min_tip_angle_deg: float) -> Check:
    """The assembly stands: its static tipping angle is at least ``min_tip_angle_deg``.

    Returns:
        A ``Check`` with ``detail``: ``centre_of_mass_m``, ``support_points``, ``inset_m`` (how far
        the centre of mass lies inside the support polygon; negative outside) and
        ``tip_angle_deg``. Value: the angle over the minimum, clipped to [0, 1].
    """
    com = centre_of_mass(meshes)
    points = np.vstack([m.vertices for m in meshes])
    support = points[points[:, 2] <= floor_z_m + tolerance_m][:, :2]
    detail: dict[str, Any] = {"centre_of_mass_m": np.round(com, 5).tolist(), "support_points": len(support)}
    if len(support) == 0:
        lowest = float(points[:, 2].min())
        return Check("stands", False, 0.0, f"nothing rests on the floor (lowest point z = {lowest:.4g} m)", detail)
    height = float(com[2] - floor_z_m)
    try:
        hull = ConvexHull(support)
        inset = float(-(hull.equations[:, :2] @ com[:2] + hull.equations[:, 2]).max())
        area = float(hull.volume)  # a 2-D hull's "volume" is its area
    except QhullError:  # fewer than three points off one line: a line or point contact
        inset, area = -float(np.linalg.norm(support - com[:2], axis=1).min()), 0.0
    angle = math.degrees(math.atan2(inset, max(height, 1e-9)))
    detail.update(inset_m=round(inset, 5), support_area_m2=round(area, 6), tip_angle_deg=round(angle, 2), min_tip_angle_deg=min_tip_angle_deg)
    ok = angle >= min_tip_angle_deg
    where = f"{inset * 1000:.0f} mm inside its footprint" if inset >= 0 else f"{-inset * 1000:.0f} mm outside its footprint"
    message = f"centre of mass {where}, {height:.3g} m up: tips at {angle:.1f}° (asked ≥ {min_tip_angle_deg:g}°)"
    return Check("stands", ok, 1.0 if ok else float(np.clip(angle / min_tip_angle_deg, 0.0, 1.0)), message, detail)


def water_volume(mesh: trimesh.Trimesh, resolution: int = 64) -> tuple[float, float]:
    """Volume (m³) of water ``mesh`` holds when filled from above, and the voxel pitch (m) used.

    The grid spans the mesh's bounding box with a margin of two voxels; ``resolution`` voxels
    along its largest extent. Walls are ``checks.filled_voxels``; a sealed void is filled
    there, so it holds nothing.
    """
    pitch = float(mesh.extents.max()) / resolution
    lo = mesh.bounds[0] - 2 * pitch
    shape = tuple(int(n) for n in np.ceil((mesh.bounds[1] + 2 * pitch - lo) / pitch).astype(np.int64))
    walls = checks.filled_voxels(mesh, lo, shape, pitch)
    empty = ~walls
    escaped = np.zeros(shape, dtype=bool)
    escaped[[0, -1], :, :] = empty[[0, -1], :, :]
    escaped[:, [0, -1], :] = empty[:, [0, -1], :]
    escaped[:, :, 0] = empty[:, :, 0]
    # water escapes from a voxel into a sideways neighbour or the one below; so escape spreads from a
    # voxel to its sideways neighbours and to the voxel above it (structure: centre, +-x, +-y, z-1)
    structure = np.zeros((3, 3, 3), dtype=bool)
    structure[1, 1, 1] = structure[0, 1, 1] = structure[2, 1, 1] = structure[1, 0, 1] = structure[1, 2, 1] = True
    structure[1, 1, 2] = True  # scipy's dilation spreads each voxel to centre + offset: this is the voxel above
    escaped = ndimage.binary_propagation(escaped, structure=structure, mask=empty)
    held = empty & ~escaped
    return float(held.sum()) * pitch**3, pitch


def cavity(name: str, mesh: trimesh.Trimesh, min_volume_m3: float) -> Check:
    """``mesh`` holds at least ``min_volume_m3`` of water poured from above (``water_volume``)."""
    volume, pitch = water_volume(mesh)
    ok = volume >= min_volume_m3
    message = f"{name} holds {volume * 1e6:.0f} cm³ of water (asked ≥ {min_volume_m3 * 1e6:.0f} cm³; voxels of {pitch * 1000:.1f} mm)"
    return Check("cavity", ok, 1.0 if ok else min(1.0, volume / min_volume_m3), message,
                 {"held_m3": volume, "min_volume_m3": min_volume_m3, "voxel_pitch_m": pitch})


def symmetry(mesh: trimesh.Trimesh, axis: str, tolerance_m: float) -> Check:
    """``mesh`` matches its mirror image across the plane through its bounding-box centre normal to ``axis``."""
    k = "xyz".index(axis)
    mirrored = mesh.copy()
    vertices = mirrored.vertices.copy()
    centre = float(mesh.bounds[:, k].mean())
    vertices[:, k] = 2 * centre - vertices[:, k]
    mirrored.vertices = vertices
    distance = checks.chamfer_distance(mesh, mirrored, samples=5000)
    ok = distance <= tolerance_m
    message = f"mirror image across {axis} = {centre:.4g} m is {distance * 1000:.2f} mm away (Chamfer; asked ≤ {tolerance_m * 1000:g} mm)"
    return Check("symmetry", ok, 1.0 if ok else min(1.0, tolerance_m / distance), message,
                 {"chamfer_m": distance, "tolerance_m": tolerance_m, "plane": [axis, centre]})


def in_view(depth: np.ndarray | None, names: list[str], parts: list[str], min_coverage: float, min_visible: float) -> Check:
    """The camera sees the assembly: ``coverage`` ≥ ``min_coverage`` and ``visible`` ≥ ``min_visible``.

    Args:
        depth: the worker's view depths (n_objects, h, w), ``inf`` where a ray misses; None: no camera.
        names: the object of each depth row.
        parts: the assembly's parts.
    """
    if depth is None:
        return Check("in_view", False, 0.0, "no camera in the scene")
    rows = [i for i, n in enumerate(names) if n in parts]
    if not rows:
        return Check("in_view", False, 0.0, "none of the parts is in the scene")
    nearest = np.argmin(depth, axis=0)
    anything = np.isfinite(depth).any(axis=0)
    is_part = np.isin(nearest, rows) & anything
    silhouette = np.isfinite(depth[rows]).any(axis=0)
    coverage = float(is_part.mean())
    visible = float(is_part.sum() / silhouette.sum()) if silhouette.any() else 0.0
    hiders = sorted({names[i] for i in np.unique(nearest[silhouette & ~is_part]) if i not in rows})
    ok = coverage >= min_coverage and visible >= min_visible
    message = f"fills {coverage:.1%} of the frame (asked ≥ {min_coverage:.0%}), {visible:.0%} of it unhidden (asked ≥ {min_visible:.0%})"
    if not silhouette.any():
        message = "out of the camera's view: no ray meets it"
    elif hiders and visible < min_visible:
        message += f"; hidden by {', '.join(hiders[:3])}"
    value = min(1.0, coverage / min_coverage) * min(1.0, visible / min_visible)
    return Check("in_view", ok, 1.0 if ok else value, message,
                 {"coverage": round(coverage, 4), "visible": round(visible, 4), "hidden_by": hiders, "rays": list(depth.shape[1:][::-1])})
