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


#: An L-shaped outline (metres, counter-clockwise seen from +z), its notch at corner 3.
L_OUTLINE = [(0.0, 0.0), (0.02, 0.0), (0.02, 0.01), (0.01, 0.01), (0.01, 0.02), (0.0, 0.02)]


def l_prism_obj(path, height=0.01, start=2):
    """A closed prism over ``L_OUTLINE`` as an OBJ of n-gons: two L-shaped caps listed from corner
    ``start`` (from 2, the fan from the first corner has a triangle over the notch, outside the L,
    wound backwards) and quads round the side. Area 14 cm², volume 3 cm³ (at the default height)."""
    k = len(L_OUTLINE)
    order = [(start + i) % k for i in range(k)]
    lines = [f"v {x!r} {y!r} 0.0" for x, y in L_OUTLINE] + [f"v {x!r} {y!r} {height!r}" for x, y in L_OUTLINE]
    lines.append("f " + " ".join(str(k + i + 1) for i in order))  # top, counter-clockwise from +z
    lines.append("f " + " ".join(str(i + 1) for i in reversed(order)))  # bottom, seen from -z
    lines += [f"f {i + 1} {(i + 1) % k + 1} {k + (i + 1) % k + 1} {k + i + 1}" for i in range(k)]
    path.write_text("o l_prism\n" + "\n".join(lines) + "\n")
    return path


def notched_block_obj(path, size=0.02, height=0.01):
    """A closed block as an OBJ of n-gons whose top is two coplanar faces: an L-shaped hexagon
    (non-convex) and the square filling its notch, both listed from the notch's outer corner, so
    the fan from the first corner of each draws the same diagonal, the L's outside the L: the fan's
    triangle over the notch and the square's are a back-to-back pair, 4 faces on one edge. Blender
    reads it closed (n-gons as they are; filled by ear clipping). The sides on the notch are pentagons
    (a corner in the middle of their top edge)."""
    s, h, m = size, height, size / 2
    corners = {"b0": (0, 0, 0), "b1": (s, 0, 0), "b2": (s, s, 0), "b3": (0, s, 0),
               "t0": (0, 0, h), "t1": (s, 0, h), "t2": (s, m, h), "t3": (m, m, h), "t4": (m, s, h),
               "t5": (0, s, h), "t6": (s, s, h)}
    index = {name: i + 1 for i, name in enumerate(corners)}
    faces = ["b0 b3 b2 b1", "t2 t3 t4 t5 t0 t1", "t2 t6 t4 t3",  # bottom, the L, the notch's square
             "b0 b1 t1 t0", "b1 b2 t6 t2 t1", "b2 b3 t5 t4 t6", "b3 b0 t0 t5"]  # the sides
    lines = [f"v {x!r} {y!r} {z!r}" for x, y, z in corners.values()]
    lines += ["f " + " ".join(str(index[c]) for c in face.split()) for face in faces]
    path.write_text("o notched_block\n" + "\n".join(lines) + "\n")
    return path

def back_to_back_triangles(offset_m=3e-6):
    """A closed 2 cm box as (m, 3, 3) triangles plus two sliver triangles across its inside, on
    three of its corners moved by up to ``offset_m`` one way and the other and wound opposite
    ways: after a 10 µm weld they are one back-to-back pair on the box's corners (what a bevelled
    boolean leaves), adding two faces to three of the box's edges."""
    box = trimesh.creation.box([0.02, 0.02, 0.02])
    tri = box.vertices[list(box.faces[0])]
    shift = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]]) * offset_m
    slivers = np.stack([tri + shift, (tri - shift)[::-1]])
    return np.vstack([box.triangles, slivers])


def crossing_boxes_triangles(size=0.02):
    """Two closed boxes of side ``size`` (metres) in one solid, the second moved by (0.3, 0.4, 0.45)
    of a side so that they pass through each other: (24, 3, 3) triangles, 12 of each box crossing
    the other box's faces."""
    a, b = trimesh.creation.box([size] * 3), trimesh.creation.box([size] * 3)
    b.apply_translation(np.array([0.3, 0.4, 0.45]) * size)
    return np.vstack([a.triangles, b.triangles])
