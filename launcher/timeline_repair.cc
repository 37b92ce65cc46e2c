#include "launcher/timeline_repair.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace hora {
namespace launcher {
namespace {

constexpr char kClosing[] = "\n]\n";
constexpr char kEmpty[] = "[\n]\n";

Status io_error(const std::string& path, const char* what) {
  return Status::io("timeline '" + path + "': cannot " + what + ": " + std::strerror(errno));
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// One line of the tail, [begin, end) without its newline and surrounding blanks.
struct Line {
  size_t begin = 0, end = 0;
};

// Where the array can be closed again: after the "[" line or after the last complete event.
struct Cut {
  bool found = false;
  size_t at = 0;             // offset in the tail just past "[" or the event's "}"
  bool event_comma = false;  // more than the event on its line ("," or ",]": the next was cut)
  bool closed = false;       // a "]" line follows it, with nothing cut between
  size_t torn_bytes = 0;     // bytes of the lines dropped after it
};

Line trim(const std::string& s, size_t begin, size_t end) {
  while (begin < end && is_space(s[begin])) ++begin;
  while (end > begin && is_space(s[end - 1])) --end;
  return {begin, end};
}

// The length of the complete JSON object that `text` starts with ("{...}" and what follows it
// on the line: "," or, in a write cut just after its first byte, ",]"), 0 when there is none.
size_t leading_object(const std::string& text) {
  if (text.empty() || text[0] != '{') return 0;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return nlohmann::json::accept(text.substr(0, i + 1)) ? i + 1 : 0;
    }
  }
  return 0;
}

// Walks the tail's lines from the end (skipping the first, partial line when the tail does
// not start the file) to the last "[" line or complete event.
Cut find_cut(const std::string& tail, bool starts_file) {
  Cut cut;
  bool seen_close = false;
  size_t line_end = tail.size();
  while (line_end > 0) {
    const size_t nl = tail.rfind('\n', line_end - 1);
    const size_t line_begin = nl == std::string::npos ? 0 : nl + 1;
    if (line_begin == 0 && !starts_file) break;
    const Line line = trim(tail, line_begin, line_end);
    const std::string text = tail.substr(line.begin, line.end - line.begin);
    line_end = line_begin == 0 ? 0 : line_begin - 1;
    if (text.empty()) continue;
    if (text == "]" && !seen_close && cut.torn_bytes == 0) {
      seen_close = true;
      continue;
    }
    if (text == "[") {
      cut = {true, line.end, false, seen_close, cut.torn_bytes};
      return cut;
    }
    const size_t event = leading_object(text);
    if (event > 0) {
      const std::string rest = text.substr(event);
      cut = {true, line.begin + event, rest != "", seen_close, cut.torn_bytes + rest.size()};
      if (rest == ",") cut.torn_bytes -= 1;  // the comma before an event that was lost whole
      return cut;
    }
    cut.torn_bytes += text.size();
  }
  return cut;
}

bool pwrite_all(int fd, const char* data, size_t size, off_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool pread_all(int fd, std::string* out, off_t offset) {
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n =
        ::pread(fd, &(*out)[done], out->size() - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

StatusOr<TimelineRepair> repair_timeline(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() < 0) return io_error(path, "open it");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return io_error(path, "stat it");
  TimelineRepair result;
  if (st.st_size == 0) {  // the rank died between creating the file and its first "[\n]\n"
    if (!pwrite_all(fd.get(), kEmpty, sizeof(kEmpty) - 1, 0)) return io_error(path, "write it");
    result.repaired = true;
    return result;
  }
  const off_t tail_start = std::max<off_t>(0, st.st_size - kMaxTailBytes);
  std::string tail(static_cast<size_t>(st.st_size - tail_start), '\0');
  if (!pread_all(fd.get(), &tail, tail_start)) return io_error(path, "read it");
  const Cut cut = find_cut(tail, tail_start == 0);
  if (!cut.found)
    return Status::invalid_argument("timeline '" + path + "': not a hora timeline (no \"[\" line " +
                                    "or complete event in its last " + std::to_string(tail.size()) +
                                    " bytes); left as it is");
  if (cut.closed && !cut.event_comma && cut.torn_bytes == 0) return result;
  const off_t at = tail_start + static_cast<off_t>(cut.at);
  if (!pwrite_all(fd.get(), kClosing, sizeof(kClosing) - 1, at)) return io_error(path, "write it");
  if (::ftruncate(fd.get(), at + static_cast<off_t>(sizeof(kClosing) - 1)) != 0)
    return io_error(path, "truncate it");
  result.repaired = true;
  result.dropped_bytes = static_cast<int64_t>(cut.torn_bytes);
  return result;
}

}  // namespace launcher
}  // namespace hora
