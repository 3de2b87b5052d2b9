// What /proc says about a server process: its resident memory and the CPU
// time it has used. The bench reads them for the server it drives, so that
// a result can say what each lock pair cost the server, not only how fast
// it was.

#ifndef LEASEKEEPER_BENCH_ANCHORS_PROCESS_STATS_H_
#define LEASEKEEPER_BENCH_ANCHORS_PROCESS_STATS_H_

#include <cstdint>
#include <optional>

namespace leasekeeper::bench {

struct ProcessStats {
  int64_t rss_bytes = 0;  // VmRSS
  int64_t cpu_ns = 0;     // user + system time
};

// nullopt if the process does not exist (or pid <= 0).
std::optional<ProcessStats> ReadProcessStats(int pid);

// CPU time every process on the machine has used (all CPUs: user, nice,
// system, irq, softirq, steal), from /proc/stat. Compared with what the
// server and the bench used over a window, it tells how much other work
// ran meanwhile.
int64_t MachineBusyNs();

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_PROCESS_STATS_H_
