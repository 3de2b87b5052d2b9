// The peer secret: how the nodes of one cluster prove to each other's
// internal ClusterPeer service that they are members: 32 random bytes,
// hex-encoded, under /leasekeeper/<cluster>/peer-secret, created once by the
// first node that finds it missing, presented as call metadata
// kPeerSecretMetadataKey and compared in constant time. Whoever can read
// that key in etcd can call the service; the secret is never logged.
// docs/design/cluster.md ("The peer secret").
//
// Thread-safety: pure functions of their arguments and etcd.
#ifndef LEASEKEEPER_CLUSTER_ETCD_PEER_SECRET_H_
#define LEASEKEEPER_CLUSTER_ETCD_PEER_SECRET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_keys.h"

namespace leasekeeper::storage {

inline constexpr char kPeerSecretMetadataKey[] = "leasekeeper-peer-secret";

// The cluster's secret, created if absent. Outcomes: the secret (64 hex
// digits); etcd's error; Internal if the system has no randomness to give;
// DataLoss if the key holds an empty value.
absl::StatusOr<std::string> EnsurePeerSecret(EtcdClient& client,
                                             const ClusterKeys& keys);

// a == b, in time depending only on their lengths.
bool PeerSecretsEqual(absl::string_view a, absl::string_view b);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_PEER_SECRET_H_
