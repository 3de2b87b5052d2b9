// leasekeeper-bench: runs one workload against one lock service and prints
// its figures as one JSON object on stdout. bench/run-anchors drives it
// (every workload, every system, three runs) and writes the report; the
// method is in bench/README.md, "Leasekeeper against Redis and etcd".
// bench/run-cluster-anchors drives it against a three-node cluster and
// etcd's own lock on the same three-member etcd ("Cluster mode").
//
//   leasekeeper-bench --system=redis --target=127.0.0.1:6390 --workload=w1
//       --clients=64 --server_pid=1234
//   leasekeeper-bench --system=leasekeeper --target=<leader> --workload=w1
//       --server_pid=<leader>,<etcd0>,<etcd1>,<etcd2> --observed_pids=<f1>,<f2>
//       --metrics_port=<leader's /metrics port>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "crash_holder.h"
#include "leasekeeper_memory.h"
#include "loop.h"
#include "workloads.h"

ABSL_FLAG(std::string, system, "leasekeeper", "leasekeeper, redis or etcd");
ABSL_FLAG(std::string, target, "", "host:port of the server (loopback)");
ABSL_FLAG(
    std::string, workload, "w1",
    "w1, w2, w3, w4_expiry, w4_crash (leasekeeper), mem_held, mem_waiters "
    "(leasekeeper); session_holder is internal (w4_crash's child)");
ABSL_FLAG(std::string, label, "",
          "echoed in the output (e.g. the durability setting)");
ABSL_FLAG(int, run, 0, "echoed in the output (which of the repeated runs)");
ABSL_FLAG(std::vector<std::string>, server_pid, {},
          "the server's pid, to read its CPU time and RSS; a list (a "
          "cluster's leader and etcd members): CPU summed, RSS of the first");
ABSL_FLAG(std::vector<std::string>, observed_pids, {},
          "pids whose CPU time is reported apart, in no per-operation figure "
          "(a cluster's followers)");
ABSL_FLAG(int, metrics_port, 0,
          "the leader's /metrics port on 127.0.0.1: W1-W3 report its etcd "
          "transactions and records over the window");
ABSL_FLAG(
    std::string, prefix, "",
    "prefix of every lock and client name (default: lkbench/<pid>-<time>)");
ABSL_FLAG(int, clients, 1, "W1: concurrent clients");
ABSL_FLAG(int, threads, 1, "event-loop threads the clients run on");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(1),
          "W1, W2: unmeasured time first");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(5), "W1, W2: measured time");
ABSL_FLAG(int, samples, 0,
          "W3 (default 1000), W4 (default 20), W4 crash (default 10)");
ABSL_FLAG(absl::Duration, stagger, absl::Milliseconds(50),
          "W4: between the samples' starts");
ABSL_FLAG(int64_t, count, 0,
          "mem_held (default 1,000,000 locks), mem_waiters (default 100,000 "
          "waiters)");
