// render_progress and ProgressBar's redraw policy.
#include "examples/trainer/progress_bar.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hora {
namespace trainer {

std::string render_progress(const std::string& label, int64_t done, int64_t total, double loss,
                            double samples_per_s, double eta_s, int width) {
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / total) : 1.0;
  const int filled = static_cast<int>(std::lround(fraction * width));
  std::string bar(filled, '#');
  bar.append(width - filled, '-');
  char text[256];
  std::snprintf(text, sizeof(text), "%s [%s] %*lld/%lld loss %.4f %8.0f samples/s  ETA %.1fs",
                label.c_str(), bar.c_str(), static_cast<int>(std::to_string(total).size()),
                static_cast<long long>(done), static_cast<long long>(total), loss, samples_per_s,
                eta_s);
  return text;
}

ProgressBar::ProgressBar(std::FILE* out, std::string label, int64_t total_steps, bool is_tty)
    : out_(out), label_(std::move(label)), total_(total_steps), is_tty_(is_tty) {}

void ProgressBar::update(int64_t done, double loss, int64_t samples_done) {
  const Clock::time_point now = Clock::now();
  if (is_tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(done, loss, samples_done, false);
  } else if (next_quarter_ < 4 && done * 4 >= total_ * next_quarter_) {
    while (next_quarter_ < 4 && done * 4 >= total_ * next_quarter_) ++next_quarter_;
    draw(done, loss, samples_done, false);
  }
}

void ProgressBar::finish(double loss, int64_t samples_done) {
  draw(total_, loss, samples_done, true);
}

void ProgressBar::draw(int64_t done, double loss, int64_t samples_done, bool final_line) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = elapsed > 0 ? samples_done / elapsed : 0.0;
  const double eta = done > 0 ? elapsed * static_cast<double>(total_ - done) / done : 0.0;
  const std::string text = render_progress(label_, done, total_, loss, rate, eta);
  if (is_tty_) {
    std::fprintf(out_, "\r%s%s", text.c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

}  // namespace trainer
}  // namespace hora
