// CrashHolder: a leasekeeper client in a process of its own, so that W4 can
// crash a holder for real. The child (leasekeeper-bench
// --workload=session_holder) opens a Session stream, acquires the lock with
// that session, prints "held <grace_ms>", and sends a keepalive every
// second; Kill() ends it with SIGKILL, so the kernel closes its connection
// as it would for a crashed job. The child exits by itself after
// kMaxLifetime if nobody kills it.
//
// Thread-safety: none; one owner.

#ifndef LEASEKEEPER_BENCH_ANCHORS_CRASH_HOLDER_H_
#define LEASEKEEPER_BENCH_ANCHORS_CRASH_HOLDER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace leasekeeper::bench {

class CrashHolder {
 public:
  static constexpr absl::Duration kMaxLifetime = absl::Seconds(120);

  // Starts the child and returns once it holds `lock` (or failed).
  static absl::StatusOr<std::unique_ptr<CrashHolder>> Spawn(
      const std::string& target, const std::string& client_id,
      const std::string& lock, int64_t ttl_ms);
  // Reaps the child (killing it first if Kill() was not called).
  ~CrashHolder();
  CrashHolder(const CrashHolder&) = delete;
  CrashHolder& operator=(const CrashHolder&) = delete;

  // Sends SIGKILL; returns NowNs() just before.
  int64_t Kill();
  // The session grace the server announced to the child.
  int64_t grace_ms() const { return grace_ms_; }

 private:
  CrashHolder(pid_t pid, int64_t grace_ms) : pid_(pid), grace_ms_(grace_ms) {}

  pid_t pid_;
  int64_t grace_ms_;
  bool killed_ = false;
};

// The child's side: what --workload=session_holder runs. Returns the exit
// code.
int RunSessionHolder(const std::string& target, const std::string& client_id,
                     const std::string& lock, int64_t ttl_ms);

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_CRASH_HOLDER_H_
