"""Faces of one mesh that cross each other (self-intersections), with numpy and scipy only.

Candidate pairs are triangles whose axis-aligned boxes overlap, found by sweep and prune along the
longest axis (boxes sorted by their low end; each triangle is paired with the ones whose low end
falls inside its own box on that axis, then the other two axes filter); pairs sharing a vertex are
left out (neighbours touch by construction). A candidate pair crosses when an edge of either
triangle passes through the other's interior (Möller-Trumbore), which holds for any two
non-coplanar triangles that intersect: the ends of their common segment lie on their edges.
Coplanar overlaps and mere touching (a corner on the other face) are not counted.
"""

from __future__ import annotations

import numpy as np

#: Candidate pairs tested per batch (bounds the memory: about 1 KB per pair).
BATCH = 200_000


def candidate_pairs(triangles: np.ndarray) -> np.ndarray:
    """(p, 2) indices ``i < j`` of triangles whose bounding boxes overlap."""
    lo, hi = triangles.min(axis=1), triangles.max(axis=1)
    axis = int(np.argmax(hi.max(axis=0) - lo.min(axis=0)))
    order = np.argsort(lo[:, axis], kind="stable")
    starts = lo[order, axis]
    ends = np.searchsorted(starts, hi[order, axis], side="right")  # boxes starting before mine ends
    counts = ends - np.arange(len(order)) - 1
    first = np.repeat(np.arange(len(order)), counts)
    second = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + first + 1
    a, b = order[first], order[second]
    keep = np.ones(len(a), dtype=bool)
    for other in {0, 1, 2} - {axis}:
        keep &= (lo[a, other] <= hi[b, other]) & (lo[b, other] <= hi[a, other])
    pairs = np.stack([a[keep], b[keep]], axis=1)
    return np.sort(pairs, axis=1)


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
