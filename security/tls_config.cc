#include "security/tls_config.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <fstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::security {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    return absl::ErrnoToStatus(
        error, absl::StrCat("--", flag, ": cannot read ", path));
  }
  std::string text;
  char buffer[16 * 1024];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    text.append(buffer, file.gcount());
    if (text.size() > kMaxPemFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": ", path, " is larger than ",
                       kMaxPemFileBytes, " bytes"));
    }
  }
  return text;
}

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every certificate in `pem`, in order.
std::vector<X509Ptr> ReadCertificates(const std::string& pem) {
  std::vector<X509Ptr> certificates;
  BioPtr bio = MemoryBio(pem);
  while (X509* certificate =
             PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certificates.emplace_back(certificate);
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  return certificates;
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  return std::string(data, length > 0 ? length : 0);
}

std::string Subject(X509* certificate) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(certificate), 0,
                     XN_FLAG_RFC2253);
  return BioText(bio.get());
}

std::string TimeText(const ASN1_TIME* time) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(bio.get(), time);
  return BioText(bio.get());
}

}  // namespace

const char* TransportSecurityName(TransportSecurity mode) {
  switch (mode) {
    case TransportSecurity::kPlaintext:
      return "plaintext";
    case TransportSecurity::kTls:
      return "tls";
    case TransportSecurity::kMutualTls:
      return "mutual-tls";
  }
  return "?";
}

absl::StatusOr<TransportSecurity> TransportSecurityOf(const TlsFiles& files) {
  const bool cert = !files.cert_file.empty();
  const bool key = !files.key_file.empty();
  const bool ca = !files.client_ca_file.empty();
  if (cert != key) {
    return absl::InvalidArgumentError(cert ? "--tls-cert needs --tls-key"
                                           : "--tls-key needs --tls-cert");
  }
  if (ca && !cert) {
    return absl::InvalidArgumentError(
        "--client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)");
  }
  if (!cert) return TransportSecurity::kPlaintext;
  return ca ? TransportSecurity::kMutualTls : TransportSecurity::kTls;
}

absl::StatusOr<TlsMaterial> LoadTlsMaterial(const TlsFiles& files) {
  absl::StatusOr<TransportSecurity> mode = TransportSecurityOf(files);
  if (!mode.ok()) return mode.status();
  TlsMaterial tls;
  tls.mode = *mode;
  if (tls.mode == TransportSecurity::kPlaintext) {
    tls.summary = "plaintext";
    return tls;
  }

  absl::StatusOr<std::string> cert_pem = ReadPem("tls-cert", files.cert_file);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem = ReadPem("tls-key", files.key_file);
  if (!key_pem.ok()) return key_pem.status();

  std::vector<X509Ptr> chain = ReadCertificates(*cert_pem);
  if (chain.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-cert: ", files.cert_file, " holds no PEM certificate"));
  }
  X509* leaf = chain.front().get();
  BioPtr key_bio = MemoryBio(*key_pem);
  KeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key: ", files.key_file,
                     " holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(leaf, key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key: ", files.key_file,
        " does not match the certificate in --tls-cert ", files.cert_file));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--tls-cert: ", files.cert_file, " expired at ",
                     TimeText(X509_get0_notAfter(leaf))));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--tls-cert: ", files.cert_file, " is not valid before ",
                     TimeText(X509_get0_notBefore(leaf))));
  }
  tls.summary = absl::StrCat(
      TransportSecurityName(tls.mode), "; certificate subject=", Subject(leaf),
      ", not after ", TimeText(X509_get0_notAfter(leaf)));
  tls.cert_pem = *std::move(cert_pem);
  tls.key_pem = *std::move(key_pem);
  if (tls.mode == TransportSecurity::kMutualTls) {
    absl::StatusOr<std::string> ca_pem =
        ReadPem("client-ca", files.client_ca_file);
    if (!ca_pem.ok()) return ca_pem.status();
    const size_t ca_count = ReadCertificates(*ca_pem).size();
    if (ca_count == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--client-ca: ", files.client_ca_file, " holds no PEM certificate"));
    }
    tls.client_ca_pem = *std::move(ca_pem);
    absl::StrAppend(&tls.summary, "; ", ca_count, " client CA certificate",
                    ca_count == 1 ? "" : "s");
  }
  return tls;
}

}  // namespace leasekeeper::security
