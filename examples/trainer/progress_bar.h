// ProgressBar: one epoch's progress on a terminal line: step, loss, samples/s and ETA.
//
//   epoch 2/5 [##########----------]  64/128 loss 0.4123  35210 samples/s  ETA 1.2s
//
// On a terminal the line is redrawn in place (carriage return) at most every 100 ms; when the
// output is a pipe (horarun tags whole lines) it prints a few whole lines per epoch instead
// (at each quarter). One thread; the FILE belongs to the caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hora {
namespace trainer {

// The bar's text for `done` of `total` steps (no line ending).
std::string render_progress(const std::string& label, int64_t done, int64_t total, double loss,
                            double samples_per_s, double eta_s, int width = 20);

class ProgressBar {
 public:
  // is_tty: redraw in place (true) or print whole lines at quarters (false).
  ProgressBar(std::FILE* out, std::string label, int64_t total_steps, bool is_tty);

  // After step `done` (1-based) with the running mean loss; samples counts every rank's.
  void update(int64_t done, double loss, int64_t samples_done);
  // Ends the bar's line (on a terminal: the final redraw plus a newline).
  void finish(double loss, int64_t samples_done);

 private:
  using Clock = std::chrono::steady_clock;
  void draw(int64_t done, double loss, int64_t samples_done, bool final_line);

  std::FILE* out_;
  std::string label_;
  int64_t total_;
  bool is_tty_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_draw_{};
  int next_quarter_ = 1;
};

}  // namespace trainer
}  // namespace hora
