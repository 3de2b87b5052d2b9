// EtcdEndpoints: --etcd-endpoints as etcd, etcdctl and their docs write
// them (host:port, http://host:port, https://host:port), checked, with the
// gRPC channel targets that reach them.
//
// Invariants: 1. at least one address; 2. every address is host:port (an
// IPv6 literal in brackets) with a port in 1..65535; 3. one scheme for the
// whole list (http and https are never mixed).
//
// Thread-safety: plain values and pure functions.
#ifndef LEASEKEEPER_CLUSTER_ETCD_ENDPOINTS_H_
#define LEASEKEEPER_CLUSTER_ETCD_ENDPOINTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leasekeeper::storage {

struct EtcdEndpoints {
  enum class Scheme {
    kBare,   // host:port: TLS exactly when a CA file is given (--etcd-ca)
    kHttp,   // http://: plaintext
    kHttps,  // https://: TLS (the CA file, or gRPC's default roots)
  };
  Scheme scheme = Scheme::kBare;
  // host:port of each member, without the scheme, in the order given.
  std::vector<std::string> addresses;
};

// Outcomes: the endpoints; InvalidArgument naming the endpoint at fault for
// an empty list or entry, a scheme other than http/https, a path, user
// info or query after host:port, a missing or bad host or port, and a list
// that mixes http:// and https://.
absl::StatusOr<EtcdEndpoints> ParseEtcdEndpoints(
    const std::vector<std::string>& endpoints);

// The gRPC channel targets. Every address an IPv4 literal (or every one an
// IPv6 literal): one target over all of them ("ipv4:a:p,b:p"), whose
// pick_first moves to the next address when one fails. Otherwise one
// target per address, a name going through gRPC's DNS resolver
// ("dns:///name:port"), which gives the channel every address the name
// resolves to (one name for the whole etcd cluster works so) and resolves
// again when they fail; EtcdClient moves from target to target.
std::vector<std::string> ChannelTargets(const EtcdEndpoints& endpoints);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_ENDPOINTS_H_
