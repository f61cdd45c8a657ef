"""The drop test, run INSIDE the Blender worker: Blender's own rigid body world drops the object
on a floor and records how each body moves; ``plugins.threed.physics`` judges the record.

How the scene becomes rigid bodies (``drop_test``):

- **parts**: the named mesh objects (default: every visible mesh a lighting preset did not make),
  as they render (modifiers applied, world space: ``probe.evaluated_triangles``).
- **bodies**: parts that touch (Blender BVH distance within ``contact_tolerance_m``,
  ``probe.contacts``, the same measure as ``assembly/contacts``) are glued into one rigid
  compound, as a built object's glued or screwed parts are; a part or group of parts touching
  nothing else is a body of its own, free to fall off or apart.
- **mass**: one uniform density (``DENSITY_KG_M3``) as ``assembly.centre_of_mass`` assumes: a
  closed part by its volume (signed tetrahedra), an open one as a 1 mm shell of its area. Each
  body's origin is put at its centre of mass (Bullet turns a body about its origin).
- **collision shape**: the convex hull of the body's vertices (scipy), with a 1 mm margin. On a
  flat floor this is exact: a rigid body resting on a plane touches it only where its convex hull
  does. Between two bodies it is not (a loose part falls onto the other's hull, not into a hollow).
- **the floor**: a passive box whose top is at ``floor_z``, large enough for every copy.
- **drops**: the whole object, its lowest point ``drop_height_m`` above the floor, released
  level; and further copies in the same world, far enough apart not to meet, released tilted by
  ``nudge_deg`` about its centre of mass toward each of ``directions`` azimuths (the hand of a
  reviewer giving it a small push).
- **stepping**: ``seconds`` (3 s, longer for an object over 1 m: its motions are slower by the
  square root of its size) at ``fps`` frames per second, ``substeps`` Bullet steps per frame,
  each body's location (its centre of mass) and rotation (a quaternion) recorded every frame.

Everything lives in a scene of its own, removed afterwards with every object, mesh and
collection made for it: the artist's scene is not changed and nothing is saved.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix, Vector

from plugins.threed.ops import OpError, _mesh_object

#: One density for every part (water's; only ratios between separate bodies matter).
DENSITY_KG_M3 = 1000.0
#: An open (not closed) part counts as a shell this thick (as ``assembly.centre_of_mass``).
SHELL_M = 0.001
#: Collision margin of every shape (m); Blender's default 4 cm would round off a glass.
MARGIN_M = 0.001
#: Simulated seconds for an object up to 1 m across; longer by sqrt(size / 1 m) above, at most ``MAX_SECONDS``.
SECONDS, MAX_SECONDS = 3.0, 10.0
#: Most points kept of a body's hull (a finely subdivided part is strided beyond this).
MAX_HULL_POINTS = 2000


def _groups(n: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """Connected groups of ``range(n)`` joined by ``pairs`` (union-find), in order of first member."""
    root = list(range(n))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for a, b in pairs:
        root[find(a)] = find(b)
    out: dict[int, list[int]] = {}
    for i in range(n):
        out.setdefault(find(i), []).append(i)
    return list(out.values())


def _closed(triangles: np.ndarray) -> bool:
    """Every edge of the triangles is shared by exactly two of them (Blender keeps shared vertices)."""
    edges = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return bool(len(counts)) and bool((counts == 2).all())


def mass_properties(vertices: np.ndarray, triangles: np.ndarray) -> tuple[float, np.ndarray, bool]:
    """``(mass_kg, centre_of_mass (3,) m, closed)`` of one part at ``DENSITY_KG_M3``.

    A closed part by its enclosed volume (signed tetrahedra to the origin, either winding); an
    open one, or one enclosing nothing, as a ``SHELL_M`` shell of its area.
    """
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    if _closed(triangles):
        six_v = np.einsum("ij,ij->i", a, np.cross(b, c))
        volume = float(six_v.sum()) / 6.0
        if abs(volume) > 1e-12:
            centre = (six_v[:, None] * (a + b + c)).sum(axis=0) / (4.0 * six_v.sum())
            return abs(volume) * DENSITY_KG_M3, centre, True
    areas = np.linalg.norm(np.cross(b - a, c - a), axis=1) / 2.0
    area = float(areas.sum())
    centre = ((a + b + c) / 3.0 * areas[:, None]).sum(axis=0) / area if area > 0 else vertices.mean(axis=0)
    return max(area, 1e-12) * SHELL_M * DENSITY_KG_M3, centre, False


def _hull_points(points: np.ndarray) -> np.ndarray:
    """The vertices of the convex hull of ``points`` (all of them when flat: Bullet takes any cloud)."""
    from scipy.spatial import ConvexHull, QhullError

    points = np.unique(np.round(points, 7), axis=0)
    try:
        points = points[ConvexHull(points).vertices]
    except (QhullError, ValueError):  # flat or degenerate: a plane's points are their own hull
        pass
    if len(points) > MAX_HULL_POINTS:
        points = points[:: math.ceil(len(points) / MAX_HULL_POINTS)]
    return points


def _point_mesh(name: str, points: np.ndarray) -> bpy.types.Mesh:
    """A mesh of bare vertices: Bullet's convex hull shape reads only the vertices."""
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(points))
    mesh.vertices.foreach_set("co", points.astype(np.float32).ravel())
    mesh.update()
    return mesh


