#include "cluster/etcd_peer_secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::storage {
namespace {

constexpr size_t kSecretBytes = 32;

absl::StatusOr<std::string> RandomSecret() {
  std::string bytes(kSecretBytes, '\0');
  size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got =
        getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(
          absl::StrCat("getrandom: ", std::strerror(errno)));
    }
    filled += static_cast<size_t>(got);
  }
  return absl::BytesToHexString(bytes);
}

}  // namespace

absl::StatusOr<std::string> EnsurePeerSecret(EtcdClient& client,
                                             const ClusterKeys& keys) {
  absl::StatusOr<std::string> fresh = RandomSecret();
  if (!fresh.ok()) return fresh.status();
  const std::string key = keys.peer_secret();
  absl::StatusOr<PutIfAbsentResult> put = PutIfAbsent(client, key, *fresh);
  if (!put.ok()) return put.status();
  if (put->created) return *fresh;
  if (!put->existing.has_value() || put->existing->value().empty()) {
    return absl::DataLossError(
        absl::StrCat("etcd key ", key, " holds no peer secret"));
  }
  return put->existing->value();
}

bool PeerSecretsEqual(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return differ == 0;
}

}  // namespace leasekeeper::storage
