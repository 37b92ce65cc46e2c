// A float64 reference of Adasum (Maleki et al., MLSys 2021), written from the paper's rule
// independently of kernels/adasum: the pairwise rule and the tree hora's adasum allreduce
// reduces along (collectives/algorithms/adasum.cc's file comment). Header-only; tests only.
#pragma once

#include <cstddef>
#include <vector>

namespace hora {
namespace test_support {

using Vec = std::vector<double>;

// (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b; a zero vector's coefficient is 1.
inline Vec adasum_pair(const Vec& a, const Vec& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double ca = aa > 0 ? 1 - ab / (2 * aa) : 1;
  const double cb = bb > 0 ? 1 - ab / (2 * bb) : 1;
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}

// The n ranks' vectors reduced along hora's tree: with p the largest power of two <= n and
// extra = n - p, pairs (x_{2i}, x_{2i+1}) for i < extra are combined first into one leaf
// each, then the p leaves pairwise level by level: ((l0 l1)(l2 l3))...
inline Vec adasum_tree(const std::vector<Vec>& xs) {
  const size_t n = xs.size();
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  const size_t extra = n - p;
  std::vector<Vec> level;
  for (size_t i = 0; i < extra; ++i) level.push_back(adasum_pair(xs[2 * i], xs[2 * i + 1]));
  for (size_t r = 2 * extra; r < n; ++r) level.push_back(xs[r]);
  while (level.size() > 1) {
    std::vector<Vec> next;
    for (size_t i = 0; i < level.size(); i += 2)
      next.push_back(adasum_pair(level[i], level[i + 1]));
    level.swap(next);
  }
  return level.front();
}

}  // namespace test_support
}  // namespace hora
