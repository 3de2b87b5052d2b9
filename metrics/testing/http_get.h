// HttpGet: a minimal blocking HTTP/1.1 client for tests (any method with
// `Connection: close`, no redirects, no chunked decoding: the body is
// everything until the server closes).
//
// Thread-safety: a pure function.
#ifndef LEASEKEEPER_METRICS_TESTING_HTTP_GET_H_
#define LEASEKEEPER_METRICS_TESTING_HTTP_GET_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leasekeeper::metrics::testing {

struct HttpResponse {
  int status = 0;
  // Header names lower-cased.
  std::map<std::string, std::string> headers;
  std::string body;
};

// Sends `method` `path` to 127.0.0.1:`port` and reads the whole response.
// Outcomes: the response; UNAVAILABLE if the connection fails;
// DATA_LOSS if the response is not HTTP.
absl::StatusOr<HttpResponse> HttpRequest(int port, absl::string_view method,
                                         absl::string_view path);

inline absl::StatusOr<HttpResponse> HttpGet(int port, absl::string_view path) {
  return HttpRequest(port, "GET", path);
}

}  // namespace leasekeeper::metrics::testing

#endif  // LEASEKEEPER_METRICS_TESTING_HTTP_GET_H_
