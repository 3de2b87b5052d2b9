#include "metrics/http_request.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace leasekeeper::metrics {
namespace {

TEST(RequestHeadSizeTest, TheHeadEndsAtTheFirstBlankLine) {
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nbody after";
  EXPECT_EQ(RequestHeadSize(request), request.find("body"));
  EXPECT_EQ(RequestHeadSize("GET / HTTP/1.0\n\n"), 16u);
  EXPECT_FALSE(RequestHeadSize("GET /metrics HTTP/1.1\r\nHost: x\r\n"));
}

TEST(RequestHeadSizeTest, AHeadTrickledByteByByteIsFoundWhenItCompletes) {
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string buffer;
  for (size_t i = 0; i < request.size(); ++i) {
    const size_t searched = buffer.size();
    buffer.push_back(request[i]);
    const std::optional<size_t> size = RequestHeadSize(buffer, searched);
    if (i + 1 < request.size()) {
      EXPECT_FALSE(size.has_value()) << i;
    } else {
      EXPECT_EQ(size, request.size());
    }
  }
}

struct Case {
  const char* head;
  int status;
  bool metrics;
  bool send_body;
};

TEST(AnswerRequestTest, EachRequestGetsTheDocumentedAnswer) {
  const Case cases[] = {
      {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, true, true},
      {"GET /metrics?name[]=x HTTP/1.0\r\n\r\n", 200, true, true},
      {"HEAD /metrics HTTP/1.1\r\n\r\n", 200, true, false},
      {"POST /metrics HTTP/1.1\r\n\r\n", 405, false, true},
      {"DELETE /metrics HTTP/1.1\r\n\r\n", 405, false, true},
      {"GET / HTTP/1.1\r\n\r\n", 404, false, true},
      {"GET /metrics/ HTTP/1.1\r\n\r\n", 404, false, true},
      {"GET /metricsx HTTP/1.1\r\n\r\n", 404, false, true},
      {"HEAD /other HTTP/1.1\r\n\r\n", 404, false, false},
      {"PUT /other HTTP/1.1\r\n\r\n", 404, false, true},
      {"GET /metrics HTTP/2.0\r\n\r\n", 505, false, true},
      {"PRI * HTTP/2.0\r\n\r\n", 505, false, true},
      {"GET /metrics\r\n\r\n", 400, false, true},
      {"GET  /metrics HTTP/1.1\r\n\r\n", 400, false, true},
      {"G(T /metrics HTTP/1.1\r\n\r\n", 400, false, true},
      {"\r\n\r\n", 400, false, true},
      {"\x16\x03\x01\x02\x00\x01\n\n", 400, false, true},
  };
  for (const Case& c : cases) {
    const Answer answer = AnswerRequest(c.head);
    EXPECT_EQ(answer.status, c.status) << c.head;
    EXPECT_EQ(answer.metrics, c.metrics) << c.head;
    EXPECT_EQ(answer.send_body, c.send_body) << c.head;
  }
}

TEST(FormatResponseTest, MetricsAnswersCarryTheExpositionAndItsLength) {
  const std::string get = FormatResponse(
      Answer{.status = 200, .metrics = true, .send_body = true}, "x 1\n");
  EXPECT_EQ(get,
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: 4\r\n"
            "Connection: close\r\n\r\n"
            "x 1\n");
  const std::string head = FormatResponse(
      Answer{.status = 200, .metrics = true, .send_body = false}, "x 1\n");
  EXPECT_TRUE(absl::StrContains(head, "Content-Length: 4\r\n")) << head;
  EXPECT_TRUE(absl::EndsWith(head, "\r\n\r\n")) << head;
}

TEST(FormatResponseTest, ErrorAnswersNeverCarryTheExposition) {
  for (int status : {400, 404, 405, 431, 505}) {
    const std::string response =
        FormatResponse(Answer{.status = status}, "secret_series 1\n");
    EXPECT_TRUE(
        absl::StartsWith(response, "HTTP/1.1 " + std::to_string(status) + " "))
        << response;
    EXPECT_FALSE(absl::StrContains(response, "secret_series")) << response;
    EXPECT_TRUE(absl::StrContains(response, "Connection: close\r\n"));
    EXPECT_EQ(absl::StrContains(response, "Allow: GET, HEAD\r\n"),
              status == 405)
        << response;
  }
}

}  // namespace
}  // namespace leasekeeper::metrics
