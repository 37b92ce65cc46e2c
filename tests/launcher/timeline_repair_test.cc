// repair_timeline: a timeline cut at every byte of its last write is repaired into a JSON array
// of the events written before the cut; a closed timeline, or a file that is not a timeline,
// is left as it is.
#include "launcher/timeline_repair.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace hora {
namespace launcher {
namespace {

class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/hora_timeline_repair_XXXXXX";
    const int fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    ::close(fd);
    path_ = name;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  void write(const std::string& text) const { std::ofstream(path_, std::ios::binary) << text; }
  std::string read() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string path_;
};

std::string event(int i) {
  return nlohmann::json({{"name", "ALLREDUCE"},
                         {"ph", "X"},
                         {"tid", i},
                         {"args", {{"shape", "[16, 4]"}, {"tensors", "{" + std::to_string(i)}}}})
      .dump();
}

// The text one write of the timeline puts where the closing "\n]\n" was (core/engine/timeline.cc).
std::string write_text(int first, int count, bool file_empty) {
  std::string text;
  for (int i = first; i < first + count; ++i)
    text += (file_empty && i == first ? "\n" : ",\n") + event(i);
  return text + "\n]\n";
}

// The file after the write of `text` over `before`'s closing stopped after `written` bytes.
std::string torn(const std::string& before, const std::string& text, size_t written) {
  const size_t at = before.size() - 3;
  std::string file = before.substr(0, at) + text.substr(0, written);
  if (file.size() < before.size()) file += before.substr(file.size());
  return file;
}

// Repairs every cut of one write and checks the result is the array of the whole events.
void expect_every_cut_repairs(const std::string& before, const std::string& text, int events_before,
                              int events_written) {
  TempFile f;
  for (size_t written = 0; written <= text.size(); ++written) {
    const std::string file = torn(before, text, written);
    f.write(file);
    auto r = repair_timeline(f.path());
    ASSERT_TRUE(r.ok()) << "cut after " << written << ": " << r.status().to_string();
    const std::string after = f.read();
    ASSERT_TRUE(nlohmann::json::accept(after)) << "cut after " << written << ":\n" << after;
    const nlohmann::json events = nlohmann::json::parse(after);
    ASSERT_TRUE(events.is_array());
    ASSERT_GE(static_cast<int>(events.size()), events_before) << written;
    ASSERT_LE(static_cast<int>(events.size()), events_before + events_written) << written;
    for (size_t i = 0; i < events.size(); ++i)
      EXPECT_EQ(events[i].dump(), event(static_cast<int>(i))) << written;
    if (written == text.size()) {
      EXPECT_FALSE(r.value().repaired) << "a whole write is valid";
    }
    if (nlohmann::json::accept(file)) {
      EXPECT_EQ(after, file) << "a valid file is left as it is";
    }
  }
}

TEST(TimelineRepair, EveryCutOfAWriteAfterEventsRepairs) {
  const std::string before = "[" + write_text(0, 2, true);
  expect_every_cut_repairs(before, write_text(2, 3, false), 2, 3);
}

TEST(TimelineRepair, EveryCutOfTheFirstWriteRepairs) {
  expect_every_cut_repairs("[\n]\n", write_text(0, 3, true), 0, 3);
}

TEST(TimelineRepair, ClosedTimelineIsUntouched) {
  TempFile f;
  const std::string file = "[" + write_text(0, 4, true);
  f.write(file);
  auto r = repair_timeline(f.path());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r.value().repaired);
  EXPECT_EQ(f.read(), file);
}

TEST(TimelineRepair, CutEventIsCountedAsDropped) {
  TempFile f;
  f.write("[\n" + event(0) + ",\n" + event(1).substr(0, 10));
  auto r = repair_timeline(f.path());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r.value().repaired);
  EXPECT_EQ(r.value().dropped_bytes, 10);
  EXPECT_EQ(f.read(), "[\n" + event(0) + "\n]\n");
}

TEST(TimelineRepair, EmptyFileBecomesAnEmptyArray) {
  TempFile f;
  auto r = repair_timeline(f.path());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r.value().repaired);
  EXPECT_EQ(f.read(), "[\n]\n");
}

TEST(TimelineRepair, LongTimelineIsRepairedFromItsTail) {
  TempFile f;
  std::string file = "[" + write_text(0, 1, true);
  while (file.size() < 3 * static_cast<size_t>(kMaxTailBytes)) {
    const int n = static_cast<int>(nlohmann::json::parse(file).size());
    file = file.substr(0, file.size() - 3) + write_text(n, 2000, false);
  }
  const size_t events = nlohmann::json::parse(file).size();
  f.write(torn(file, write_text(static_cast<int>(events), 5, false), 300));
  auto r = repair_timeline(f.path());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r.value().repaired);
  const nlohmann::json repaired = nlohmann::json::parse(f.read());
  EXPECT_GE(repaired.size(), events);
}

TEST(TimelineRepair, OtherFileIsLeftAndNamed) {
  TempFile f;
  f.write("not a trace\nat all");
  auto r = repair_timeline(f.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(f.path()), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("not a hora timeline"), std::string::npos);
  EXPECT_EQ(f.read(), "not a trace\nat all");
}

TEST(TimelineRepair, MissingFileIsAnErrorNamingIt) {
  auto r = repair_timeline("/nonexistent/dir/trace.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/dir/trace.json"), std::string::npos);
}

}  // namespace
}  // namespace launcher
}  // namespace hora
