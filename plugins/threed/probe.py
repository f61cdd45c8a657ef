"""Measurements of how a scene's meshes relate, taken INSIDE the Blender worker (imports ``mathutils``).

``relations`` is called by ``ops.mesh_data``; the reward (``plugins.threed.assembly``) judges the
numbers in the agent process. Two measurements, both on Blender's own BVH trees
(``mathutils.bvhtree.BVHTree``) built from each object's evaluated, world-space triangles
(``evaluated_triangles``, which ``ops.mesh_data`` and ``look_probe`` use too):

- **contacts**: for every pair of mesh objects whose bounding boxes are within ``max_gap_m``,
  the smallest distance between them in metres: 0 when their triangles intersect
  (``BVHTree.overlap``), else the least distance from any vertex of one to the other's surface
  (``BVHTree.find_nearest``), both ways. Vertex-to-surface distances are exact for the face- and
  corner-contacts of modelled parts; two edges crossing without a vertex near may read a little
  farther apart than they are (an upper bound, never less).
- **render_view**: the same object-index map for the render just made, reduced to what each
  object shows of itself (``plugins.threed.view_text``): the text a model reads instead of the
  picture when it cannot see images.
- **view**: an object-index map of the camera's frame by ray casting, ``VIEW_WIDTH`` rays across
  (the height follows the render resolution's aspect): the depth (m along the ray) at which each
  ray first meets each object, ``inf`` where it misses. The nearest object per pixel is what a
  render shows there; the pixels where an object is hit at all are its silhouette, occluded or not.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from mathutils import Vector
from mathutils.bvhtree import BVHTree

#: Pairs of objects farther apart than this (m, bounding boxes) are not measured: not in contact.
MAX_GAP_M = 0.05
#: Rays across the camera frame for the object-index map.
VIEW_WIDTH = 96


def evaluated_triangles(obj: Any, depsgraph: Any, *, material_index: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One mesh object as it renders (modifiers applied), in world coordinates.

    Args:
        obj: a ``bpy`` mesh object.
        depsgraph: the evaluated dependency graph (``bpy.context.evaluated_depsgraph_get()``).
        material_index: also return each triangle's material slot index.

    Returns:
        ``(vertices, triangles, material_index)``: world-space vertices (n, 3) float64 in metres,
        triangles (m, 3) int64 into them, and the triangles' material indices (m,) int64, or None
        unless asked. The evaluated mesh is freed before it returns.
    """
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh(preserve_all_data_layers=False, depsgraph=depsgraph)
    try:
        mesh.calc_loop_triangles()
        verts = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", verts)
        tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", tris)
        mats = None
        if material_index:
            mats = np.empty(len(mesh.loop_triangles), dtype=np.int64)
            mesh.loop_triangles.foreach_get("material_index", mats)
    finally:
        evaluated.to_mesh_clear()
    matrix = np.array(obj.matrix_world)
    world = verts.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]
    return world, tris.reshape(-1, 3), mats


def _tree(vertices: np.ndarray, triangles: np.ndarray) -> BVHTree | None:
    if len(triangles) == 0:
        return None
    return BVHTree.FromPolygons([tuple(v) for v in vertices], [tuple(t) for t in triangles], all_triangles=True, epsilon=0.0)


def _nearest(tree: BVHTree, points: np.ndarray, limit: float) -> float:
    """Least distance (m) from ``points`` to the tree's surface, ``inf`` when none is within ``limit``."""
    best = np.inf
    for p in points:
        hit = tree.find_nearest(Vector(p), limit)
        if hit[0] is not None and hit[3] < best:
            best = hit[3]
            if best == 0.0:
                break
    return float(best)


def contacts(names: list[str], geometry: list[tuple[np.ndarray, np.ndarray]], trees: list[BVHTree | None],
             max_gap_m: float = MAX_GAP_M) -> list[dict[str, Any]]:
    """``[{"a", "b", "distance_m", "intersecting"}]`` for each pair within ``max_gap_m`` (bounding boxes first)."""
    boxes = [(v.min(axis=0), v.max(axis=0)) if len(v) else None for v, _ in geometry]
    out = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if boxes[i] is None or boxes[j] is None or trees[i] is None or trees[j] is None:
                continue
            gap = np.maximum(0.0, np.maximum(boxes[j][0] - boxes[i][1], boxes[i][0] - boxes[j][1]))
            if float(np.linalg.norm(gap)) > max_gap_m:
                continue
            intersecting = bool(trees[i].overlap(trees[j]))
            if intersecting:
                distance = 0.0
            else:
                distance = min(_nearest(trees[j], geometry[i][0], max_gap_m), _nearest(trees[i], geometry[j][0], max_gap_m))
            if distance <= max_gap_m:
                out.append({"a": names[i], "b": names[j], "distance_m": round(distance, 7), "intersecting": intersecting})
    return out


