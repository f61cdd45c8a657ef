"""Modelling operations an artist expects, run INSIDE the Blender worker (they import ``bpy``).

Same contract as ``plugins.threed.ops``: ``op(args: dict) -> dict``, arguments already validated
by the tool's pydantic model (``plugins.threed.tools_modelling``), scene-dependent problems raised
as ``OpError`` with what to do. Units: metres, degrees, watts. The worker merges ``OPS`` and
``MUTATING`` into its table. Surfacing (textures, UVs), lighting presets and camera framing live in
``ops_look``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import bmesh
import bpy
from mathutils import Vector

from plugins.threed.ops import OpError, _link, _mesh_object, _new_name, _object, describe, non_manifold_edges
from plugins.threed.profile import smooth_profile

#: Profile points closer to the Z axis than this (m) are on it: one vertex, not a ring.
AXIS_EPS_M = 1e-6


def _select_only(objs: list[bpy.types.Object], active: bpy.types.Object) -> None:
    """Make ``objs`` the selection and ``active`` the active object (operators read the context)."""
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    for o in objs:
        o.hide_set(False)
        o.select_set(True)
    bpy.context.view_layer.objects.active = active


# -- duplicate, join, parent, apply --------------------------------------------------------


def duplicate(args: dict[str, Any]) -> dict[str, Any]:
    """Copy an object ``count`` times, each ``offset`` (m) further than the last, or once per entry
    of ``offsets`` (m, from the original). Names: ``names`` or ``<name>.001``, ``.002``, ...;
    ``linked`` shares the mesh data (editing one edits all)."""
    source = _object(args["name"])
    offsets = args.get("offsets") or [[c * (i + 1) for c in args.get("offset", [1.0, 0.0, 0.0])] for i in range(args.get("count", 1))]
    names = args.get("names") or []
    if names and len(names) != len(offsets):
        raise OpError(f"names has {len(names)} entries but {len(offsets)} copies are made; give one name per copy or none")
    made = []
    for i, off in enumerate(offsets):
        name = _new_name(names[i]) if names else _free_name(source.name)  # before copy(), which takes a name itself
        copy = source.copy()
        copy.name = name
        if source.data is not None and not args.get("linked", False):
            copy.data = source.data.copy()
        copy.location = Vector(source.location) + Vector(off)
        for collection in source.users_collection or [bpy.context.scene.collection]:
            collection.objects.link(copy)
        made.append(copy)
    bpy.context.view_layer.update()
    return {"copies": [describe(o) for o in made]}


def _free_name(base: str) -> str:
    for i in range(1, 10000):
        name = f"{base}.{i:03d}"
        if bpy.data.objects.get(name) is None:
            return name
    raise OpError(f"no free name left for copies of {base!r}; give names")


def join(args: dict[str, Any]) -> dict[str, Any]:
    """Join mesh objects into ``into`` (which keeps its name, transform and materials, plus theirs).

    Modifiers are not carried by Blender's join, so every object must have none (apply_modifier first).
    """
    target = _mesh_object(args["into"])
    others = [_mesh_object(n) for n in args["objects"] if n != target.name]
    if not others:
        raise OpError(f"objects names only {target.name!r}; list the other objects to join into it")
    with_mods = [o.name for o in [target, *others] if o.modifiers]
    if with_mods:
        raise OpError(f"{', '.join(with_mods)} still have live modifiers, which a join would drop or misapply; "
                      "apply_modifier (all) on them first")
    _select_only([target, *others], target)
    with bpy.context.temp_override(active_object=target, object=target, selected_objects=[target, *others],
                                   selected_editable_objects=[target, *others]):
        bpy.ops.object.join()
    bpy.context.view_layer.update()
    return {"joined": [o for o in args["objects"] if o != target.name], "after": describe(target),
            "non_manifold_edges": non_manifold_edges(target)}


def parent(args: dict[str, Any]) -> dict[str, Any]:
    """Parent ``children`` to ``parent``; with ``keep_transform`` they stay where they are in the world."""
    dad = _object(args["parent"])
    kids = [_object(n) for n in args["children"]]
    for kid in kids:
        if kid == dad:
            raise OpError(f"{kid.name!r} cannot be its own parent")
        ancestor = dad
        while ancestor is not None:
            if ancestor == kid:
                raise OpError(f"{kid.name!r} is an ancestor of {dad.name!r}; parenting it there would make a loop")
            ancestor = ancestor.parent
    bpy.context.view_layer.update()
    for kid in kids:
        world = kid.matrix_world.copy()
        kid.parent = dad
        if args.get("keep_transform", True):
            kid.matrix_parent_inverse = dad.matrix_world.inverted()
            bpy.context.view_layer.update()
            kid.matrix_world = world
    bpy.context.view_layer.update()
    return {"parent": dad.name, "children": [describe(k) for k in kids]}


def apply_modifier(args: dict[str, Any]) -> dict[str, Any]:
    """Apply one named modifier, or every modifier in stack order (``modifier`` omitted), to the mesh."""
    obj = _mesh_object(args["name"])
    wanted = args.get("modifier")
    names = [m.name for m in obj.modifiers]
    if not names:
        raise OpError(f"{obj.name!r} has no modifiers to apply")
    if wanted is not None and wanted not in names:
        raise OpError(f"{obj.name!r} has no modifier {wanted!r}; its modifiers: {', '.join(names)}")
    if obj.data.users > 1:
        raise OpError(f"{obj.name!r} shares its mesh with other objects (a linked duplicate); Blender applies modifiers "
                      "only to single-user meshes: duplicate it unlinked instead")
    _select_only([obj], obj)
    todo = [wanted] if wanted else names
    for mod in todo:
        with bpy.context.temp_override(object=obj, active_object=obj):
            bpy.ops.object.modifier_apply(modifier=mod)
    bpy.context.view_layer.update()
    return {"applied": todo, "remaining": [m.name for m in obj.modifiers], "after": describe(obj),
            "non_manifold_edges": non_manifold_edges(obj)}


def shade(args: dict[str, Any]) -> dict[str, Any]:
    """Shade objects smooth (``smooth``), keeping edges sharper than ``angle_deg`` crisp when given
    (auto-smooth: Mesh.set_sharp_from_angle), or flat."""
    objs = [_mesh_object(n) for n in args["objects"]]
    angle = args.get("angle_deg")
    for obj in objs:
        if args.get("smooth", True):
            obj.data.shade_smooth()
            # 180 degrees marks no edge sharp: clears what an earlier auto-smooth marked
            obj.data.set_sharp_from_angle(angle=math.radians(angle if angle is not None else 180.0))
        else:
            obj.data.shade_flat()
        obj.data.update()
    # read back from the meshes: faces shaded smooth, and edges kept sharp (Blender's "sharp_edge" attribute)
    result = {}
    for obj in objs:
        sharp = obj.data.attributes.get("sharp_edge")
        flags = [False] * len(obj.data.edges)
        if sharp is not None:
            sharp.data.foreach_get("value", flags)
        result[obj.name] = {"smooth_faces": sum(p.use_smooth for p in obj.data.polygons), "faces": len(obj.data.polygons),
                            "sharp_edges": sum(flags), "edges": len(flags)}
    return {"objects": [o.name for o in objs], "smooth": args.get("smooth", True), "angle_deg": angle, "shading": result}


# -- lathe and pipe ------------------------------------------------------------------------


def lathe(args: dict[str, Any]) -> dict[str, Any]:
    """Revolve a profile of ``[r, z]`` points (m) around the object's Z axis in ``segments`` steps.

    Points on the axis (r = 0) become one vertex (a pole), so a profile that starts and ends on
    the axis gives a closed solid; ``closed`` joins the last point back to the first (a ring, or a
    wall cross-section). Face normals are made consistent (outwards when the result is closed).
    ``smooth`` (points per segment, 1 = the polyline) runs a spline through the points
    (``plugins.threed.profile``) except at the ``sharp`` ones.
    """
    name = _new_name(args["name"])
    profile = [(float(r), float(z)) for r, z in args["profile"]]
    given = len(profile)
    if args.get("smooth", 1) > 1:
        profile, _ = smooth_profile(profile, args["smooth"], set(args.get("sharp") or ()), args.get("closed", False), AXIS_EPS_M)
    segments = args.get("segments", 48)
    edges = list(zip(range(len(profile) - 1), range(1, len(profile))))
    if args.get("closed", False):
        edges.append((len(profile) - 1, 0))
    bm = bmesh.new()
    try:
        rings: list[list[Any]] = []
        for r, z in profile:
            if r <= AXIS_EPS_M:
                pole = bm.verts.new((0.0, 0.0, z))
                rings.append([pole] * segments)
            else:
                rings.append([bm.verts.new((r * math.cos(2 * math.pi * k / segments), r * math.sin(2 * math.pi * k / segments), z))
                              for k in range(segments)])
        for a, b in edges:
            ra, rb = rings[a], rings[b]
            if ra[0] is ra[1] and rb[0] is rb[1]:
                continue  # both on the axis: no surface
            for k in range(segments):
                k2 = (k + 1) % segments
                quad = [ra[k], ra[k2], rb[k2], rb[k]]
                unique = list(dict.fromkeys(quad))  # a pole turns the quad into a triangle
                if len(unique) >= 3:
                    bm.faces.new(unique)
        bmesh.ops.recalc_face_normals(bm, faces=bm.faces)
        mesh = bpy.data.meshes.new(name)
        bm.to_mesh(mesh)
    except ValueError as exc:  # bmesh refuses a face twice: the profile crosses itself or repeats a segment
        raise OpError(f"the profile makes overlapping faces ({exc}); give a profile that does not cross or repeat itself") from None
    finally:
        bm.free()
    obj = _link(bpy.data.objects.new(name, mesh))
    obj.location = args.get("location", [0.0, 0.0, 0.0])
    bpy.context.view_layer.update()
    holes = non_manifold_edges(obj)
    return {"added": describe(obj), "non_manifold_edges": holes, "closed_solid": holes == 0,
            "profile_points": {"given": given, "revolved": len(profile)}}


def pipe(args: dict[str, Any]) -> dict[str, Any]:
    """A tube of ``radius`` (m) through ``points`` (m, world), capped at both ends, as a mesh.

    Built as a bevelled curve (smooth: Bezier with automatic handles through every point; else
    straight segments) and converted to a mesh, so checks, booleans and exports see it.
    """
    name = _new_name(args["name"])
    points = args["points"]
    curve = bpy.data.curves.new(name + ".curve", type="CURVE")
    curve.dimensions = "3D"
    curve.bevel_mode = "ROUND"
    curve.bevel_depth = args["radius"]
    curve.bevel_resolution = args.get("bevel_resolution", 4)
    curve.use_fill_caps = True
    curve.resolution_u = args.get("resolution", 12)
    curve.twist_mode = "MINIMUM"
    if args.get("smooth", True):
        spline = curve.splines.new("BEZIER")
        spline.bezier_points.add(len(points) - 1)
        for bp, co in zip(spline.bezier_points, points):
            bp.co = co
            bp.handle_left_type = bp.handle_right_type = "AUTO"
    else:
        spline = curve.splines.new("POLY")
        spline.points.add(len(points) - 1)
        for p, co in zip(spline.points, points):
            p.co = (*co, 1.0)
    holder = _link(bpy.data.objects.new(name + ".curve", curve))
    try:
        bpy.context.view_layer.update()
        evaluated = holder.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mesh = bpy.data.meshes.new_from_object(evaluated)
    finally:
        bpy.data.objects.remove(holder)
        bpy.data.curves.remove(curve)
    bm = bmesh.new()
    try:
        bm.from_mesh(mesh)
        bmesh.ops.remove_doubles(bm, verts=bm.verts, dist=1e-6)  # the caps' rims meet the tube there
        bmesh.ops.recalc_face_normals(bm, faces=bm.faces)
        bm.to_mesh(mesh)
    finally:
        bm.free()
    mesh.name = name
    obj = _link(bpy.data.objects.new(name, mesh))
    bpy.context.view_layer.update()
    holes = non_manifold_edges(obj)
    return {"added": describe(obj), "non_manifold_edges": holes, "closed_solid": holes == 0}


OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    f.__name__: f for f in (duplicate, join, parent, apply_modifier, shade, lathe, pipe)
}
MUTATING = set(OPS)
