// horarun and the timeline of a failed job: a rank 0 killed in the middle of writing
// HORA_TIMELINE leaves a cut array, which horarun closes after the last complete event; a
// closed timeline is left as it is.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "tests/launcher/process_harness.h"

namespace hora {
namespace launcher_test {
namespace {

// Rank 0 writes `text` to the timeline and kills itself; rank 1 waits to be torn down.
std::string rank_script(const std::string& text) {
  return "if [ \"$HORA_RANK\" = 0 ]; then printf '" + text +
         "' > \"$HORA_TIMELINE\"; kill -KILL $$; fi; exec sleep 1000";
}

TEST(HorarunTimeline, CutTimelineOfAKilledRank0IsClosed) {
  TempDir dir;
  const std::string trace = dir.file("trace.json");
  RunResult r = run_horarun({"--grace", "0.5", "--timeline", trace, "-np", "2", "/bin/sh", "-c",
                             rank_script("[\\n{\"ph\":\"X\"},\\n{\"ph\":\"X\",\"ar")},
                            dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_EQ(read_file(trace), "[\n{\"ph\":\"X\"}\n]\n");
  EXPECT_EQ(count_lines_with(r.err, "horarun: timeline '" + trace +
                                        "': rank 0 stopped while writing it; cut after its last "
                                        "complete event (13 bytes dropped)"),
            1)
      << r.err;
}

TEST(HorarunTimeline, TimelineFromTheEnvironmentIsRepairedToo) {
  TempDir dir;
  const std::string trace = dir.file("trace.json");
  RunResult r = run_horarun({"--grace", "0.5", "-np", "2", "/bin/sh", "-c", rank_script("[\\n{")},
                            dir, {"HORA_TIMELINE=" + trace});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(read_file(trace), "[\n]\n");
}

TEST(HorarunTimeline, ClosedTimelineOfAFailedJobIsLeftAsItIs) {
  TempDir dir;
  const std::string trace = dir.file("trace.json");
  const std::string closed = "[\n{\"ph\":\"X\"}\n]\n";
  RunResult r = run_horarun(
      {"--grace", "0.5", "--timeline", trace, "-np", "2", "/bin/sh", "-c",
       "if [ \"$HORA_RANK\" = 0 ]; then printf '[\\n{\"ph\":\"X\"}\\n]\\n' > \"$HORA_TIMELINE\"; "
       "exit 0; fi; until grep -q ']' \"$HORA_TIMELINE\" 2>/dev/null; do sleep 0.05; done; "
       "exit 3"},
      dir);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(read_file(trace), closed);
  EXPECT_EQ(count_lines_with(r.err, "timeline"), 0) << r.err;
}

}  // namespace
}  // namespace launcher_test
}  // namespace hora
