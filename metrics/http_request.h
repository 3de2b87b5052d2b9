// The HTTP/1.x rules of the /metrics server, as pure functions: where a
// request head ends, what each request is answered, and the bytes of the
// answer. The server reads no request body and closes every connection
// after one response (`Connection: close`).
//
// Answers (the path is the request target up to any `?`):
//   GET  /metrics          200, the exposition, Content-Type
//                          "text/plain; version=0.0.4; charset=utf-8"
//   HEAD /metrics          200, the same headers, no body
//   other method /metrics  405, `Allow: GET, HEAD`
//   any method elsewhere   404 (no body for HEAD)
//   a malformed request line                      400
//   a version other than HTTP/1.0 or HTTP/1.1     505
//   a head longer than the server's limit         431 (HeaderTooLarge)
// Every answer has Content-Length and `Connection: close`; the body of an
// error is one short line of text. No compression: Accept-Encoding is
// ignored.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_METRICS_HTTP_REQUEST_H_
#define LEASEKEEPER_METRICS_HTTP_REQUEST_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace leasekeeper::metrics {

inline constexpr absl::string_view kMetricsPath = "/metrics";
inline constexpr absl::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// The size of the request head at the start of `buffer`, blank line
// included, or nullopt while it is incomplete. `searched` bytes at the
// start are known to hold no end (pass the previous buffer size, so that a
// trickled head costs O(bytes) overall, not O(bytes^2)).
std::optional<size_t> RequestHeadSize(absl::string_view buffer,
                                      size_t searched = 0);

struct Answer {
  int status = 0;
  bool metrics = false;   // the exposition is the body (status 200)
  bool send_body = true;  // false for HEAD: headers only
};

// The answer to a complete request head (as RequestHeadSize delimits it).
Answer AnswerRequest(absl::string_view head);

// The answer to a head that exceeded the server's size limit.
inline Answer HeaderTooLarge() { return Answer{.status = 431}; }

// The bytes of `answer`: status line, headers, and `body` for metrics
// answers (its length is the Content-Length, also for HEAD). Error answers
// bring their own one-line body and ignore `body`.
std::string FormatResponse(const Answer& answer, absl::string_view body);

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_HTTP_REQUEST_H_
