#include "security/testing/test_pki.h"

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace leasekeeper::security::testing {
namespace {

constexpr char kKeyOptions[] =
    "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

absl::Status Run(const std::string& dir, const std::string& command) {
  const std::string log = dir + "/openssl.log";
  const std::string full = absl::StrCat(command, " >", log, " 2>&1");
  if (std::system(full.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("`", command, "` failed: ", ReadFileOrEmpty(log)));
  }
  return absl::OkStatus();
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  return static_cast<bool>(file);
}

std::string Subject(const std::string& common_name) {
  // An empty subject is spelled "/" for openssl req.
  return common_name.empty() ? "/" : "/CN=" + common_name;
}

}  // namespace

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

absl::StatusOr<TestPki> TestPki::Create(const std::string& parent_dir) {
  std::string pattern = parent_dir + "/leasekeeper-pki-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError("mkdtemp failed under " + parent_dir);
  }
  TestPki pki;
  pki.dir_ = pattern;
  pki.ca_.cert_file = pki.dir_ + "/ca.crt";
  pki.ca_.key_file = pki.dir_ + "/ca.key";
  if (absl::Status status =
          Run(pki.dir_,
              absl::StrCat("openssl req -x509 ", kKeyOptions, " -keyout ",
                           pki.ca_.key_file, " -out ", pki.ca_.cert_file,
                           " -days 2 -subj /CN=leasekeeper-test-ca",
                           " -addext basicConstraints=critical,CA:TRUE",
                           " -addext keyUsage=critical,keyCertSign,cRLSign"));
      !status.ok()) {
    return status;
  }
  pki.ca_.cert_pem = ReadFileOrEmpty(pki.ca_.cert_file);
  pki.ca_.key_pem = ReadFileOrEmpty(pki.ca_.key_file);
  absl::StatusOr<KeyPair> server =
      pki.Issue("server", "leasekeeper-test-server",
                {"IP:127.0.0.1", "DNS:localhost"}, "serverAuth");
  if (!server.ok()) return server.status();
  pki.server_ = std::move(*server);
  return pki;
}

absl::StatusOr<KeyPair> TestPki::IssueServer(const std::string& name,
                                             const std::string& common_name) {
  return Issue(name, common_name, {"IP:127.0.0.1", "DNS:localhost"},
               "serverAuth");
}

absl::StatusOr<KeyPair> TestPki::IssuePeer(const std::string& name,
                                           const std::string& common_name) {
  return Issue(name, common_name, {"IP:127.0.0.1", "DNS:localhost"},
               "serverAuth,clientAuth");
}

absl::StatusOr<KeyPair> TestPki::IssueClient(
    const std::string& name, const std::string& common_name,
    const std::vector<std::string>& sans) {
  return Issue(name, common_name, sans, "clientAuth");
}

absl::StatusOr<KeyPair> TestPki::Issue(const std::string& name,
                                       const std::string& common_name,
                                       const std::vector<std::string>& sans,
                                       const char* extended_key_usage) {
  KeyPair pair;
  pair.cert_file = absl::StrCat(dir_, "/", name, ".crt");
  pair.key_file = absl::StrCat(dir_, "/", name, ".key");
  const std::string csr = absl::StrCat(dir_, "/", name, ".csr");
  const std::string extensions = absl::StrCat(dir_, "/", name, ".ext");
  std::string extension_text = absl::StrCat(
      "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
      "extendedKeyUsage=",
      extended_key_usage, "\n");
  if (!sans.empty()) {
    absl::StrAppend(&extension_text,
                    "subjectAltName=", absl::StrJoin(sans, ","), "\n");
  }
  if (!WriteFile(extensions, extension_text)) {
    return absl::InternalError("cannot write " + extensions);
  }
  if (absl::Status status =
          Run(dir_, absl::StrCat("openssl req -new ", kKeyOptions, " -keyout ",
                                 pair.key_file, " -out ", csr, " -subj '",
                                 Subject(common_name), "'"));
      !status.ok()) {
    return status;
  }
  if (absl::Status status =
          Run(dir_, absl::StrCat("openssl x509 -req -in ", csr, " -CA ",
                                 ca_.cert_file, " -CAkey ", ca_.key_file,
                                 " -CAcreateserial -CAserial ", dir_, "/ca.srl",
                                 " -days 2 -extfile ", extensions, " -out ",
                                 pair.cert_file));
      !status.ok()) {
    return status;
  }
  pair.cert_pem = ReadFileOrEmpty(pair.cert_file);
  pair.key_pem = ReadFileOrEmpty(pair.key_file);
  return pair;
}

}  // namespace leasekeeper::security::testing
