// OutputTagger: turns the byte stream of one rank's stdout or stderr into whole tagged lines,
// "[R]<stdout>: text\n". Bytes arrive in arbitrary pieces (pipe reads); a line is emitted only
// once its newline has arrived, so lines of different ranks never interleave mid-line. A
// line longer than max_line_bytes is emitted in pieces of that size, each tagged, so a rank
// that never writes a newline cannot grow the buffer without bound. finish() emits a trailing
// partial line (with a newline added) at EOF.
//
// One object per stream; not thread-safe (the supervisor's loop owns it).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace hora {
namespace launcher {

enum class StreamKind { kStdout, kStderr };

class OutputTagger {
 public:
  // Receives one complete tagged line, newline included.
  using LineSink = std::function<void(const std::string& tagged_line)>;

  OutputTagger(int rank, StreamKind kind, LineSink sink, size_t max_line_bytes = 64 * 1024);

  // Appends `bytes` bytes; emits every line they complete.
  void feed(const char* data, size_t bytes);
  // Emits the pending partial line, if any. Idempotent.
  void finish();
  // Bytes held back waiting for a newline.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  void emit(const char* data, size_t bytes);

  std::string prefix_;
  LineSink sink_;
  size_t max_line_bytes_;
  std::string pending_;
  bool after_cut_ = false;  // the last feed ended exactly at a cut of a long line
};

}  // namespace launcher
}  // namespace hora