def _rigid_body(scene: bpy.types.Scene, obj: bpy.types.Object, kind: str, shape: str, mass: float, friction: float) -> None:
    with bpy.context.temp_override(scene=scene, object=obj, active_object=obj, selected_objects=[obj],
                                   view_layer=scene.view_layers[0]):
        bpy.ops.rigidbody.object_add(type=kind)
    rb = obj.rigid_body
    rb.collision_shape = shape
    rb.mass = max(mass, 1e-3)
    rb.friction = friction
    rb.restitution = 0.0
    rb.use_margin = True
    rb.collision_margin = MARGIN_M
    rb.linear_damping = 0.04
    rb.angular_damping = 0.5


def drop_test(args: dict[str, Any]) -> dict[str, Any]:
    """Drop the object on a floor in a rigid body world of its own and record every body's motion.

    Args (all optional): ``parts`` (mesh object names; default every visible mesh not made by a
    lighting preset), ``floor_z`` (m, 0), ``contact_tolerance_m`` (0.002: parts this close are
    glued into one body), ``drop_height_m`` (0.005), ``seconds`` (``SECONDS``, times sqrt(size / 1 m) for an object larger
    than 1 m, at most ``MAX_SECONDS``), ``fps`` (30),
    ``substeps`` (10 per frame), ``nudge_deg`` (5: tilt of the nudged copies; 0: none),
    ``directions`` (8 azimuths), ``friction`` (0.7).

    Returns:
        ``{"bodies": [{"parts", "mass_kg", "centre_m", "closed"}] (heaviest first),
        "drops": [{"kind": "level" | "nudged", "tilt_deg", "azimuth_deg",
        "frames": [[[x, y, z, qw, qx, qy, qz] per body] per frame]}], "fps", "seconds",
        "size_m" (the object's largest bounding extent), "floor_z", "drop_height_m", "contacts",
        "timing_s": {"build", "simulate", "total"}}``. Frame 0 is the release; a body's location is
        its centre of mass, its rotation is from the object as built (a nudged copy starts tilted).

    Raises:
        OpError: a named part is missing or not a mesh, or nothing has any triangles.
    """
    from plugins.threed import probe
    from plugins.threed.ops_look import PRESET_TAG

    started = time.perf_counter()
    floor_z = float(args.get("floor_z", 0.0))
    tolerance = float(args.get("contact_tolerance_m", 0.002))
    drop_height = float(args.get("drop_height_m", 0.005))
    fps = int(args.get("fps", 30))
    substeps = int(args.get("substeps", 10))
    nudge = float(args.get("nudge_deg", 5.0))
    directions = int(args.get("directions", 8)) if nudge > 0 else 0
    friction = float(args.get("friction", 0.7))
    names = args.get("parts") or sorted(o.name for o in bpy.data.objects
                                        if o.type == "MESH" and not o.hide_render and PRESET_TAG not in o)
    objs = [_mesh_object(n) for n in names]
    depsgraph = bpy.context.evaluated_depsgraph_get()
    geometry = [probe.evaluated_triangles(o, depsgraph)[:2] for o in objs]
    kept = [i for i, (_, t) in enumerate(geometry) if len(t)]
    if not kept:
        raise OpError(f"nothing to drop: {', '.join(names) or 'no mesh'} has no faces; build the object first")
    names, geometry = [names[i] for i in kept], [geometry[i] for i in kept]
    trees = [probe._tree(v, t) for v, t in geometry]
    touching = probe.contacts(names, geometry, trees, max_gap_m=tolerance)
    index = {n: i for i, n in enumerate(names)}
    groups = _groups(len(names), [(index[c["a"]], index[c["b"]]) for c in touching if c["distance_m"] <= tolerance])
    bodies = []
    for group in groups:
        props = [mass_properties(*geometry[i]) for i in group]
        mass = sum(p[0] for p in props)
        centre = sum(p[0] * p[1] for p in props) / mass
        points = _hull_points(np.vstack([geometry[i][0] for i in group]))
        bodies.append({"parts": [names[i] for i in group], "mass_kg": mass, "centre": centre, "points": points,
                       "closed": all(p[2] for p in props)})
    bodies.sort(key=lambda b: -b["mass_kg"])
    every = np.vstack([b["points"] for b in bodies])
    lo, hi = every.min(axis=0), every.max(axis=0)
    size = float((hi - lo).max())
    # a body's motions take sqrt(size) times as long (pendulum time): an object larger than 1 m gets longer to settle
    seconds = float(args.get("seconds") or min(MAX_SECONDS, SECONDS * max(1.0, math.sqrt(size))))
    centre = sum(b["mass_kg"] * b["centre"] for b in bodies) / sum(b["mass_kg"] for b in bodies)
    # the copies: level, then nudged toward each azimuth, in a row far enough apart never to meet
    poses: list[tuple[str, float, float | None, Matrix]] = [("level", 0.0, None, Matrix.Identity(4))]
    for k in range(directions):
        azimuth = 360.0 * k / directions
        axis = Vector((-math.sin(math.radians(azimuth)), math.cos(math.radians(azimuth)), 0.0))  # tilts the top toward the azimuth
        pivot = Matrix.Translation(Vector(centre))
        poses.append(("nudged", nudge, azimuth, pivot @ Matrix.Rotation(math.radians(nudge), 4, axis) @ pivot.inverted()))
    spacing = 3.0 * float(np.linalg.norm((hi - lo)[:2])) + 4.0 * size + 0.5
    made_objects: list[bpy.types.Object] = []
    made_meshes: list[bpy.types.Mesh] = []
    sim = bpy.data.scenes.new("HorizonDropTest")
    world_collections: list[bpy.types.Collection] = []
    try:
        sim.render.fps, sim.render.fps_base = fps, 1.0
        n_frames = max(2, round(seconds * fps))
        with bpy.context.temp_override(scene=sim, view_layer=sim.view_layers[0]):
            bpy.ops.rigidbody.world_add()
        rbw = sim.rigidbody_world
        rbw.collection = bpy.data.collections.new("HorizonDropTestBodies")
        world_collections.append(rbw.collection)
        rbw.substeps_per_frame, rbw.solver_iterations = substeps, 20
        rbw.use_split_impulse = True
        rbw.point_cache.frame_start, rbw.point_cache.frame_end = 1, n_frames + 1
        sim.frame_start, sim.frame_end = 1, n_frames + 1
        floor_size = spacing * (len(poses) + 1) + size
        floor_mesh = _point_mesh("HorizonDropFloor", np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]))
        made_meshes.append(floor_mesh)
        floor = bpy.data.objects.new("HorizonDropFloor", floor_mesh)
        made_objects.append(floor)
        thickness = max(size, 0.1)
        floor.location = (spacing * (len(poses) - 1) / 2.0, 0.0, floor_z - thickness / 2.0)  # Blender centres a box on the origin
        floor.scale = (floor_size, floor_size, thickness)
        sim.collection.objects.link(floor)
        _rigid_body(sim, floor, "PASSIVE", "BOX", 1.0, friction)
        tracked: list[list[bpy.types.Object]] = []
        for c, (_, _, _, pose) in enumerate(poses):
            rotation = pose.to_quaternion()
            moved = [np.asarray(pose @ Matrix.Translation(Vector(b["centre"])))[:3, 3] for b in bodies]
            lowest = min(float((b["points"] @ np.asarray(pose.to_3x3()).T)[:, 2].min() + np.asarray(pose)[2, 3]) for b in bodies)
            lift = floor_z + drop_height - lowest
            row = []
            for b, at in zip(bodies, moved, strict=True):
                mesh = _point_mesh("HorizonDropBody", b["points"] - b["centre"])
                made_meshes.append(mesh)
                obj = bpy.data.objects.new("HorizonDropBody", mesh)
                made_objects.append(obj)
                obj.rotation_mode = "QUATERNION"
                obj.rotation_quaternion = rotation
                obj.location = (at[0] + c * spacing, at[1], at[2] + lift)
                sim.collection.objects.link(obj)
                _rigid_body(sim, obj, "ACTIVE", "CONVEX_HULL", b["mass_kg"], friction)
                row.append(obj)
            tracked.append(row)
        built = time.perf_counter()
        frames: list[list[list[list[float]]]] = [[] for _ in poses]
        layer = sim.view_layers[0]
        for f in range(1, n_frames + 2):
            sim.frame_set(f)
            graph = layer.depsgraph
            for c, row in enumerate(tracked):
                states = []
                for obj in row:
                    m = obj.evaluated_get(graph).matrix_world
                    q = m.to_quaternion()
                    states.append([*(round(v, 6) for v in m.translation), *(round(v, 6) for v in (q.w, q.x, q.y, q.z))])
                frames[c].append(states)
        simulated = time.perf_counter()
    finally:
        bpy.data.scenes.remove(sim)
        for obj in made_objects:
            bpy.data.objects.remove(obj)
        for mesh in made_meshes:
            bpy.data.meshes.remove(mesh)
        for coll in world_collections:
            bpy.data.collections.remove(coll)
    offsets = [c * spacing for c in range(len(poses))]
    drops = []
    for c, (kind, tilt, azimuth, _) in enumerate(poses):
        for states in frames[c]:  # the copies' row offset taken out: every drop in the object's own place
            for s in states:
                s[0] = round(s[0] - offsets[c], 6)
        drops.append({"kind": kind, "tilt_deg": tilt, "azimuth_deg": azimuth, "frames": frames[c]})
    return {
        "bodies": [{"parts": b["parts"], "mass_kg": round(b["mass_kg"], 6), "centre_m": [round(float(v), 6) for v in b["centre"]],
                    "closed": b["closed"], "hull_points": len(b["points"])} for b in bodies],
        "drops": drops, "fps": fps, "seconds": n_frames / fps, "size_m": round(size, 6), "floor_z": floor_z,
        "drop_height_m": drop_height, "contacts": touching,
        "timing_s": {"build": round(built - started, 4), "simulate": round(simulated - built, 4),
                     "total": round(time.perf_counter() - started, 4)},
    }


OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"drop_test": drop_test}
MUTATING: set[str] = set()  # the test's scene is removed again: nothing to save
