#include "client/ctl/certificate_identity.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::ctl {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct NamesFree {
  void operator()(GENERAL_NAMES* names) const { GENERAL_NAMES_free(names); }
};

std::string CommonName(X509* cert) {
  X509_NAME* subject = X509_get_subject_name(cert);
  const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0) return "";
  ASN1_STRING* data =
      X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  const int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return "";
  std::string name(reinterpret_cast<char*>(utf8), length);
  OPENSSL_free(utf8);
  return name;
}

std::string AsText(const ASN1_STRING* text) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                     ASN1_STRING_length(text));
}

// As gRPC renders an IP SAN: dotted IPv4, or IPv6 in colon-hex groups.
std::string IpText(const ASN1_OCTET_STRING* ip) {
  const unsigned char* bytes = ASN1_STRING_get0_data(ip);
  const int length = ASN1_STRING_length(ip);
  if (length == 4) {
    return absl::StrCat(bytes[0], ".", bytes[1], ".", bytes[2], ".", bytes[3]);
  }
  if (length == 16) {
    std::string out;
    for (int i = 0; i < 16; i += 2) {
      absl::StrAppend(&out, i == 0 ? "" : ":",
                      absl::Hex((bytes[i] << 8) | bytes[i + 1]));
    }
    return out;
  }
  return "";
}

std::string FirstAlternativeName(X509* cert) {
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (names == nullptr) return "";
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    std::string text;
    switch (name->type) {
      case GEN_DNS:
        text = AsText(name->d.dNSName);
        break;
      case GEN_URI:
        text = AsText(name->d.uniformResourceIdentifier);
        break;
      case GEN_EMAIL:
        text = AsText(name->d.rfc822Name);
        break;
      case GEN_IPADD:
        text = IpText(name->d.iPAddress);
        break;
      default:
        break;
    }
    if (!text.empty()) return text;
  }
  return "";
}

}  // namespace

absl::StatusOr<std::string> CertificateIdentity(absl::string_view cert_pem) {
  std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
  std::unique_ptr<X509, X509Free> cert(
      bio == nullptr ? nullptr
                     : PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError("no PEM certificate found");
  }
  if (std::string name = CommonName(cert.get()); !name.empty()) return name;
  if (std::string name = FirstAlternativeName(cert.get()); !name.empty()) {
    return name;
  }
  return absl::InvalidArgumentError(
      "the certificate has neither a subject CN nor a DNS, URI, e-mail or IP "
      "subject alternative name");
}

std::string ClientIdFor(absl::string_view identity) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    return absl::StrCat(identity, "/unknown-host/", getpid());
  }
  return absl::StrCat(identity, "/", host, "/", getpid());
}

}  // namespace leasekeeper::ctl
