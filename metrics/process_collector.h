// ProcessCollector: the standard process_* series of a Linux process, read
// from /proc when scraped, with the names, types and help texts of
// Prometheus' Go client (so dashboards made for any exporter work).
//
// Thread-safety: Collect may run on several threads at once; it only reads
// files.
#ifndef LEASEKEEPER_METRICS_PROCESS_COLLECTOR_H_
#define LEASEKEEPER_METRICS_PROCESS_COLLECTOR_H_

#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace leasekeeper::metrics {

class ProcessCollector : public prometheus::Collectable {
 public:
  struct Options {
    // The procfs mount; tests point it at a directory of fixture files.
    std::string proc_root = "/proc";
    // The process directory under proc_root.
    std::string process = "self";
    // Units of /proc/self/stat; 0: the system's (sysconf).
    long clock_ticks_per_second = 0;
    long page_size_bytes = 0;
  };

  ProcessCollector() : ProcessCollector(Options{}) {}
  explicit ProcessCollector(Options options);

  // The series, each left out of this scrape when its source cannot be read
  // or parsed (a restricted /proc shows fewer series, never wrong ones):
  //   process_cpu_seconds_total        counter  user + system CPU time
  //   process_open_fds                 gauge    entries of /proc/self/fd
  //   process_max_fds                  gauge    soft RLIMIT_NOFILE
  //   process_virtual_memory_bytes     gauge    vsize of /proc/self/stat
  //   process_resident_memory_bytes    gauge    rss of /proc/self/stat * page
  //   process_start_time_seconds       gauge    start, seconds since the
  //                                             epoch (boot time of
  //                                             /proc/stat + starttime of
  //                                             /proc/self/stat)
  // Cost: four small files and one listing of the open descriptors,
  // O(open fds).
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string process_dir_;
  const std::string proc_stat_;
  const double clock_ticks_per_second_;
  const double page_size_bytes_;
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_PROCESS_COLLECTOR_H_
