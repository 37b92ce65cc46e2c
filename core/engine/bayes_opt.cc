#include "core/engine/bayes_opt.h"

#include <algorithm>
#include <cmath>

namespace hora {
namespace engine {
namespace {

// Solves L z = b in place (L lower triangular, row-major n x n).
void forward_solve(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = 0; i < n; ++i) {
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= l[i * n + k] * b[k];
    b[i] = s / l[i * n + i];
  }
}

// Solves L^T z = b in place.
void backward_solve(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
    b[i] = s / l[i * n + i];
  }
}

// Cholesky factor of the symmetric n x n matrix `a` (row-major) into `l`; false when `a` is
// not positive definite.
bool cholesky(const std::vector<double>& a, size_t n, std::vector<double>& l) {
  l.assign(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double s = a[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= l[i * n + k] * l[j * n + k];
      if (i == j) {
        if (s <= 0) return false;
        l[i * n + i] = std::sqrt(s);
      } else {
        l[i * n + j] = s / l[j * n + j];
      }
    }
  }
  return true;
}

}  // namespace

double GaussianProcess::kernel(const std::vector<double>& a, const std::vector<double>& b) const {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-d2 / (2 * length_ * length_));
}

bool GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  const size_t n = y.size();
  x_ = x;
  y_mean_ = 0;
  for (double v : y) y_mean_ += v;
  y_mean_ /= static_cast<double>(n);
  double var = 0;
  for (double v : y) var += (v - y_mean_) * (v - y_mean_);
  y_scale_ = n > 1 && var > 0 ? std::sqrt(var / static_cast<double>(n)) : 1.0;
  std::vector<double> k(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) k[i * n + j] = kernel(x[i], x[j]) + (i == j ? noise_ : 0.0);
  fitted_ = cholesky(k, n, l_);
  if (!fitted_) return false;
  alpha_.resize(n);
  for (size_t i = 0; i < n; ++i) alpha_[i] = (y[i] - y_mean_) / y_scale_;
  forward_solve(l_, n, alpha_);
  backward_solve(l_, n, alpha_);
  return true;
}

void GaussianProcess::predict(const std::vector<double>& at, double* mean, double* stddev) const {
  if (!fitted_) {
    *mean = y_mean_;
    *stddev = y_scale_;
    return;
  }
  const size_t n = x_.size();
  std::vector<double> ks(n);
  double mu = 0;
  for (size_t i = 0; i < n; ++i) {
    ks[i] = kernel(at, x_[i]);
    mu += ks[i] * alpha_[i];
  }
  forward_solve(l_, n, ks);  // v = L^-1 k*: var = k(x,x) - v.v
  double var = 1.0;
  for (double v : ks) var -= v * v;
  *mean = y_mean_ + mu * y_scale_;
  *stddev = std::sqrt(std::max(var, 1e-12)) * y_scale_;
}

double expected_improvement(double mean, double stddev, double best, double xi) {
  if (stddev <= 0) return std::max(mean - best - xi, 0.0);
  const double gain = mean - best - xi;
  const double z = gain / stddev;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
  return gain * cdf + stddev * pdf;
}

BayesianOptimizer::BayesianOptimizer(int dimensions, uint64_t seed)
    : dims_(std::max(dimensions, 1)), state_(seed == 0 ? 1 : seed) {}

double BayesianOptimizer::uniform() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return static_cast<double>((state_ * 0x2545F4914F6CDD1DULL) >> 11) * 0x1.0p-53;
}

std::vector<double> BayesianOptimizer::random_point() {
  std::vector<double> p(static_cast<size_t>(dims_));
  for (double& v : p) v = uniform();
  return p;
}

void BayesianOptimizer::add_sample(const std::vector<double>& x, double score) {
  xs_.push_back(x);
  ys_.push_back(score);
}

size_t BayesianOptimizer::best_index() const {
  return static_cast<size_t>(std::max_element(ys_.begin(), ys_.end()) - ys_.begin());
}

size_t BayesianOptimizer::best_mean_index() const {
  GaussianProcess gp(kLengthScale, kNoise);
  if (ys_.size() < 2 || !gp.fit(xs_, ys_)) return best_index();
  size_t best = 0;
  double best_mu = 0;
  for (size_t i = 0; i < xs_.size(); ++i) {
    double mu = 0, sd = 0;
    gp.predict(xs_[i], &mu, &sd);
    if (i == 0 || mu > best_mu) {
      best = i;
      best_mu = mu;
    }
  }
  return best;
}

std::vector<double> BayesianOptimizer::suggest() {
  if (ys_.size() < 2) return random_point();
  GaussianProcess gp(kLengthScale, kNoise);
  gp.fit(xs_, ys_);
  const std::vector<double>& best_x = xs_[best_index()];
  double best_mu = 0, best_sd = 0;
  gp.predict(best_x, &best_mu, &best_sd);  // the incumbent as the model sees it (noise-aware)
  double scale = 0;
  for (double y : ys_) scale = std::max(scale, std::fabs(y));
  const double xi = kXi * (scale > 0 ? scale : 1.0);
  std::vector<double> chosen = random_point();
  double chosen_ei = -1;
  for (int c = 0; c < kCandidates; ++c) {
    std::vector<double> p = random_point();
    if (c % 4 == 0) {  // a quarter of the candidates are small moves around the best point
      for (size_t d = 0; d < p.size(); ++d)
        p[d] = std::clamp(best_x[d] + (p[d] - 0.5) * 0.2, 0.0, 1.0);
    }
    double mu = 0, sd = 0;
    gp.predict(p, &mu, &sd);
    const double ei = expected_improvement(mu, sd, best_mu, xi);
    if (ei > chosen_ei) {
      chosen_ei = ei;
      chosen = std::move(p);
    }
  }
  return chosen;
}

}  // namespace engine
}  // namespace hora