def view_depths(scene: Any, trees: list[BVHTree | None], width: int = VIEW_WIDTH) -> dict[str, Any] | None:
    """Depth of each object along each camera ray: ``{"depth": (n_objects, h, w) float32, "size": [w, h]}``.

    The rays go through pixel centres of the camera's frame (``Camera.view_frame``: sensor fit,
    lens and render aspect as Blender renders them); perspective rays start at the camera,
    orthographic ones on its frame plane. Returns None when the scene has no camera.
    """
    cam = scene.camera
    if cam is None:
        return None
    rx, ry = scene.render.resolution_x, scene.render.resolution_y
    height = max(1, round(width * ry / rx))
    frame = [Vector(c) for c in cam.data.view_frame(scene=scene)]
    xs, ys, z = [c.x for c in frame], [c.y for c in frame], frame[0].z
    matrix = cam.matrix_world
    rotation = matrix.to_3x3().normalized()
    ortho = cam.data.type == "ORTHO"
    depth = np.full((len(trees), height, width), np.inf, dtype=np.float32)
    clip = cam.data.clip_end
    for row in range(height):
        y = max(ys) - (row + 0.5) / height * (max(ys) - min(ys))
        for col in range(width):
            x = min(xs) + (col + 0.5) / width * (max(xs) - min(xs))
            if ortho:
                origin, direction = matrix @ Vector((x, y, 0.0)), rotation @ Vector((0.0, 0.0, -1.0))
            else:
                origin, direction = matrix.translation, (rotation @ Vector((x, y, z))).normalized()
            for k, tree in enumerate(trees):
                if tree is None:
                    continue
                hit = tree.ray_cast(origin, direction, clip)
                if hit[0] is not None:
                    depth[k, row, col] = hit[3]
    return {"depth": depth, "size": [width, height]}


def relations(scene: Any, names: list[str], geometry: list[tuple[np.ndarray, np.ndarray]], folder: str) -> dict[str, Any]:
    """Contacts between the named meshes and the camera's object-index depths, for ``mesh_data``.

    Args:
        scene: the ``bpy`` scene (its camera and render resolution).
        names: object names, in the order of ``geometry``.
        geometry: per object, world-space vertices (n, 3) float64 in metres and triangles (m, 3) int.
        folder: where ``view.npz`` (``depth``, rows in the order of ``names``) is written.

    Returns:
        ``{"contacts": [...], "view": {"file", "size", "camera"} or None}``.
    """
    trees = [_tree(v, t) for v, t in geometry]
    view = view_depths(scene, trees)
    view_out = None
    if view is not None:
        path = os.path.join(folder, "view.npz")
        np.savez(path, depth=view["depth"])  # rows in the order of ``names``
        view_out = {"file": path, "size": view["size"], "camera": scene.camera.name}
    return {"contacts": contacts(names, geometry, trees), "view": view_out}


#: Vertices projected per object for its frame extent (a longer mesh is strided; the extent then
#: may miss a thin spike, never the bulk).
MAX_PROJECTED = 4000


def _frame_extent(scene: Any, vertices: np.ndarray) -> dict[str, Any] | None:
    """The projection of ``vertices`` (world, m) into the camera frame (``view_text.summarize``'s ``extents``)."""
    from bpy_extras.object_utils import world_to_camera_view

    if len(vertices) == 0:
        return None
    step = max(1, len(vertices) // MAX_PROJECTED)
    points = np.array([tuple(world_to_camera_view(scene, scene.camera, Vector(v))) for v in vertices[::step]])
    front = points[points[:, 2] > 0]
    if len(front) == 0:
        return {"behind": True}
    return {"x": [float(front[:, 0].min()), float(front[:, 0].max())], "y": [float(front[:, 1].min()), float(front[:, 1].max())]}


def _ray_pixels(path: str, size: list[int]) -> np.ndarray | None:
    """The PNG at ``path`` sampled at the centres of a ``size`` = [w, h] ray grid: (h, w, 3), row 0 at the top."""
    import bpy

    try:
        image = bpy.data.images.load(path, check_existing=False)
    except RuntimeError:
        return None
    try:
        width, height = image.size
        flat = np.empty(width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(flat)  # bottom row first, RGBA 0-1 as stored (sRGB for a PNG)
    finally:
        bpy.data.images.remove(image)
    rgb = flat.reshape(height, width, 4)[::-1, :, :3]
    w, h = size
    rows = ((np.arange(h) + 0.5) / h * height).astype(int)
    cols = ((np.arange(w) + 0.5) / w * width).astype(int)
    return rgb[np.ix_(rows, cols)]


def render_view(scene: Any, image_path: str) -> dict[str, Any] | None:
    """What the render at ``image_path`` shows of each renderable mesh (``view_text.summarize``).

    Args:
        scene: the ``bpy`` scene just rendered (its camera and resolution).
        image_path: the PNG the render wrote, for each object's mean colour.

    Returns:
        ``view_text.summarize``'s dict, or None when the scene has no camera.
    """
    import bpy

    from plugins.threed import view_text

    if scene.camera is None:
        return None
    depsgraph = bpy.context.evaluated_depsgraph_get()
    names, geometry = [], []
    for obj in sorted((o for o in scene.objects if o.type == "MESH" and not o.hide_render), key=lambda o: o.name):
        world, tris, _ = evaluated_triangles(obj, depsgraph)
        names.append(obj.name)
        geometry.append((world, tris))
    view = view_depths(scene, [_tree(v, t) for v, t in geometry])
    if view is None:
        return None
    extents = [_frame_extent(scene, v) for v, _ in geometry]
    return view_text.summarize(names, view["depth"], extents, _ray_pixels(image_path, view["size"]))
