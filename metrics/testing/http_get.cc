#include "metrics/testing/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace leasekeeper::metrics::testing {

absl::StatusOr<HttpResponse> HttpRequest(int port, absl::string_view method,
                                         absl::string_view path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError(std::strerror(errno));
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("connect: ", error));
  }
  const std::string request =
      absl::StrCat(method, " ", path,
                   " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n =
        send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      return absl::UnavailableError("send failed");
    }
    sent += n;
  }
  std::string raw;
  char buffer[8192];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    raw.append(buffer, n);
  }
  close(fd);

  const size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos || !absl::StartsWith(raw, "HTTP/1.")) {
    return absl::DataLossError(absl::StrCat("not an HTTP response: ", raw));
  }
  HttpResponse response;
  std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(raw).substr(0, header_end), "\r\n");
  std::vector<absl::string_view> status_line =
      absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (status_line.size() < 2 ||
      !absl::SimpleAtoi(status_line[1], &response.status)) {
    return absl::DataLossError(absl::StrCat("bad status line: ", lines[0]));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    response.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  response.body = raw.substr(header_end + 4);
  return response;
}

}  // namespace leasekeeper::metrics::testing
