#include "metrics/process_collector.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "metrics/families.h"

namespace leasekeeper::metrics {
namespace {

using prometheus::MetricType;

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The fields of /proc/<pid>/stat after the command name, which is in
// parentheses and may itself hold spaces and parentheses: fields[0] is
// field 3 of proc(5) (state).
std::vector<absl::string_view> StatFields(absl::string_view stat) {
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) return {};
  return absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
}

// Field `number` (1-based, as in proc(5)) of a stat line's fields.
std::optional<double> StatField(const std::vector<absl::string_view>& fields,
                                size_t number) {
  double value = 0;
  if (number < 3 || number - 3 >= fields.size() ||
      !absl::SimpleAtod(absl::StripAsciiWhitespace(fields[number - 3]),
                        &value)) {
    return std::nullopt;
  }
  return value;
}

// "btime <seconds>" of /proc/stat.
std::optional<double> BootTime(const std::string& proc_stat) {
  std::optional<std::string> text = ReadFile(proc_stat);
  if (!text.has_value()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, "btime ")) {
      double seconds = 0;
      if (absl::SimpleAtod(absl::StripAsciiWhitespace(line), &seconds)) {
        return seconds;
      }
    }
  }
  return std::nullopt;
}

// The soft limit of "Max open files" in /proc/<pid>/limits.
std::optional<double> MaxOpenFiles(const std::string& limits_path) {
  std::optional<std::string> text = ReadFile(limits_path);
  if (!text.has_value()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (!absl::ConsumePrefix(&line, "Max open files")) continue;
    std::vector<absl::string_view> words =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    double soft = 0;
    if (!words.empty() && absl::SimpleAtod(words[0], &soft)) return soft;
  }
  return std::nullopt;
}

std::optional<double> OpenFds(const std::string& fd_dir) {
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) return std::nullopt;
  // The descriptor of the listing itself is not one the process holds.
  const std::string listing = std::to_string(dirfd(dir));
  double count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.' && listing != entry->d_name) ++count;
  }
  closedir(dir);
  return count;
}

void AddGauge(std::vector<prometheus::MetricFamily>& out, const char* name,
              const char* help, std::optional<double> value) {
  if (!value.has_value()) return;
  out.push_back(MakeFamily(MetricType::Gauge, name, help));
  AddValue(out.back(), *value);
}

}  // namespace

ProcessCollector::ProcessCollector(Options options)
    : process_dir_(options.proc_root + "/" + options.process),
      proc_stat_(options.proc_root + "/stat"),
      clock_ticks_per_second_(static_cast<double>(
          options.clock_ticks_per_second > 0 ? options.clock_ticks_per_second
                                              : sysconf(_SC_CLK_TCK))),
      page_size_bytes_(static_cast<double>(options.page_size_bytes > 0
                                               ? options.page_size_bytes
                                               : sysconf(_SC_PAGESIZE))) {}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  const std::optional<std::string> stat = ReadFile(process_dir_ + "/stat");
  const std::vector<absl::string_view> fields =
      stat.has_value() ? StatFields(*stat) : std::vector<absl::string_view>{};
  // proc(5): 14 utime, 15 stime, 22 starttime (clock ticks), 23 vsize
  // (bytes), 24 rss (pages).
  const std::optional<double> utime = StatField(fields, 14);
  const std::optional<double> stime = StatField(fields, 15);
  if (utime.has_value() && stime.has_value()) {
    out.push_back(MakeFamily(MetricType::Counter, "process_cpu_seconds_total",
                             "Total user and system CPU time spent in "
                             "seconds."));
    AddValue(out.back(), (*utime + *stime) / clock_ticks_per_second_);
  }
  AddGauge(out, "process_open_fds", "Number of open file descriptors.",
           OpenFds(process_dir_ + "/fd"));
  AddGauge(out, "process_max_fds", "Maximum number of open file descriptors.",
           MaxOpenFiles(process_dir_ + "/limits"));
  AddGauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
           StatField(fields, 23));
  const std::optional<double> rss = StatField(fields, 24);
  AddGauge(out, "process_resident_memory_bytes",
           "Resident memory size in bytes.",
           rss.has_value() ? std::optional<double>(*rss * page_size_bytes_)
                           : std::nullopt);
  const std::optional<double> start = StatField(fields, 22);
  const std::optional<double> boot = BootTime(proc_stat_);
  AddGauge(out, "process_start_time_seconds",
           "Start time of the process since unix epoch in seconds.",
           start.has_value() && boot.has_value()
               ? std::optional<double>(*boot + *start / clock_ticks_per_second_)
               : std::nullopt);
  return out;
}

}  // namespace leasekeeper::metrics
