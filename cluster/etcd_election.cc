#include "cluster/etcd_election.h"

namespace leasekeeper::storage {
namespace {

LeaderView ViewOf(const mvccpb::KeyValue& kv) {
  return LeaderView{.leader = DecodeLeader(kv.value()),
                    .epoch = kv.create_revision(),
                    .lease = kv.lease()};
}

}  // namespace

absl::StatusOr<CampaignResult> Campaign(EtcdClient& client,
                                        const ClusterKeys& keys,
                                        int64_t lease_id,
                                        const LeaderRecord& me) {
  // A read first: a transaction with a put goes through etcd's raft log
  // (an entry, a WAL fsync on every member) even when its compare fails,
  // and candidates campaign many times a second while a leader lives. A
  // linearizable read costs etcd a heartbeat round and writes nothing.
  absl::StatusOr<std::optional<LeaderView>> leading = ReadLeader(client, keys);
  if (!leading.ok()) return leading.status();
  if (leading->has_value()) return CampaignResult{.view = **leading};
  absl::StatusOr<PutIfAbsentResult> put =
      PutIfAbsent(client, keys.leader(), EncodeLeader(me), lease_id);
  if (!put.ok()) return put.status();
  CampaignResult result;
  if (put->created) {
    result.won = true;
    result.view =
        LeaderView{.leader = me, .epoch = put->revision, .lease = lease_id};
  } else if (put->existing.has_value()) {
    result.view = ViewOf(*put->existing);
  }
  return result;
}

absl::StatusOr<std::optional<LeaderView>> ReadLeader(EtcdClient& client,
                                                     const ClusterKeys& keys) {
  etcdserverpb::RangeRequest request;
  request.set_key(keys.leader());
  absl::StatusOr<etcdserverpb::RangeResponse> response = client.Range(request);
  if (!response.ok()) return response.status();
  if (response->kvs_size() == 0) return std::optional<LeaderView>();
  return std::optional<LeaderView>(ViewOf(response->kvs(0)));
}

absl::Status Resign(EtcdClient& client, const ClusterKeys& keys,
                    int64_t epoch) {
  etcdserverpb::TxnRequest txn;
  CompareCreateRevision(txn, keys.leader(), epoch);  // still ours
  txn.add_success()->mutable_request_delete_range()->set_key(keys.leader());
  return client.Txn(txn).status();
}

}  // namespace leasekeeper::storage
