"""Mesh files and worker exports as trimesh meshes ready for topology checks.

Every mesh is *welded* before a check sees it: vertices closer than ``MERGE_DISTANCE_M`` metres
become one, by position alone. File formats split vertices for other reasons: STL stores each
triangle's corners separately, OBJ and glTF split a vertex wherever its UV or normal changes (a
UV seam). Without the weld those splits read as open edges and loose bodies; trimesh's own
``merge_vertices`` keeps UV/normal splits apart and rounds positions to a grid instead of a
distance, so it is not used for this.

10 µm is below the finest feature a 3D printer resolves (25-50 µm for resin, about 100 µm for
filament) and above the rounding of float32 coordinates (an STL's) up to about 100 m from the
origin, so it joins what an exporter meant to be one vertex and never what a modeller drew apart.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import trimesh
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

#: Vertices closer than this (metres) are one vertex before any topology check.
MERGE_DISTANCE_M = 1e-5

#: The advice every MeshFileError for a broken file ends with.
ADVICE = "export it again from the modelling program, or open it in Blender to see what is wrong"


class MeshFileError(ValueError):
    """A mesh file cannot be checked (missing, empty, malformed); the message says why and what to do."""


def weld(mesh: trimesh.Trimesh, distance_m: float = MERGE_DISTANCE_M) -> trimesh.Trimesh:
    """Merge vertices closer than ``distance_m`` by position only (UV and normal splits ignored).

    Vertices within the distance of each other are joined transitively and take the position of
    the lowest-numbered one; faces that lose a corner to the merge are dropped, so are
    back-to-back pairs (``back_to_back``: two faces on the same three vertices, wound opposite
    ways), and vertices no face uses are removed. ``metadata`` is kept, with counts added:
    ``merged_vertices`` (all vertices merged away), ``merged_nearby`` (those not at exactly the
    same position as the one they joined: what the distance adds to an exact merge),
    ``collapsed_faces`` and ``back_to_back_pairs``.

    Args:
        mesh: triangles in metres (``faces`` (m, 3) indexing ``vertices`` (n, 3)).
        distance_m: merge distance in metres.

    Returns:
        A new, unprocessed ``trimesh.Trimesh``.
    """
    vertices = np.asarray(mesh.vertices, dtype=np.float64)
    faces = np.asarray(mesh.faces, dtype=np.int64).reshape(-1, 3)
    n = distinct = len(vertices)
    if n:
        # exact twins first (a 1-D unique of each row's bytes; + 0.0 turns -0.0 into 0.0), then the
        # distance on the distinct positions only: STL has about six copies of each vertex
        rows = np.ascontiguousarray(vertices + 0.0).view(np.dtype((np.void, 24))).ravel()
        _, first_exact, exact = np.unique(rows, return_index=True, return_inverse=True)
        distinct = len(first_exact)
        pairs = cKDTree(vertices[first_exact]).query_pairs(distance_m, output_type="ndarray")
        graph = coo_matrix((np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(distinct, distinct))
        groups, labels = connected_components(graph, directed=False)
        first = np.full(groups, n, dtype=np.int64)
        np.minimum.at(first, labels, first_exact)  # each group at its lowest-numbered vertex
        vertices, faces = vertices[first], labels[exact.ravel()][faces]
    kept = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    faces = faces[kept]
    paired = back_to_back(faces)
    out = trimesh.Trimesh(vertices, faces[~paired], process=False, metadata=dict(mesh.metadata))
    out.remove_unreferenced_vertices()
    out.metadata.update(merged_vertices=n - len(vertices), merged_nearby=distinct - len(vertices),
                        collapsed_faces=int((~kept).sum()), back_to_back_pairs=int(paired.sum()) // 2)
    return out


def back_to_back(faces: np.ndarray) -> np.ndarray:
    """Which triangles form back-to-back pairs: two faces on the same three vertices, wound in
    opposite directions (a zero-thickness sliver both sides of which are surface).

    The weld makes them where two sliver triangles of a bevel or boolean lie within the merge
    distance of each other; they enclose nothing and add a third and fourth face to each of their
    edges, so they are dropped, as Blender's merge by distance drops the double faces it makes.
    Among k faces on one vertex set, min(forward, backward) of each winding are paired; faces
    left over (same-winding duplicates) are kept for the checks to see.

    Args:
        faces: (m, 3) vertex indices, no face with a repeated corner.

    Returns:
        (m,) bool, True for the faces of a pair.
    """
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    paired = np.zeros(len(faces), dtype=bool)
    if len(faces) < 2:
        return paired
    ordered = np.sort(faces, axis=1)
    # the winding: whether the corners are an even rotation of their sorted order
    forward = (faces == ordered).all(axis=1) | (faces == np.roll(ordered, 1, axis=1)).all(axis=1) \
        | (faces == np.roll(ordered, -1, axis=1)).all(axis=1)
    keys = np.ascontiguousarray(ordered).view(np.dtype((np.void, 24))).ravel()
    _, group, counts = np.unique(keys, return_inverse=True, return_counts=True)
    group = group.ravel()
    shared = counts[group] > 1
    if not shared.any():
        return paired
    n_forward = np.bincount(group, weights=forward, minlength=len(counts)).astype(np.int64)
    pairs = np.minimum(n_forward, counts - n_forward)  # per vertex set
    # rank each face among the faces of its set and winding; the first ``pairs`` of each winding go
    order = np.lexsort((np.arange(len(faces)), forward, group))
    sorted_key = group[order] * 2 + forward[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_key)) + 1]
    rank = np.arange(len(faces)) - np.repeat(starts, np.diff(np.r_[starts, len(faces)]))
    paired[order] = rank < pairs[group[order]]
    return paired


# -- OBJ: trimesh parses; this census catches what its loader drops without a word -------------

_INDEX = re.compile(r"^-?\d+")


def _logical_lines(text: str):
    """``(first physical line number, line)`` with backslash-continued lines joined, as trimesh joins them."""
    pending, start = "", 0
    for n, raw in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        start = start or n
        if raw.endswith("\\"):
            pending += raw[:-1]
            continue
        yield start, pending + raw
        pending, start = "", 0


def _obj_census(text: str, name: str) -> int:
    """Triangles the face statements of an OBJ text describe (a face of k corners is k - 2).

    trimesh's OBJ loader parses the file; it silently drops faces of fewer than three corners,
    reads index 0 as the first vertex and resolves relative (negative) indices against the end of
    the whole vertex list. This pass reads only ``v`` and ``f`` statements (continued lines joined
    as trimesh joins them) to raise those cases and count the triangles trimesh must produce.

    Raises:
        MeshFileError: a face with fewer than 3 corners; an index that is 0, not a number or names
            no vertex defined so far; a relative index followed by more vertices.
    """
    vertices = triangles = 0
    relative_at = None  # the first line with a relative index
    for n, line in _logical_lines(text):
        words = line.split()
        if not words:
            continue
        if words[0] == "v":
            vertices += 1
            if relative_at is not None:
                raise MeshFileError(f"{name}: line {relative_at} uses relative (negative) vertex indices and more vertices "
                                    "follow, which trimesh resolves against the end of the file; export with absolute indices")
        elif words[0] == "f":
            corners = words[1:]
            if len(corners) < 3:
                raise MeshFileError(f"{name}: line {n} is a face with {len(corners)} corner(s); "
                                    f"a face needs at least 3; {ADVICE}")
            for corner in corners:
                match = _INDEX.match(corner)
                index = int(match.group()) if match else 0
                if index == 0 or abs(index) > vertices:
                    raise MeshFileError(f"{name}: line {n}: face corner {corner!r} names no vertex (vertices 1 to "
                                        f"{vertices} are defined before it; OBJ indices start at 1); {ADVICE}")
                if index < 0 and relative_at is None:
                    relative_at = n
            triangles += len(corners) - 2
    return triangles


def _obj_ear_clipped(text: str) -> tuple[str, int] | None:
    """The OBJ text with every n-gon that trimesh's fan would get wrong split into the triangles
    of ear clipping (``polyfill.ear_clip``, as Blender fills it), or ``None`` when there is none.

    A face of more than three corners whose fan from its first corner is right (every triangle of
    it turns the polygon's way about its Newell normal, as in every convex polygon; tested for all
    faces at once) is left for trimesh; any other is ear-clipped and rewritten as ``f`` statements of three of
    its own corners (``v/vt/vn`` kept), so UVs, normals, groups and objects read as before.
    Continued lines come back joined. Run after ``_obj_census``, which rejects the indices this
    cannot resolve.

    Returns:
        ``(text, polygons rewritten)`` or ``None``.
    """
    from plugins.threed.polyfill import ear_clip

    positions: list[list[float]] = []
    lines: list[str | list[str]] = []
    polygons: dict[int, list[tuple[int, list[int]]]] = {}  # corners -> (line, vertex indices)
    for _, line in _logical_lines(text):
        words = line.split()
        if words and words[0] == "v":
            try:
                positions.append([float(w) for w in words[1:4]][:3] + [np.nan] * (3 - len(words[1:4])))
            except ValueError:
                positions.append([np.nan] * 3)
        elif words and words[0] == "f" and len(words) > 4:
            index = [int(_INDEX.match(c).group()) for c in words[1:]]
            polygons.setdefault(len(index), []).append((len(lines), [i - 1 if i > 0 else len(positions) + i for i in index]))
        lines.append(line)
    if not polygons:
        return None
    points_of = np.array(positions, dtype=np.float64).reshape(-1, 3)
    rewritten = 0
    for group in polygons.values():
        at = np.array([g[0] for g in group])
        points = points_of[np.array([g[1] for g in group])]  # (p, k, 3)
        # the fan is right where each of its triangles turns the polygon's way (Newell's normal)
        nxt = np.roll(points, -1, axis=1)
        normal = np.cross(points, nxt).sum(axis=1)
        turns = np.einsum("pkj,pj->pk", np.cross(points[:, 1:-1] - points[:, :1], points[:, 2:] - points[:, :1]), normal)
        wrong = np.isfinite(points).all(axis=(1, 2)) & (turns <= 0).any(axis=1) & (np.linalg.norm(normal, axis=1) > 0)
        for n in np.flatnonzero(wrong):
            corners = lines[at[n]].split()[1:]
            triangles = ear_clip(points[n])
            lines[at[n]] = "\n".join("f " + " ".join(corners[i] for i in tri) for tri in triangles.tolist())
            rewritten += 1
    return ("\n".join(lines) + "\n", rewritten) if rewritten else None


def _stl_why_no_faces(path: Path) -> str:
    """Why an STL gave trimesh no triangle: a binary file's size against its declared count, or
    an ASCII file without facets."""
    head = path.read_bytes()[:84]
    size = path.stat().st_size
    if head.lstrip().lower().startswith(b"solid") and b"facet" not in path.read_bytes():
        return "an ASCII STL without a single facet"
    if len(head) == 84:
        declared = int.from_bytes(head[80:84], "little")
        if size != 84 + 50 * declared:
            return (f"not an ASCII STL, and as a binary STL its header declares {declared:,} triangles, "
                    f"{84 + 50 * declared:,} bytes, but the file has {size:,}: truncated or not an STL")
    return "neither ASCII facets nor binary triangles were found"


# -- loading ---------------------------------------------------------------------------------


def load_parts(path: Path, scale: float = 1.0, merge_distance_m: float = MERGE_DISTANCE_M) -> list[trimesh.Trimesh]:
    """Load a mesh file (STL, OBJ, PLY, glTF/GLB, OFF) as its separate objects, each welded.

    Parsing is trimesh's loader throughout. Objects a file declares separately (OBJ ``o``
    statements, glTF nodes, the ``solid`` blocks of an ASCII STL) stay separate parts, so two
    objects that touch count as two bodies; OBJ groups (``g``) and materials (``usemtl``) do not
    split an object (Blender's OBJ importer does the same by default), and no ``.mtl`` or texture
    file is read. OBJ n-gons that trimesh's fan would triangulate wrongly (non-convex ones) are
    ear-clipped first, as Blender fills them (``_obj_ear_clipped``; each part's
    ``metadata["ear_clipped_polygons"]`` counts the file's rewritten polygons).

    Args:
        path: the file.
        scale: metres per file unit (STL and OBJ carry no unit: 0.001 for a file in millimetres).
        merge_distance_m: the weld distance in metres (``weld``).

    Returns:
        One ``trimesh.Trimesh`` per object, in metres, with at least one face in all.

    Raises:
        MeshFileError: the file is missing, empty, unreadable or malformed (a face naming no
            vertex, fewer than 3 corners, non-finite coordinates) or has no faces.
    """
    path = Path(path)
    if not path.is_file():
        raise MeshFileError(f"mesh file {path} does not exist")
    if path.stat().st_size == 0:
        raise MeshFileError(f"{path.name} is an empty file (0 bytes); {ADVICE}")
    is_obj = path.suffix.lower() == ".obj"
    expected = _obj_census(path.read_text(errors="replace"), path.name) if is_obj else None
    options = {"split_objects": True, "group_material": False, "skip_materials": True} if is_obj else {}
    clipped = _obj_ear_clipped(path.read_text(errors="replace")) if is_obj else None
    try:
        if clipped is not None:  # n-gons the fan gets wrong, rewritten as ear-clipped triangles
            loaded = trimesh.load(io.BytesIO(clipped[0].encode()), file_type="obj", force="scene", process=False, **options)
        else:
            loaded = trimesh.load(path, force="scene", process=False, **options)
    except Exception as exc:  # noqa: BLE001 - trimesh raises many types for broken files
        raise MeshFileError(f"{path.name} could not be read as a mesh ({type(exc).__name__}: {exc}); {ADVICE}") from None
    parts = [g for g in loaded.dump() if isinstance(g, trimesh.Trimesh) and len(g.faces)]
    if expected is not None and sum(len(p.faces) for p in parts) != expected:
        raise MeshFileError(f"{path.name}: its faces make {expected} triangles but trimesh read "
                            f"{sum(len(p.faces) for p in parts)}; {ADVICE}")
    if not parts:
        why = _stl_why_no_faces(path) if path.suffix.lower() == ".stl" else "is it empty, or only points or lines?"
        raise MeshFileError(f"{path.name} has no faces ({why}); {ADVICE}")
    for part in parts:
        if not np.isfinite(part.vertices).all():
            raise MeshFileError(f"{path.name} has vertices with infinite or NaN coordinates; {ADVICE}")
    for part in parts:
        part.metadata["ear_clipped_polygons"] = clipped[1] if clipped is not None else 0
    return [weld(p.apply_scale(scale) if scale != 1.0 else p, merge_distance_m) for p in parts]


def load_npz(path: Path, merge_distance_m: float = MERGE_DISTANCE_M) -> trimesh.Trimesh:
    """Load a mesh written by the worker's ``mesh_data`` (world coordinates in metres), welded.

    Raises:
        MeshFileError: the file lacks ``vertices`` or ``triangles``, or a triangle names no vertex.
    """
    with np.load(path) as data:
        try:
            vertices, triangles = data["vertices"], data["triangles"]
        except KeyError as exc:
            raise MeshFileError(f"{Path(path).name} has no {exc} array; the worker's export is broken") from None
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(vertices)):
        raise MeshFileError(f"{Path(path).name}: a triangle names a vertex that does not exist")
    return weld(trimesh.Trimesh(vertices=vertices, faces=triangles.reshape(-1, 3), process=False), merge_distance_m)
