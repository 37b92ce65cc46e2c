#include "launcher/output_tagger.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hora {
namespace launcher {
namespace {

struct Collector {
  std::vector<std::string> lines;
  OutputTagger::LineSink sink() {
    return [this](const std::string& l) { lines.push_back(l); };
  }
};

TEST(OutputTagger, TagsCompleteLines) {
  Collector c;
  OutputTagger t(3, StreamKind::kStdout, c.sink());
  const std::string text = "one\ntwo\n\n";
  t.feed(text.data(), text.size());
  EXPECT_EQ(c.lines, (std::vector<std::string>{"[3]<stdout>: one\n", "[3]<stdout>: two\n",
                                               "[3]<stdout>: \n"}));
  EXPECT_EQ(t.pending_bytes(), 0u);
}

TEST(OutputTagger, HoldsPartialLinesUntilTheirNewline) {
  Collector c;
  OutputTagger t(0, StreamKind::kStderr, c.sink());
  t.feed("hel", 3);
  EXPECT_TRUE(c.lines.empty());
  t.feed("lo wo", 5);
  EXPECT_TRUE(c.lines.empty());
  t.feed("rld\nnext", 8);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"[0]<stderr>: hello world\n"}));
  EXPECT_EQ(t.pending_bytes(), 4u);
  t.finish();
  EXPECT_EQ(c.lines.back(), "[0]<stderr>: next\n");
  t.finish();  // idempotent
  EXPECT_EQ(c.lines.size(), 2u);
}

TEST(OutputTagger, FeedsByteByByte) {
  Collector c;
  OutputTagger t(12, StreamKind::kStdout, c.sink());
  const std::string text = "a\r\nbc\n";
  for (char ch : text) t.feed(&ch, 1);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"[12]<stdout>: a\r\n", "[12]<stdout>: bc\n"}));
}

TEST(OutputTagger, SplitsLongLinesAtTheCap) {
  Collector c;
  OutputTagger t(1, StreamKind::kStdout, c.sink(), 4);
  const std::string text = "abcdefghij\nxy\n";
  t.feed(text.data(), text.size());
  EXPECT_EQ(c.lines, (std::vector<std::string>{"[1]<stdout>: abcd\n", "[1]<stdout>: efgh\n",
                                               "[1]<stdout>: ij\n", "[1]<stdout>: xy\n"}));
}

TEST(OutputTagger, LineOfExactlyTheCapIsOneLine) {
  Collector c;
  OutputTagger t(1, StreamKind::kStdout, c.sink(), 4);
  t.feed("abcd\n", 5);
  t.feed("wxyz", 4);  // the newline comes in the next read
  t.feed("\nq\n", 3);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"[1]<stdout>: abcd\n", "[1]<stdout>: wxyz\n",
                                               "[1]<stdout>: q\n"}));
}

TEST(OutputTagger, BoundsMemoryWithoutNewlines) {
  Collector c;
  OutputTagger t(0, StreamKind::kStdout, c.sink(), 1024);
  const std::string chunk(1000, 'x');
  for (int i = 0; i < 100; ++i) t.feed(chunk.data(), chunk.size());
  EXPECT_LT(t.pending_bytes(), 1024u);
  t.finish();
  size_t total = 0;
  for (const std::string& l : c.lines) {
    ASSERT_EQ(l.rfind("[0]<stdout>: ", 0), 0u);
    total += l.size() - std::string("[0]<stdout>: ").size() - 1;
  }
  EXPECT_EQ(total, 100000u);
}

}  // namespace
}  // namespace launcher
}  // namespace hora
