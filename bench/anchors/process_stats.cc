#include "process_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace leasekeeper::bench {

std::optional<ProcessStats> ReadProcessStats(int pid) {
  if (pid <= 0) return std::nullopt;
  ProcessStats stats;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  if (!status) return std::nullopt;
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      stats.rss_bytes = std::stoll(line.substr(6)) * 1024;  // "VmRSS:  123 kB"
    }
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)),
                  std::istreambuf_iterator<char>());
  // Fields after the parenthesised command name; utime and stime are the
  // 14th and 15th fields of the whole line.
  size_t close = all.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(all.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  stats.cpu_ns = (utime + stime) * (1'000'000'000 / sysconf(_SC_CLK_TCK));
  return stats;
}

int64_t MachineBusyNs() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0,
          softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >>
      steal;
  int64_t ticks = user + nice + system + irq + softirq + steal;
  return ticks * (1'000'000'000 / sysconf(_SC_CLK_TCK));
}

}  // namespace leasekeeper::bench
