// Every line leasekeeperd writes to stderr has one format, gRPC's and
// protobuf's own lines included: logfmt, starting with an RFC 3339 UTC time
// (with its offset) and the level (server/logging.h).
#include <grpc/grpc.h>
#include <grpc/support/log.h>

#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "server/logging.h"
#include "spdlog/sinks/ostream_sink.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

const std::regex& LinePattern() {
  static const std::regex* const pattern = new std::regex(
      R"(^ts=(\d{4}-\d\d-\d\dT\d\d:\d\d):\d\d\.\d{3}\+00:00 )"
      R"(level=(trace|debug|info|warning|error|critical) \S.*$)");
  return *pattern;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(LoggingTest, LibraryLinesAreLogfmtWithTheUtcTime) {
  // A zone far from UTC, so that a local time would show.
  setenv("TZ", "Asia/Kolkata", 1);
  tzset();
  std::ostringstream out;
  server::InstallDaemonLogger(
      std::make_shared<spdlog::logger>(
          "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out)),
      spdlog::level::info);
  server::RouteLibraryLogs();
  grpc_init();  // gpr_log prints nothing before gRPC reads its verbosity
  const std::string minute_before =
      absl::FormatTime("%Y-%m-%dT%H:%M", absl::Now(), absl::UTCTimeZone());
  gpr_log(GPR_ERROR, "bad thing %d", 7);
  GOOGLE_LOG(WARNING) << "odd \"thing\"\n";
  spdlog::info("event=own_line");
  spdlog::default_logger()->flush();
  const std::string minute_after =
      absl::FormatTime("%Y-%m-%dT%H:%M", absl::Now(), absl::UTCTimeZone());
  grpc_shutdown();

  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3u) << out.str();
  for (const std::string& line : lines) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, LinePattern())) << line;
    EXPECT_TRUE(match[1] == minute_before || match[1] == minute_after)
        << line << " is not UTC (" << minute_before << ")";
  }
  EXPECT_TRUE(std::regex_search(
      lines[0], std::regex(R"( level=error event=library_log source=grpc )"
                           R"(file=\S+ line=\d+ message="bad thing 7"$)")))
      << lines[0];
  EXPECT_TRUE(std::regex_search(
      lines[1],
      std::regex(R"( level=warning event=library_log source=protobuf )"
                 R"(file=\S+ line=\d+ message="odd \\"thing\\""$)")))
      << lines[1];
  EXPECT_TRUE(absl::EndsWith(lines[2], " level=info event=own_line"))
      << lines[2];
}

// gRPC logs its own error when a port cannot be bound: in the daemon that
// line has the daemon's format too.
TEST(LoggingTest, DaemonStderrHasOneFormat) {
  Daemon first = StartDaemon();
  ASSERT_FALSE(first.address.empty());
  DataDir dir;
  ChildProcess second("/bin/sh",
                      {"-c", std::string("exec ") + LEASEKEEPERD_PATH +
                                 " --listen=" + first.address +
                                 " --log-level=info " + dir.flag() + " 2>&1"});
  std::string output;
  while (std::optional<std::string> line =
             second.ReadLine(std::chrono::seconds(10))) {
    absl::StrAppend(&output, *line, "\n");
  }
  ASSERT_TRUE(second.WaitExit(std::chrono::seconds(10)).has_value());
  const std::vector<std::string> lines = Lines(output);
  ASSERT_GE(lines.size(), 2u) << output;
  bool saw_grpc = false;
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, LinePattern())) << line;
    saw_grpc = saw_grpc || absl::StrContains(line, " source=grpc ");
  }
  EXPECT_TRUE(saw_grpc) << output;
}

}  // namespace
}  // namespace leasekeeper::testing
