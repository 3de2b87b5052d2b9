// The peer secret: how the nodes of one cluster prove to each other's
// internal ClusterPeer service (proto/leasekeeper/v1/cluster_peer.proto)
// that they are members.
//
// Membership is proven by access to the cluster's etcd: the secret is 32
// random bytes (getrandom(2)), hex-encoded, kept under
// /leasekeeper/<cluster>/peer-secret (etcd_keys.h), created once by the
// first node that finds it missing, in a transaction that creates it only
// if it is absent, so every node reads the same value. A caller presents
// it as call metadata kPeerSecretMetadataKey; the server compares it with
// PeerSecretsEqual, in time that does not depend on where the values
// differ. Protect etcd accordingly (client certificates, etcd's own auth):
// whoever can read that key can call the service. The secret is never
// logged.
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
