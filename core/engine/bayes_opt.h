// BayesianOptimizer: a Gaussian process over the unit cube with expected improvement, the
// autotuner's choice of the next configuration to try (parameter_manager.h).
//
// The model: scores y_i at points x_i in [0,1]^d, standardised (mean 0, deviation 1); a squared
// exponential kernel k(a,b) = exp(-|a-b|^2 / (2 l^2)) plus `noise` on the diagonal (window
// medians of a training step still vary from one sample to the next). The posterior mean and
// variance at x come from one Cholesky factor of K (a few dozen points: solved by hand).
// suggest() returns the point of largest expected improvement over the best score seen,
// EI(x) = (mu - best - xi) Phi(z) + sigma phi(z), z = (mu - best - xi) / sigma, searched over a
// fixed pseudo-random set of candidates plus small moves around the best point so far:
// deterministic for the same samples.
//
// A plain value; single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hora {
namespace engine {

class GaussianProcess {
 public:
  GaussianProcess(double length_scale, double noise) : length_(length_scale), noise_(noise) {}
  // Fits the model to `x` (each of the same dimension) and `y`. REQUIRES: same sizes, >= 1.
  // Returns false when the kernel matrix is not positive definite (then predict gives the
  // prior).
  bool fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y);
  // Posterior mean and standard deviation at `at`, in the units of y.
  void predict(const std::vector<double>& at, double* mean, double* stddev) const;

 private:
  double kernel(const std::vector<double>& a, const std::vector<double>& b) const;

  double length_;
  double noise_;
  std::vector<std::vector<double>> x_;
  double y_mean_ = 0;
  double y_scale_ = 1;
  std::vector<double> l_;      // lower Cholesky factor of K, row-major n x n
  std::vector<double> alpha_;  // K^-1 (y - mean) / scale
  bool fitted_ = false;
};

// Expected improvement of a prediction over `best` (maximising), with exploration margin xi.
double expected_improvement(double mean, double stddev, double best, double xi);

class BayesianOptimizer {
 public:
  // `dimensions` >= 1. `seed` fixes the candidate set.
  explicit BayesianOptimizer(int dimensions, uint64_t seed = 0x686f7261);

  void add_sample(const std::vector<double>& x, double score);
  // The next point to try: the candidate of largest expected improvement (a fixed
  // pseudo-random point while fewer than two samples exist).
  std::vector<double> suggest();
  // The index of the sample with the best score. REQUIRES: a sample was added.
  size_t best_index() const;
  // The index of the sample whose posterior mean is best: the model's view of the samples,
  // which discounts a score that its neighbours do not bear out (one lucky measurement).
  // REQUIRES: a sample was added.
  size_t best_mean_index() const;
  const std::vector<std::vector<double>>& xs() const { return xs_; }
  const std::vector<double>& scores() const { return ys_; }
  int dimensions() const { return dims_; }

  // Model settings (unit-cube length scale, noise relative to the standardised scores, EI's
  // margin, candidates searched per suggestion).
  static constexpr double kLengthScale = 0.25;
  static constexpr double kNoise = 0.05;
  static constexpr double kXi = 0.01;
  static constexpr int kCandidates = 2000;

 private:
  double uniform();  // [0, 1), xorshift64*
  std::vector<double> random_point();

  int dims_;
  uint64_t state_;
  std::vector<std::vector<double>> xs_;
  std::vector<double> ys_;
};

}  // namespace engine
}  // namespace hora
