// The workloads of leasekeeper-bench, written once against LockClient and
// run unchanged on leasekeeper, Redis and etcd. Each returns one JSON object
// (the figures, and "errors"/"first_error" when a call failed). W1 and W2
// run `warmup` unmeasured, then `duration` measured; an operation counts if
// it started and ended inside the window. bench/README.md gives the method.
//
// Thread-safety: each function blocks the calling thread (never a loop
// thread) until its clients have stopped.

#ifndef LEASEKEEPER_BENCH_ANCHORS_WORKLOADS_H_
#define LEASEKEEPER_BENCH_ANCHORS_WORKLOADS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "lock_client.h"
#include "nlohmann/json.hpp"

namespace leasekeeper::bench {

enum class System { kLeasekeeper, kRedis, kEtcd };

absl::StatusOr<System> ParseSystem(const std::string& name);
std::string SystemName(System system);

struct Target {
  System system = System::kLeasekeeper;
  std::string address;  // host:port, loopback
  // The processes that serve this system (a cluster: the leader and the
  // etcd members): their CPU time is summed into the server's, per
  // operation; the first one's RSS is the memory figures'. Empty: not
  // measured.
  std::vector<int> server_pids;
  // Processes whose CPU time is reported apart (observed_cpu_ms) and
  // counted in no per-operation figure (a cluster's followers).
  std::vector<int> observed_pids;
  // The leader's /metrics port on 127.0.0.1 (0: none): W1-W3 then report
  // the leasekeeper_etcd_transactions_total and _records_total it counted
  // over the measured window, and the time those transactions took.
  int metrics_port = 0;
  // Every lock and client name starts with this, so runs never collide.
  std::string prefix;

  // The first server pid, or 0.
  int main_pid() const { return server_pids.empty() ? 0 : server_pids.front(); }
};

struct WorkloadOptions {
  int clients = 1;  // W1
  int threads = 1;  // client loops (event-loop threads)
  absl::Duration warmup = absl::Seconds(1);
  absl::Duration duration = absl::Seconds(5);
  int samples = 1000;  // W3, W4
  absl::Duration stagger =
      absl::Milliseconds(50);  // W4: between samples' starts
};

// W1 uncontended: `clients` clients, each acquiring (30 s lease) and
// releasing a lock of its own in a closed loop. Pairs/s, and p50/p99 of
// acquire and of release.
nlohmann::json RunW1(const Target& target, const WorkloadOptions& options);
// W2 contended: 16 clients on one lock, each waiting for it, releasing it at
// once when granted, and asking again. Grants/s, hand-overs/s (a grant to
// another client than the previous one) and p50/p99 of the wait (request
// sent to grant received).
nlohmann::json RunW2(const Target& target, const WorkloadOptions& options);
// W3 hand-over: a holder and a waiter on one lock. Once the waiter is known
// to wait, after a random 0-10 ms (the same sequence for every system), the
// holder sends its release at t0; the sample is the instant the waiter
// holds the lock minus t0.
nlohmann::json RunW3(const Target& target, const WorkloadOptions& options);
// W4 expiry: holders take a 2 s lease and never renew; a waiter per lock
// waits. The sample is the waiter's grant minus the lease's expiry instant,
// taken as (acquire sent) + ttl: the lease cannot end earlier, so a sample
// is never smaller than the truth (it may be larger by up to the holder's
// acquire round trip).
nlohmann::json RunW4Expiry(const Target& target,
                           const WorkloadOptions& options);
// W4 crash (crash_holder.h): the holder is a process with a session and a
// 30 s lease, killed with SIGKILL at t_cut; the sample is the waiter's grant
// minus t_cut, to compare with the session grace.
// REQUIRES: target.system == kLeasekeeper.
nlohmann::json RunW4Crash(const Target& target, const WorkloadOptions& options);

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_WORKLOADS_H_
