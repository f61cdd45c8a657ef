"""Blender's own 3D-print checks on a mesh file, computed in ``bpy`` (Blender as a module).

Blender's "3D-Print Toolbox" is an extension since Blender 4.2 and is not in the ``bpy`` wheel
(its ``addons_core`` holds no ``print3d_toolbox``), so this module computes what the toolbox's
checks compute, with the same Blender primitives, on the file as Blender imports it:

- import: ``bpy.ops.wm.stl_import`` / ``bpy.ops.wm.obj_import`` (one object per OBJ ``o``, groups
  not split: the importer's defaults), ``bpy.ops.wm.ply_import``; axes kept as in the file;
- merge by distance: ``bmesh.ops.remove_doubles`` with ``merge_distance_m`` (what Mesh > Clean
  Up > Merge by Distance runs), on every object;
- Solid: edges that are not ``BMEdge.is_manifold`` (boundary edges, used by one face, are among
  them; counted apart too), and "bad contiguous" edges, manifold but not ``is_contiguous``
  (their two faces disagree on direction);
- Intersections: faces in ``BVHTree.FromBMesh(bm, epsilon=1e-5).overlap(itself)``;
- Degenerate: faces of area at most ``zero_m``² and edges at most ``zero_m`` long (the toolbox's
  "threshold_zero", 0.0001 m by default);
- Shells: the toolbox's count, the Geometry Nodes "Mesh Island" count (vertices joined by edges,
  so two solids touching at one vertex are one shell), and beside it the pieces of faces joined
  through shared edges (Horizon's ``bodies`` definition), walked with bmesh;
- Volume: ``BMesh.calc_volume(signed=True)`` (negative: the faces point inwards).

Run where ``bpy`` imports (its own process: bpy owns global state)::

    python -m plugins.threed.print3d [--merge-distance 1e-5] [--out FILE] FILE...   # JSON lines

(``--out``: Blender's importers print to stdout too.) The comparison with Horizon's checks is
``plugins.threed.compare``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: The toolbox's default "threshold_zero" (m): shorter edges and smaller faces are degenerate.
ZERO_M = 1e-4
#: The toolbox's BVH epsilon for the intersection test (m).
BVH_EPSILON_M = 1e-5


def import_file(path: Path) -> list[Any]:
    """Import ``path`` into an empty scene with Blender's importer; return its mesh objects.

    Raises:
        ValueError: the format has no Blender importer here, or the import made no mesh object.
    """
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    suffix = path.suffix.lower()
    if suffix == ".stl":
        bpy.ops.wm.stl_import(filepath=str(path), forward_axis="Y", up_axis="Z")
    elif suffix == ".obj":
        bpy.ops.wm.obj_import(filepath=str(path), forward_axis="Y", up_axis="Z", use_split_objects=True, use_split_groups=False)
    elif suffix == ".ply":
        bpy.ops.wm.ply_import(filepath=str(path), forward_axis="Y", up_axis="Z")
    else:
        raise ValueError(f"{path.name}: no Blender importer used for {suffix} here (STL, OBJ, PLY)")
    objects = sorted((o for o in bpy.data.objects if o.type == "MESH"), key=lambda o: o.name)
    if not objects:
        raise ValueError(f"{path.name}: Blender imported no mesh object")
    return objects


def _edge_islands(bm: Any) -> int:
    """Pieces of faces joined through shared edges (a walk over ``BMEdge.link_faces``)."""
    seen: set[int] = set()
    pieces = 0
    for face in bm.faces:
        if face.index in seen:
            continue
        pieces += 1
        stack = [face]
        seen.add(face.index)
        while stack:
            for edge in stack.pop().edges:
                for other in edge.link_faces:
                    if other.index not in seen:
                        seen.add(other.index)
                        stack.append(other)
    return pieces


def _mesh_island_count(obj: Any) -> int:
    """The toolbox's "Shells": Geometry Nodes' Mesh Island count on the object's mesh."""
    import bpy

    tree = bpy.data.node_groups.new(".horizon_shells", "GeometryNodeTree")
    try:
        tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
        group_in, group_out = tree.nodes.new("NodeGroupInput"), tree.nodes.new("NodeGroupOutput")
        island = tree.nodes.new("GeometryNodeInputMeshIsland")
        store = tree.nodes.new("GeometryNodeStoreNamedAttribute")
        store.data_type, store.domain = "INT", "POINT"
        store.inputs["Name"].default_value = "horizon_island_count"
        tree.links.new(group_in.outputs[0], store.inputs["Geometry"])
        tree.links.new(island.outputs["Island Count"], store.inputs["Value"])
        tree.links.new(store.outputs["Geometry"], group_out.inputs[0])
        modifier = obj.modifiers.new("horizon_shells", "NODES")
        modifier.node_group = tree
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        values = evaluated.data.attributes.get("horizon_island_count")
        count = int(values.data[0].value) if values is not None and len(values.data) else 0
        obj.modifiers.remove(modifier)
        return count
    finally:
        bpy.data.node_groups.remove(tree)


