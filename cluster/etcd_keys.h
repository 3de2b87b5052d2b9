// ClusterKeys: where a leasekeeper cluster keeps its state in etcd (under
// /leasekeeper/<cluster>/: leader, log/<first position, 20 digits>,
// members/<id>, peer-secret), and the encodings of the values stored there:
// a log batch (varint count, then each record length-prefixed), the leader
// record, a member's report. docs/design/cluster.md ("What lives in etcd").
//
// Thread-safety: values and pure functions.
#ifndef LEASEKEEPER_CLUSTER_ETCD_KEYS_H_
#define LEASEKEEPER_CLUSTER_ETCD_KEYS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/log.h"

namespace leasekeeper::storage {

class ClusterKeys {
 public:
  // REQUIRES: `cluster` is non-empty and has no '/'.
  explicit ClusterKeys(absl::string_view cluster);

  const std::string& root() const { return root_; }
  std::string leader() const { return root_ + "leader"; }
  std::string log_prefix() const { return root_ + "log/"; }
  std::string log(LogPosition first) const;
  std::string members_prefix() const { return root_ + "members/"; }
  std::string member(absl::string_view node_id) const;
  std::string peer_secret() const { return root_ + "peer-secret"; }

  // The first position of the batch under `key`; nullopt for a key that is
  // not a log key of this cluster.
  std::optional<LogPosition> LogPositionOf(absl::string_view key) const;

 private:
  std::string root_;
};

// Encodes records (each one encoded entry) as one batch value.
std::string EncodeBatch(const std::vector<std::string>& records);
// Decodes a batch value: its records as views into `value`. DataLoss if it
// does not decode exactly.
absl::StatusOr<std::vector<absl::string_view>> DecodeBatch(
    absl::string_view value);

// Who leads, as the leader key's value says.
struct LeaderRecord {
  std::string node_id;
  std::string advertise;
};
std::string EncodeLeader(const LeaderRecord& leader);
LeaderRecord DecodeLeader(absl::string_view value);

// What a member reports about itself, every few hundred milliseconds.
struct MemberReport {
  std::string node_id;
  std::string advertise;
  int role = 0;                    // leasekeeper.v1.MemberRole
  LogPosition applied = 0;         // the last record it applied
  LogPosition snapshot = 0;        // its newest local snapshot covers 1..this
};
std::string EncodeMember(const MemberReport& member);
// nullopt if `value` is not a report.
std::optional<MemberReport> DecodeMember(absl::string_view value);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_KEYS_H_
