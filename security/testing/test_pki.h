// TestPki: a throw-away certificate authority for tests, made with the
// `openssl` command at test time (no key material is checked in).
//
// TestPki::Create makes, under a fresh directory:
//   ca.crt / ca.key          a self-signed CA (CN=leasekeeper-test-ca)
//   server.crt / server.key  CN=leasekeeper-test-server, SAN IP:127.0.0.1
//                            and DNS:localhost, signed by the CA
// IssueClient adds client certificates signed by the same CA, and
// Create can be called twice to get an unrelated ("wrong") CA.
// Keys are ECDSA P-256; certificates are valid for two days.
//
// Thread-safety: none; use from one test thread.
#ifndef LEASEKEEPER_SECURITY_TESTING_TEST_PKI_H_
#define LEASEKEEPER_SECURITY_TESTING_TEST_PKI_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leasekeeper::security::testing {

struct KeyPair {
  std::string cert_file;
  std::string key_file;
  std::string cert_pem;
  std::string key_pem;
};

class TestPki {
 public:
  // Outcomes: the PKI in a new directory under `parent_dir`; INTERNAL with
  // openssl's output if a command fails (e.g. openssl is not installed).
  static absl::StatusOr<TestPki> Create(const std::string& parent_dir);

  // A client certificate signed by this CA, with subject CN `common_name`
  // (omitted when empty) and the given subjectAltName entries, e.g.
  // {"DNS:worker.example", "URI:spiffe://example.org/job"}. `name` names
  // the files. Outcomes: the pair; INTERNAL as Create.
  absl::StatusOr<KeyPair> IssueClient(
      const std::string& name, const std::string& common_name,
      const std::vector<std::string>& sans = {});

  // Another server certificate of this CA (SAN IP:127.0.0.1 and
  // DNS:localhost, like server()) with its own key, e.g. to rotate to.
  // Outcomes: as IssueClient.
  absl::StatusOr<KeyPair> IssueServer(const std::string& name,
                                      const std::string& common_name);

  // A certificate valid for both server and client authentication (SANs as
  // server()), as a cluster node needs under mutual TLS: it serves with it
  // and presents it when it fetches a snapshot from the leader. Outcomes:
  // as IssueClient.
  absl::StatusOr<KeyPair> IssuePeer(const std::string& name,
                                    const std::string& common_name);

  const std::string& dir() const { return dir_; }
  const std::string& ca_cert_file() const { return ca_.cert_file; }
  const std::string& ca_cert_pem() const { return ca_.cert_pem; }
  const KeyPair& server() const { return server_; }

 private:
  absl::StatusOr<KeyPair> Issue(const std::string& name,
                                const std::string& common_name,
                                const std::vector<std::string>& sans,
                                const char* extended_key_usage);

  std::string dir_;
  KeyPair ca_;
  KeyPair server_;
};

// The whole content of `path`, or "" if it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace leasekeeper::security::testing

#endif  // LEASEKEEPER_SECURITY_TESTING_TEST_PKI_H_
