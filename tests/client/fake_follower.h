// Test helper: a stand-in for a cluster node that is not the leader. It
// refuses every call (every method of every service, the session stream
// included) as a follower does under the cluster protocol: UNAVAILABLE
// "not leader; leader is <addr>", trailing metadata leasekeeper-reason
// NOT_LEADER, leasekeeper-error-bin, and leasekeeper-leader = the address
// set with SetLeader (absent when none is set: "leader unknown").
//
// Guarantees:
//  1. It listens on 127.0.0.1 only, on a port the kernel picked.
//  2. Every call is counted by method name (e.g.
//     "/leasekeeper.v1.LockService/Acquire") before it is refused.
//
// Thread-safety: all methods are thread-safe.
#ifndef LEASEKEEPER_TESTS_CLIENT_FAKE_FOLLOWER_H_
#define LEASEKEEPER_TESTS_CLIENT_FAKE_FOLLOWER_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace leasekeeper::client::testing {

class FakeFollower {
 public:
  // Outcomes: the follower, serving; INTERNAL if it could not listen.
  static absl::StatusOr<std::unique_ptr<FakeFollower>> Start(
      std::string leader = "");
  ~FakeFollower();

  FakeFollower(const FakeFollower&) = delete;
  FakeFollower& operator=(const FakeFollower&) = delete;

  // "127.0.0.1:PORT".
  const std::string& address() const { return address_; }
  // The leader it names from now on; empty: none.
  void SetLeader(std::string leader);
  // Calls refused so far, of `method` ("Acquire", "Session", ...).
  int Calls(absl::string_view method) const;
  int TotalCalls() const;

 private:
  class Refuser;
  FakeFollower() = default;

  std::string Leader() const;
  void Count(const std::string& method);

  std::unique_ptr<Refuser> refuser_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  mutable absl::Mutex mu_;
  std::string leader_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::client::testing

#endif  // LEASEKEEPER_TESTS_CLIENT_FAKE_FOLLOWER_H_
