// EtcdClient: leasekeeperd's connection to an etcd cluster (v3 gRPC API),
// the transport under cluster mode's election and replicated log
// (etcd_lease.h, etcd_election.h, etcd_log.h).
//
// One gRPC channel to every endpoint (pick_first over the list: when the
// member in use goes away the channel moves to the next one), plaintext or
// TLS (a CA, and optionally a client certificate and key for etcd's
// --client-cert-auth). Unary calls carry a deadline; a failed call is an
// absl::Status naming etcd and the gRPC code, never an exception.
//
// Thread-safety: every method is thread-safe (gRPC stubs are); the streams
// the stubs open belong to one caller each.
#ifndef LEASEKEEPER_CLUSTER_ETCD_CLIENT_H_
#define LEASEKEEPER_CLUSTER_ETCD_CLIENT_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace leasekeeper::storage {

struct EtcdClientOptions {
  // host:port of each member (--etcd-endpoints), at least one.
  std::vector<std::string> endpoints;
  // --etcd-ca / --etcd-cert / --etcd-key: PEM files. All empty: plaintext.
  // A cert needs its key; either needs the CA.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // Deadline of each unary call.
  std::chrono::milliseconds call_timeout{1000};
};

// A half-open key range: every key that starts with `prefix`.
std::string PrefixRangeEnd(const std::string& prefix);

class EtcdClient {
 public:
  // Outcomes: the client (it connects lazily: an unreachable etcd shows in
  // the first call); InvalidArgument for no endpoints or an incomplete TLS
  // set; NotFound / an I/O error for a TLS file that cannot be read.
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

  // For streams (keepalive, watch): the caller owns the context.
  etcdserverpb::Lease::Stub& lease_stub() { return *lease_; }
  etcdserverpb::Watch::Stub& watch_stub() { return *watch_; }

 private:
  EtcdClient(std::shared_ptr<grpc::Channel> channel,
             std::chrono::milliseconds call_timeout);
  void SetDeadline(grpc::ClientContext& context,
                   std::chrono::milliseconds timeout) const;

  const std::chrono::milliseconds call_timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
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
