"""Faces of one mesh that cross each other (self-intersections), with numpy and scipy only.

Candidate pairs are triangles whose axis-aligned boxes overlap, found on a uniform grid (cells
the size of a typical triangle; each triangle in every cell its box touches); pairs sharing a
vertex are left out (neighbours touch by construction). A candidate pair crosses when an edge of either
triangle passes through the other's interior (Möller-Trumbore), which holds for any two
non-coplanar triangles that intersect: the ends of their common segment lie on their edges.
Coplanar overlaps and mere touching (a corner on the other face) are not counted.
"""

from __future__ import annotations

import numpy as np

#: Candidate pairs tested per batch (bounds the memory: about 1 KB per pair).
BATCH = 200_000

#: Most triangle pairs sharing a grid cell the broad phase takes on (about 10 s): a dense fan (a
#: cylinder cap of thousands of segments) puts every one of its triangles' boxes over its centre.
MAX_CELL_PAIRS = 20_000_000


class TooManyPairs(ValueError):
    """The broad phase would compare more than ``MAX_CELL_PAIRS`` pairs; the message says how many."""


def _pairs_within_groups(keys: np.ndarray, items: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of ``items`` that share a key (each pair once per shared key), as two arrays.

    Raises:
        TooManyPairs: there would be more than ``limit``.
    """
    order = np.argsort(keys, kind="stable")
    keys, items = keys[order], items[order]
    starts = np.r_[0, np.flatnonzero(np.diff(keys)) + 1]
    sizes = np.diff(np.r_[starts, len(keys)])
    total = int((sizes * (sizes - 1) // 2).sum())
    if total > limit:
        raise TooManyPairs(f"{total:,} triangle pairs sharing grid cells (more than {limit:,}; the largest cell holds "
                           f"{int(sizes.max()):,} triangles, as a dense fan's centre does)")
    end = np.repeat(starts + sizes, sizes)  # one past each entry's group
    counts = end - np.arange(len(keys)) - 1  # later entries of the same group
    first = np.repeat(np.arange(len(keys)), counts)
    second = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + first + 1
    return items[first], items[second]


def candidate_pairs(triangles: np.ndarray, limit: int = MAX_CELL_PAIRS) -> np.ndarray:
    """(p, 2) indices ``i < j`` of triangles whose bounding boxes overlap.

    Broad phase on a uniform grid whose cell is the median of the triangles' longest box sides:
    each triangle is entered in every cell its box touches, pairs come from shared cells, and the
    boxes themselves filter them.

    Raises:
        TooManyPairs: more than ``limit`` pairs share cells.
    """
    lo, hi = triangles.min(axis=1), triangles.max(axis=1)
    cell = float(np.median((hi - lo).max(axis=1)))
    if not cell > 0:
        cell = float((hi.max(axis=0) - lo.min(axis=0)).max()) or 1.0
    origin = lo.min(axis=0)
    first_cell = np.floor((lo - origin) / cell).astype(np.int64)
    last_cell = np.floor((hi - origin) / cell).astype(np.int64)
    span = last_cell - first_cell + 1
    per = span.prod(axis=1)
    owner = np.repeat(np.arange(len(triangles)), per)
    # the k-th cell of a triangle's box, as offsets along x, y, z
    k = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
    sy, sz = span[owner, 1], span[owner, 2]
    offset = np.stack([k // (sy * sz), (k // sz) % sy, k % sz], axis=1)
    cells = first_cell[owner] + offset
    dims = last_cell.max(axis=0) + 1
    keys = (cells[:, 0] * dims[1] + cells[:, 1]) * dims[2] + cells[:, 2]
    a, b = _pairs_within_groups(keys, owner, limit)
    a, b = np.minimum(a, b), np.maximum(a, b)
    unique = np.unique(a * len(triangles) + b)
    a, b = unique // len(triangles), unique % len(triangles)
    keep = a != b
    for axis in range(3):
        keep &= (lo[a, axis] <= hi[b, axis]) & (lo[b, axis] <= hi[a, axis])
    return np.stack([a[keep], b[keep]], axis=1)


def _edge_crosses(seg_a: np.ndarray, seg_b: np.ndarray, tri: np.ndarray, eps: float) -> np.ndarray:
    """Whether each segment (a -> b) passes through the interior of its triangle (Möller-Trumbore)."""
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    d = seg_b - seg_a
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > eps * np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1) * np.linalg.norm(d, axis=1)
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = seg_a - tri[:, 0]
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = np.einsum("ij,ij->i", d, q) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    return ok & (u > eps) & (v > eps) & (u + v < 1 - eps) & (t > eps) & (t < 1 - eps)


def crossing_pairs(vertices: np.ndarray, faces: np.ndarray, eps: float = 1e-9) -> np.ndarray:
    """(p, 2) face indices ``i < j`` of the triangles that cross each other.

    Args:
        vertices: (n, 3) positions.
        faces: (m, 3) vertex indices.
        eps: relative tolerance: a crossing within it of an edge or corner is touching, not crossing.

    Raises:
        TooManyPairs: the broad phase would take on more than ``MAX_CELL_PAIRS`` pairs.
    """
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    triangles = np.asarray(vertices, dtype=np.float64)[faces]
    if len(faces) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = candidate_pairs(triangles)
    shared = (faces[pairs[:, 0]][:, :, None] == faces[pairs[:, 1]][:, None, :]).any(axis=(1, 2))
    pairs = pairs[~shared]
    found = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start:start + BATCH]
        ta, tb = triangles[chunk[:, 0]], triangles[chunk[:, 1]]
        hit = np.zeros(len(chunk), dtype=bool)
        for k in range(3):
            hit |= _edge_crosses(ta[:, k], ta[:, (k + 1) % 3], tb, eps)
            hit |= _edge_crosses(tb[:, k], tb[:, (k + 1) % 3], ta, eps)
        found.append(chunk[hit])
    return np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
