// LockClient: one client of one lock service, driving that service's
// idiomatic lock. The workloads (workloads.h) are written once against this
// interface; leasekeeper_lock_client.h, redis_lock_client.h and
// etcd_lock_client.h say how each system takes, waits for and gives back a
// lock, so that a reader can judge whether the comparison is fair.
//
// Thread-safety: a client is bound to one Loop. Every method must be called
// on that loop's thread, and every callback runs there.
// Invariants:
//  1. Each callback runs exactly once.
//  2. A client has at most one Acquire outstanding.

#ifndef LEASEKEEPER_BENCH_ANCHORS_LOCK_CLIENT_H_
#define LEASEKEEPER_BENCH_ANCHORS_LOCK_CLIENT_H_

#include <cstdint>
#include <string>

#include "absl/functional/any_invocable.h"
#include "loop.h"

namespace leasekeeper::bench {

struct AcquireResult {
  // True: the client holds the lock.
  bool granted = false;
  // Non-empty when the call failed (transport or server error).
  std::string error;
  // A lower bound (NowNs()) of the instant the lease began on the server:
  // the lease ends no earlier than lease_start_ns + ttl. Used to time a
  // hand-over after expiry without needing the server's clock.
  int64_t lease_start_ns = 0;
  // The lease length the server granted (etcd may round a TTL up).
  int64_t ttl_ms = 0;
};

using AcquireDone = absl::AnyInvocable<void(AcquireResult)>;
using Done = absl::AnyInvocable<void(std::string error)>;  // empty: ok

class LockClient {
 public:
  virtual ~LockClient() = default;

  virtual Loop& loop() = 0;

  // Connects and does the per-client setup that precedes measuring (an etcd
  // session lease, a Redis script load). done("") on success.
  virtual void Start(Done done) = 0;

  // Takes `lock` with a lease of ttl_ms.
  //  wait == false: one attempt; granted == false if someone holds it.
  //  wait == true:  returns once granted (or on error). on_waiting, if set,
  //                 runs once, when the request is known to wait (it has
  //                 failed a first attempt, or sits in the server's queue);
  //                 it does not run if the first attempt is granted.
  virtual void Acquire(const std::string& lock, int64_t ttl_ms, bool wait,
                       absl::AnyInvocable<void()> on_waiting,
                       AcquireDone done) = 0;

  // Gives back a lock this client holds. done("") when it was released.
  virtual void Release(const std::string& lock, Done done) = 0;

  // Ends streams and connections. REQUIRES: no call outstanding.
  virtual void Stop(absl::AnyInvocable<void()> done) = 0;
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_LOCK_CLIENT_H_
