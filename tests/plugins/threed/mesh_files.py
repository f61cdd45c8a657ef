"""Small mesh files written for the tests (STL text, a UV-seamed OBJ cube)."""

from __future__ import annotations

import numpy as np
import trimesh


def write_stl(path, triangles):
    """An ASCII STL of ``triangles`` ((m, 3, 3) corner coordinates)."""
    facets = "".join("facet normal 0 0 0\nouter loop\n" + "".join(f"vertex {x!r} {y!r} {z!r}\n" for x, y, z in tri)
                     + "endloop\nendfacet\n" for tri in np.asarray(triangles, dtype=float).tolist())
    path.write_text(f"solid t\n{facets}endsolid t\n")
    return path


def seam_cube_obj(path):
    """A unit cube whose every face has its own UVs and normal: trimesh's loader splits each corner
    into 3 vertices (24 in all), as any UV-mapped export does at seams."""
    box = trimesh.creation.box([1, 1, 1])
    lines = [f"v {x} {y} {z}" for x, y, z in box.vertices.tolist()]
    lines += [f"vt {u} {v}" for u, v in ((0, 0), (1, 0), (0, 1))]
    lines += [f"vn {x} {y} {z}" for x, y, z in box.face_normals.tolist()]
    lines += [f"f {a + 1}/1/{i + 1} {b + 1}/2/{i + 1} {c + 1}/3/{i + 1}" for i, (a, b, c) in enumerate(box.faces.tolist())]
    path.write_text("\n".join(lines) + "\n")
    return path
