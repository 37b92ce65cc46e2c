"""A NumPy reference of Adasum (Maleki et al., MLSys 2021), written from the paper's rule: the
pairwise combination and the tree hora reduces along (docs/adasum.md): with p the largest
power of two <= n and extra = n - p, pairs (x0, x1), (x2, x3), ... for the first extra pairs
are combined first, then the p leaves pairwise, level by level."""

import numpy as np


def adasum_pair(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    ab, aa, bb = a @ b, a @ a, b @ b
    ca = 1.0 - ab / (2.0 * aa) if aa > 0 else 1.0
    cb = 1.0 - ab / (2.0 * bb) if bb > 0 else 1.0
    return ca * a + cb * b


def adasum_tree(vectors):
    n = len(vectors)
    p = 1
    while p * 2 <= n:
        p *= 2
    extra = n - p
    level = [adasum_pair(vectors[2 * i], vectors[2 * i + 1]) for i in range(extra)]
    level += [np.asarray(v, np.float64).ravel() for v in vectors[2 * extra :]]
    while len(level) > 1:
        level = [adasum_pair(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]
