#include "client/ctl/transport_probe.h"

#include <netdb.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "client/host_port.h"

namespace leasekeeper::ctl {
namespace {

// A connected TCP socket with `timeout` on every read and write; -1 if the
// target cannot be parsed or reached.
int Connect(absl::string_view target, absl::Duration timeout) {
  absl::StatusOr<client::HostPort> parsed = client::ParseHostPort(target, 1);
  if (!parsed.ok()) return -1;  // also dns: and unix: targets: not probed
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(parsed->host.c_str(), absl::StrCat(parsed->port).c_str(),
                  &hints, &found) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* address = found; address != nullptr && fd < 0;
       address = address->ai_next) {
    fd = socket(address->ai_family, address->ai_socktype, address->ai_protocol);
    if (fd < 0) continue;
    const timeval limit = absl::ToTimeval(timeout);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    if (connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};

}  // namespace

bool PortSpeaksTls(absl::string_view target, absl::Duration timeout) {
  const int fd = Connect(target, timeout);
  if (fd < 0) return false;
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  std::unique_ptr<SSL, SslFree> ssl(ctx ? SSL_new(ctx.get()) : nullptr);
  bool tls = false;
  if (ssl != nullptr) {
    SSL_set_verify(ssl.get(), SSL_VERIFY_NONE, nullptr);
    SSL_set_fd(ssl.get(), fd);
    // A server that asks for a client certificate may refuse the handshake
    // once it sees none; it has sent its own certificate by then.
    tls = SSL_connect(ssl.get()) == 1 ||
          SSL_get0_peer_certificate(ssl.get()) != nullptr;
  }
  close(fd);
  return tls;
}

bool PortSpeaksPlaintextHttp2(absl::string_view target,
                              absl::Duration timeout) {
  const int fd = Connect(target, timeout);
  if (fd < 0) return false;
  // The client preface and an empty SETTINGS frame (RFC 9113, 3.4 and 6.5).
  static constexpr char kPreface[] =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
  bool http2 = false;
  if (write(fd, kPreface, sizeof(kPreface) - 1) ==
      static_cast<ssize_t>(sizeof(kPreface) - 1)) {
    // The server's preface is a SETTINGS frame: 3 length bytes, type 4.
    unsigned char header[9];
    size_t got = 0;
    while (got < sizeof(header)) {
      const ssize_t n = read(fd, header + got, sizeof(header) - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    http2 = got == sizeof(header) && header[3] == 0x04;
  }
  close(fd);
  return http2;
}

std::optional<std::string> ExplainTlsMismatch(absl::string_view target,
                                              bool used_tls,
                                              absl::Duration timeout) {
  if (!used_tls && PortSpeaksTls(target, timeout)) {
    return absl::StrCat(
        target,
        " speaks TLS but this call was plaintext: give --ca FILE (or "
        "LEASEKEEPER_CA), and under mutual TLS --cert and --key too");
  }
  if (used_tls && PortSpeaksPlaintextHttp2(target, timeout)) {
    return absl::StrCat(target,
                        " speaks plaintext but this call used TLS: drop --tls, "
                        "--ca, --cert and --key (and LEASEKEEPER_TLS, "
                        "LEASEKEEPER_CA, LEASEKEEPER_CERT, LEASEKEEPER_KEY)");
  }
  return std::nullopt;
}

}  // namespace leasekeeper::ctl
