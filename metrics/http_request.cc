#include "metrics/http_request.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace leasekeeper::metrics {
namespace {

absl::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 505:
      return "HTTP Version Not Supported";
  }
  return "Error";
}

bool IsToken(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        absl::string_view("!#$%&'*+-.^_`|~").find(c) ==
            absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<size_t> RequestHeadSize(absl::string_view buffer,
                                      size_t searched) {
  // Back up so that a blank line split across two reads is found.
  size_t from = searched >= 3 ? searched - 3 : 0;
  for (size_t i = buffer.find('\n', from); i != absl::string_view::npos;
       i = buffer.find('\n', i + 1)) {
    if (i >= 1 && buffer[i - 1] == '\n') return i + 1;
    if (i >= 2 && buffer[i - 1] == '\r' && buffer[i - 2] == '\n') return i + 1;
  }
  return std::nullopt;
}

Answer AnswerRequest(absl::string_view head) {
  const size_t line_end = head.find('\n');
  absl::string_view line = head.substr(0, line_end);
  if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
  const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !IsToken(parts[0]) || parts[1].empty() ||
      !absl::StartsWith(parts[2], "HTTP/")) {
    return Answer{.status = 400};
  }
  if (parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0") {
    return Answer{.status = 505};
  }
  const absl::string_view method = parts[0];
  const bool head_only = method == "HEAD";
  const absl::string_view path = parts[1].substr(0, parts[1].find('?'));
  if (path != kMetricsPath)
    return Answer{.status = 404, .send_body = !head_only};
  if (method != "GET" && !head_only) return Answer{.status = 405};
  return Answer{.status = 200, .metrics = true, .send_body = !head_only};
}

std::string FormatResponse(const Answer& answer, absl::string_view body) {
  std::string error_body;
  if (!answer.metrics) {
    error_body =
        absl::StrCat(answer.status, " ", ReasonPhrase(answer.status),
                     answer.status == 404
                         ? absl::StrCat(": only ", kMetricsPath, " is served")
                         : "",
                     "\n");
    body = error_body;
  }
  std::string response = absl::StrCat(
      "HTTP/1.1 ", answer.status, " ", ReasonPhrase(answer.status),
      "\r\nContent-Type: ",
      answer.metrics ? kExpositionContentType : "text/plain; charset=utf-8",
      "\r\nContent-Length: ", body.size(), "\r\n");
  if (answer.status == 405) absl::StrAppend(&response, "Allow: GET, HEAD\r\n");
  absl::StrAppend(&response, "Connection: close\r\n\r\n");
  if (answer.send_body) absl::StrAppend(&response, body);
  return response;
}

}  // namespace leasekeeper::metrics
