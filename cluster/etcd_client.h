// EtcdClient: leasekeeperd's connection to an etcd cluster (v3 gRPC API),
// the transport under cluster mode's election and replicated log
// (etcd_lease.h, etcd_election.h, etcd_log.h).
//
// The endpoints' channels (etcd_endpoints.h: one over every IP address, or
// one per name, the client moving to the next when the one in use fails),
// plaintext or TLS (https://, or a CA; optionally a client certificate and
// key for etcd's --client-cert-auth). Unary calls carry a deadline; a
// failed call is an absl::Status naming etcd and the gRPC code, never an
// exception. The client counts the outcome of every unary call: errors by
// method, the last success, and whether etcd is in trouble
// (etcd_health_reporter.h), for the node's log lines and metrics.
//
// Thread-safety: every method is thread-safe (gRPC stubs are); the streams
// the stubs open belong to one caller each.
#ifndef LEASEKEEPER_CLUSTER_ETCD_CLIENT_H_
#define LEASEKEEPER_CLUSTER_ETCD_CLIENT_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_health_reporter.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace leasekeeper::storage {

struct EtcdClientOptions {
  // Each member as --etcd-endpoints gives it (etcd_endpoints.h), at least
  // one.
  std::vector<std::string> endpoints;
  // --etcd-ca / --etcd-cert / --etcd-key: PEM files. TLS for https://
  // endpoints (without a CA: gRPC's default roots) and for bare host:port
  // ones when a CA is given; http:// takes none of them. A cert needs its
  // key; either needs the CA.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // Deadline of each unary call.
  std::chrono::milliseconds call_timeout{1000};
};

// What the client counted of its unary calls since Connect.
struct EtcdCallStats {
  // The unary methods, in the order of errors_by_method.
  static constexpr std::array<const char*, 6> kMethods = {
      "Txn", "Range", "Put", "DeleteRange", "LeaseGrant", "LeaseRevoke"};
  // Some call succeeded and etcd is not in trouble (a failure since the
  // last success; etcd_health_reporter.h).
  bool reachable = false;
  // Calls that failed (any gRPC error or an error in the answer), by
  // kMethods.
  std::array<uint64_t, kMethods.size()> errors_by_method{};
  // Since the last successful call (since Connect if none was).
  std::chrono::steady_clock::duration since_last_success{};
  // The last failure, "etcd <method>: <gRPC code>: <message>", while etcd
  // is in trouble; empty otherwise.
  std::string trouble;
};

// A half-open key range: every key that starts with `prefix`.
std::string PrefixRangeEnd(const std::string& prefix);

class EtcdClient {
 public:
  // Outcomes: the client (it connects lazily: an unreachable etcd shows in
  // the first call); InvalidArgument for endpoints that do not parse
  // (ParseEtcdEndpoints), an incomplete TLS set or TLS files with http://
  // endpoints; NotFound for a TLS file that cannot be read.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(
      const EtcdClientOptions& options);

  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Each: etcd's answer; Unavailable (transport, no quorum, deadline) or
  // the gRPC code etcd answered with, as "etcd <method>: <message>".
  // `timeout` 0: options.call_timeout.
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const etcdserverpb::RangeRequest& request);
  absl::StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& request);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& request);
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(
      int64_t ttl_seconds);
  absl::Status LeaseRevoke(int64_t lease_id);

  // For streams (keepalive, watch) on the channel in use: the caller owns
  // the context. Stream outcomes are not counted.
  etcdserverpb::Lease::Stub& lease_stub() { return *Current().lease; }
  etcdserverpb::Watch::Stub& watch_stub() { return *Current().watch; }

  EtcdCallStats call_stats() const;
  // The trouble notice due now (EtcdHealthReporter::Poll), for one caller
  // to log.
  std::optional<EtcdHealthReporter::Notice> PollHealth();

 private:
  // Indexes of EtcdCallStats::kMethods.
  enum Method : size_t {
    kTxn,
    kRange,
    kPut,
    kDeleteRange,
    kLeaseGrant,
    kLeaseRevoke
  };
  // One channel and its stubs.
  struct Target {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  };

  EtcdClient(std::vector<std::shared_ptr<grpc::Channel>> channels,
             std::chrono::milliseconds call_timeout);
  Target& Current() { return targets_[current_.load() % targets_.size()]; }
  void SetDeadline(grpc::ClientContext& context,
                   std::chrono::milliseconds timeout) const;
  // One unary call of kMethods[method] on the channel in use, counted;
  // `invoke(target, context, response)` makes it. A failure that says the
  // member cannot be reached moves later calls to the next channel.
  template <typename Response, typename Invoke>
  absl::StatusOr<Response> Call(Method method,
                                std::chrono::milliseconds timeout,
                                Invoke invoke);
  // Counts an outcome: `error` empty for a success; `reached`: etcd
  // answered (a success, or an answer about the data).
  void Count(Method method, const std::string& error, bool reached);

  const std::chrono::milliseconds call_timeout_;
  std::vector<Target> targets_;
  std::atomic<size_t> current_{0};

  mutable absl::Mutex mu_;
  EtcdHealthReporter reporter_ ABSL_GUARDED_BY(mu_);
  std::array<uint64_t, EtcdCallStats::kMethods.size()> errors_
      ABSL_GUARDED_BY(mu_){};
  std::chrono::steady_clock::time_point last_success_ ABSL_GUARDED_BY(mu_);
  bool ever_succeeded_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
};

// An etcd call's gRPC failure as an absl::Status: "etcd <what>: <message>",
// with the same code (UNAVAILABLE and DEADLINE_EXCEEDED both Unavailable,
// as both mean "try another time or another member").
absl::Status FromEtcdStatus(const grpc::Status& status, const char* what);

// Adds to `txn` the compare "the create revision of `key` is
// `create_revision`" (0: the key does not exist; a key's create revision
// tells one creation of it from any other).
void CompareCreateRevision(etcdserverpb::TxnRequest& txn,
                           const std::string& key, int64_t create_revision);

// What PutIfAbsent found.
struct PutIfAbsentResult {
  bool created = false;
  // created: the put's revision, which is the key's create revision.
  int64_t revision = 0;
  // Not created: the key as it stood (nullopt if it was deleted between
  // the transaction's compare and its read).
  std::optional<mvccpb::KeyValue> existing;
};

// Creates `key` = `value` (on lease `lease_id`; 0: none) only if the key
// does not exist, in one transaction that otherwise reads it. Outcomes:
// the result; etcd's error.
absl::StatusOr<PutIfAbsentResult> PutIfAbsent(EtcdClient& client,
                                              const std::string& key,
                                              const std::string& value,
                                              int64_t lease_id = 0);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_CLIENT_H_
