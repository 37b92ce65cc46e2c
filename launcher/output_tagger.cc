#include "launcher/output_tagger.h"

#include <cstring>
#include <utility>

namespace hora {
namespace launcher {

OutputTagger::OutputTagger(int rank, StreamKind kind, LineSink sink, size_t max_line_bytes)
    : prefix_("[" + std::to_string(rank) + "]" +
              (kind == StreamKind::kStdout ? "<stdout>: " : "<stderr>: ")),
      sink_(std::move(sink)),
      max_line_bytes_(max_line_bytes > 0 ? max_line_bytes : 1) {}

void OutputTagger::emit(const char* data, size_t bytes) {
  std::string line;
  line.reserve(prefix_.size() + bytes + 1);
  line += prefix_;
  line.append(data, bytes);
  line += '\n';
  sink_(line);
}

void OutputTagger::feed(const char* data, size_t bytes) {
  if (bytes > 0 && after_cut_) {
    after_cut_ = false;
    // The newline that ends a line cut exactly at the cap belongs to that line.
    if (data[0] == '\n') {
      ++data;
      --bytes;
    }
  }
  while (bytes > 0) {
    const void* nl = std::memchr(data, '\n', bytes);
    const size_t upto = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : bytes;
    // Take at most what keeps pending_ within max_line_bytes_.
    const size_t room = max_line_bytes_ - pending_.size();
    if (upto >= room) {
      // The line reaches the cap (with or without a newline further on): emit a full piece.
      pending_.append(data, room);
      emit(pending_.data(), pending_.size());
      pending_.clear();
      data += room;
      bytes -= room;
      if (bytes == 0) {
        after_cut_ = true;
      } else if (data[0] == '\n') {
        // The newline right after a full piece ends that line: don't emit an empty one.
        ++data;
        --bytes;
      }
      continue;
    }
    if (!nl) {
      pending_.append(data, bytes);
      return;
    }
    pending_.append(data, upto);
    emit(pending_.data(), pending_.size());
    pending_.clear();
    data += upto + 1;
    bytes -= upto + 1;
  }
}

void OutputTagger::finish() {
  after_cut_ = false;
  if (pending_.empty()) return;
  emit(pending_.data(), pending_.size());
  pending_.clear();
}

}  // namespace launcher
}  // namespace hora