def check_object(obj: Any, merge_distance_m: float, zero_m: float = ZERO_M) -> dict[str, Any]:
    """The toolbox's checks on one imported object after merging by distance.

    Args:
        obj: a mesh object (coordinates taken as metres).
        merge_distance_m: vertices closer than this are merged first (``remove_doubles``).
        zero_m: the degenerate threshold (m).

    Returns:
        ``{name, faces, merged_vertices, non_manifold_edges, boundary_edges, bad_contiguous_edges,
        intersect_faces, zero_faces, zero_edges, shells, edge_islands, volume_m3}`` (counts,
        except the signed volume in m³).
    """
    import bmesh
    from mathutils.bvhtree import BVHTree

    bm = bmesh.new()
    try:
        bm.from_mesh(obj.data)
        before = len(bm.verts)
        bmesh.ops.remove_doubles(bm, verts=bm.verts[:], dist=merge_distance_m)
        bm.verts.index_update()
        bm.faces.index_update()
        bm.normal_update()
        tree = BVHTree.FromBMesh(bm, epsilon=BVH_EPSILON_M)
        intersect = {i for pair in tree.overlap(tree) for i in pair}
        result = {
            "name": obj.name,
            "faces": len(bm.faces),
            "merged_vertices": before - len(bm.verts),
            "non_manifold_edges": sum(not e.is_manifold for e in bm.edges),
            "boundary_edges": sum(e.is_boundary for e in bm.edges),
            "bad_contiguous_edges": sum(e.is_manifold and not e.is_contiguous for e in bm.edges),
            "intersect_faces": len(intersect),
            "zero_faces": sum(f.calc_area() <= zero_m**2 for f in bm.faces),
            "zero_edges": sum(e.calc_length() <= zero_m for e in bm.edges),
            "edge_islands": _edge_islands(bm),
            "volume_m3": bm.calc_volume(signed=True),
        }
        bm.to_mesh(obj.data)  # the merged mesh, for the Geometry Nodes shell count
    finally:
        bm.free()
    result["shells"] = _mesh_island_count(obj)
    return result


def check_file(path: Path, merge_distance_m: float) -> dict[str, Any]:
    """Blender's checks on every mesh object of ``path``: ``{file, objects: [...]}``, or
    ``{file, error}`` when Blender cannot import it (the importer's refusal, not a crash)."""
    path = Path(path)
    try:
        objects = import_file(path)
    except (ValueError, RuntimeError) as exc:  # bpy.ops raise RuntimeError for files they reject
        return {"file": str(path), "error": str(exc).strip()}
    return {"file": str(path), "objects": [check_object(o, merge_distance_m) for o in objects]}


def main(argv: list[str] | None = None) -> int:
    """Write one JSON object a line (``check_file``) for each file given."""
    from plugins.threed.checks import MERGE_DISTANCE_M

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--merge-distance", type=float, default=MERGE_DISTANCE_M, help="metres (default %(default)s)")
    parser.add_argument("--out", type=Path, help="write the JSON lines here instead of stdout")
    args = parser.parse_args(argv)
    lines = (json.dumps(check_file(path, args.merge_distance)) + "\n" for path in args.files)
    if args.out:
        with args.out.open("w") as fh:
            fh.writelines(lines)
    else:
        sys.stdout.writelines(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