// session_holder (internal).
ABSL_FLAG(std::string, client_id, "", "session_holder: the client");
ABSL_FLAG(std::string, lock, "", "session_holder: the lock");
ABSL_FLAG(int64_t, ttl_ms, 30'000, "session_holder: the lease");

namespace leasekeeper::bench {
namespace {

// The machine's 1-minute load average: a busy machine makes every figure
// worse, so each result carries it.
double LoadAverage() {
  double load = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

// --server_pid and --observed_pids into `target`. False (after saying
// why) for a text that is not a pid.
bool ReadPidFlags(Target& target) {
  for (auto [flag, pids] :
       {std::pair{&FLAGS_server_pid, &target.server_pids},
        std::pair{&FLAGS_observed_pids, &target.observed_pids}}) {
    for (const std::string& text : absl::GetFlag(*flag)) {
      int pid = 0;
      if (!absl::SimpleAtoi(text, &pid) || pid <= 0) {
        std::fprintf(stderr, "not a pid: %s\n", text.c_str());
        return false;
      }
      pids->push_back(pid);
    }
  }
  return true;
}

WorkloadOptions WorkloadOptionsFromFlags() {
  WorkloadOptions options;
  options.clients = absl::GetFlag(FLAGS_clients);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.duration = absl::GetFlag(FLAGS_duration);
  options.stagger = absl::GetFlag(FLAGS_stagger);
  return options;
}

// Runs `workload` (with --samples and --count or their defaults); nullopt
// for an unknown workload.
std::optional<nlohmann::json> RunWorkload(const std::string& workload,
                                          const Target& target,
                                          WorkloadOptions options) {
  const int samples = absl::GetFlag(FLAGS_samples);
  const int64_t count = absl::GetFlag(FLAGS_count);
  if (workload == "w1") return RunW1(target, options);
  if (workload == "w2") return RunW2(target, options);
  if (workload == "w3") {
    options.samples = samples > 0 ? samples : 1000;
    return RunW3(target, options);
  }
  if (workload == "w4_expiry") {
    options.samples = samples > 0 ? samples : 20;
    return RunW4Expiry(target, options);
  }
  if (workload == "w4_crash") {
    options.samples = samples > 0 ? samples : 10;
    return RunW4Crash(target, options);
  }
  if (workload == "mem_held") {
    return RunMemoryHeld(target, count > 0 ? count : 1'000'000);
  }
  if (workload == "mem_waiters") {
    return RunMemoryWaiters(target, count > 0 ? count : 100'000);
  }
  return std::nullopt;
}

int Main() {
  std::string workload = absl::GetFlag(FLAGS_workload);
  Target target;
  target.address = absl::GetFlag(FLAGS_target);
  if (target.address.empty()) {
    std::fprintf(stderr, "--target is required\n");
    return 2;
  }
  if (workload == "session_holder") {
    return RunSessionHolder(target.address, absl::GetFlag(FLAGS_client_id),
                            absl::GetFlag(FLAGS_lock),
                            absl::GetFlag(FLAGS_ttl_ms));
  }
  auto system = ParseSystem(absl::GetFlag(FLAGS_system));
  if (!system.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(system.status().message()).c_str());
    return 2;
  }
  target.system = *system;
  if (!ReadPidFlags(target)) return 2;
  target.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  target.prefix = absl::GetFlag(FLAGS_prefix);
  if (target.prefix.empty()) {
    target.prefix =
        absl::StrCat("lkbench/", getpid(), "-", NowNs() / 1'000'000);
  }
  bool leasekeeper_only =
      workload == "w4_crash" || workload.rfind("mem_", 0) == 0;
  if (leasekeeper_only && target.system != System::kLeasekeeper) {
    std::fprintf(stderr, "--workload=%s is for leasekeeper only\n",
                 workload.c_str());
    return 2;
  }

  double load_before = LoadAverage();
  std::optional<nlohmann::json> out =
      RunWorkload(workload, target, WorkloadOptionsFromFlags());
  if (!out.has_value()) {
    std::fprintf(stderr, "unknown --workload=%s\n", workload.c_str());
    return 2;
  }
  (*out)["label"] = absl::GetFlag(FLAGS_label);
  (*out)["run"] = absl::GetFlag(FLAGS_run);
  (*out)["unix_time"] = absl::ToUnixSeconds(absl::Now());
  (*out)["loadavg_1m_before"] = load_before;
  std::cout << out->dump() << std::endl;
  return out->value("errors", 0) == 0 ? 0 : 1;
}

}  // namespace
}  // namespace leasekeeper::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "leasekeeper-bench --system=leasekeeper|redis|etcd --target=HOST:PORT "
      "--workload=W");
  absl::ParseCommandLine(argc, argv);
  // Debian builds Abseil without NDEBUG, which leaves absl::Mutex's deadlock
  // detection on: a global graph update on every lock, in this process's
  // gRPC (gpr_mu is an absl::Mutex) as much as in its own loops. A load
  // generator should not pay for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return leasekeeper::bench::Main();
}
