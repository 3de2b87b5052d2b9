#include "metrics/process_collector.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/testing/exposition_parser.h"
#include "prometheus/text_serializer.h"

namespace leasekeeper::metrics {
namespace {

using testing::Exposition;

Exposition Scrape(const ProcessCollector& collector) {
  absl::StatusOr<Exposition> parsed = Exposition::Parse(
      prometheus::TextSerializer().Serialize(collector.Collect()));
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : Exposition{};
}

// A fake procfs: <root>/stat, <root>/self/{stat,limits,fd/}.
class FakeProc {
 public:
  FakeProc() {
    root_ = ::testing::TempDir() + "/leasekeeper-proc-XXXXXX";
    EXPECT_NE(mkdtemp(root_.data()), nullptr);
    EXPECT_EQ(std::system(("mkdir -p '" + root_ + "/self/fd'").c_str()), 0);
  }
  ~FakeProc() { std::system(("rm -rf '" + root_ + "'").c_str()); }

  void Write(const std::string& path, const std::string& text) {
    std::ofstream(root_ + "/" + path) << text;
  }
  ProcessCollector::Options Options() const {
    return {.proc_root = root_,
            .process = "self",
            .clock_ticks_per_second = 100,
            .page_size_bytes = 4096};
  }

 private:
  std::string root_;
};

// proc(5) field numbers: 14 utime, 15 stime, 22 starttime, 23 vsize, 24 rss.
// The command name holds a space and a parenthesis, as a process may name
// itself.
constexpr char kStat[] =
    "4242 (lk d) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 "
    "250 130 0 0 20 0 9 0 123456 987654321 2500 "
    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessCollectorTest, SeriesAreReadFromTheProcFiles) {
  FakeProc proc;
  proc.Write("self/stat", kStat);
  proc.Write("stat", "cpu  1 2 3 4\nbtime 1700000000\nprocesses 5\n");
  proc.Write("self/limits",
             "Limit                     Soft Limit           Hard Limit  "
             "Units\nMax open files            1024                 524288 "
             "files\n");
  for (const char* fd : {"0", "1", "2"}) proc.Write(std::string("self/fd/") + fd, "");

  const Exposition m = Scrape(ProcessCollector(proc.Options()));
  EXPECT_DOUBLE_EQ(*m.Value("process_cpu_seconds_total"), (250 + 130) / 100.0);
  EXPECT_EQ(m.Value("process_virtual_memory_bytes"), 987654321);
  EXPECT_EQ(m.Value("process_resident_memory_bytes"), 2500.0 * 4096);
  EXPECT_DOUBLE_EQ(*m.Value("process_start_time_seconds"),
                   1700000000 + 123456 / 100.0);
  EXPECT_EQ(m.Value("process_open_fds"), 3);
  EXPECT_EQ(m.Value("process_max_fds"), 1024);
  EXPECT_EQ(m.families().at("process_cpu_seconds_total").type, "counter");
  EXPECT_EQ(m.families().at("process_resident_memory_bytes").help,
            "Resident memory size in bytes.");
}

TEST(ProcessCollectorTest, ASeriesWhoseSourceIsMissingIsLeftOut) {
  FakeProc proc;
  proc.Write("self/fd/0", "");
  // No stat files, no limits: only the descriptor count can be told.
  const Exposition m = Scrape(ProcessCollector(proc.Options()));
  EXPECT_EQ(m.Value("process_open_fds"), 1);
  for (const char* name :
       {"process_cpu_seconds_total", "process_virtual_memory_bytes",
        "process_resident_memory_bytes", "process_start_time_seconds",
        "process_max_fds"}) {
    EXPECT_EQ(m.families().count(name), 0u) << name;
  }
}

TEST(ProcessCollectorTest, AGarbledStatLineGivesNoStatSeries) {
  FakeProc proc;
  proc.Write("self/stat", "4242 (truncated");
  proc.Write("stat", "btime 1700000000\n");
  const Exposition m = Scrape(ProcessCollector(proc.Options()));
  EXPECT_EQ(m.families().count("process_cpu_seconds_total"), 0u);
  EXPECT_EQ(m.families().count("process_start_time_seconds"), 0u);
  EXPECT_EQ(m.families().count("process_resident_memory_bytes"), 0u);
}

TEST(ProcessCollectorTest, OwnProcessReportsItsDescriptorsAndStart) {
  const ProcessCollector collector;
  const Exposition before = Scrape(collector);
  const int fd = open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  const Exposition after = Scrape(collector);
  close(fd);
  EXPECT_EQ(*after.Value("process_open_fds"),
            *before.Value("process_open_fds") + 1);
  EXPECT_GT(*before.Value("process_resident_memory_bytes"), 0);
  EXPECT_GE(*before.Value("process_virtual_memory_bytes"),
            *before.Value("process_resident_memory_bytes"));
  const double start = *before.Value("process_start_time_seconds");
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 3600);  // this test process started recently
  EXPECT_GE(*before.Value("process_cpu_seconds_total"), 0);
}

}  // namespace
}  // namespace leasekeeper::metrics
