#include "storage/etcd_election.h"

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
  const std::string key = keys.leader();
  etcdserverpb::TxnRequest txn;
  CompareCreateRevision(txn, key, 0);  // no leader
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(EncodeLeader(me));
  put->set_lease(lease_id);
  txn.add_failure()->mutable_request_range()->set_key(key);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client.Txn(txn);
  if (!response.ok()) return response.status();
  CampaignResult result;
  if (response->succeeded()) {
    result.won = true;
    // The put is the transaction's only write: its revision is the key's
    // create revision.
    result.view = LeaderView{.leader = me,
                             .epoch = response->header().revision(),
                             .lease = lease_id};
    return result;
  }
  const etcdserverpb::RangeResponse& current =
      response->responses(0).response_range();
  if (current.kvs_size() == 1) result.view = ViewOf(current.kvs(0));
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
