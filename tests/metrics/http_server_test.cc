#include "metrics/http_server.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "metrics/testing/exposition_parser.h"
#include "metrics/testing/http_get.h"

namespace leasekeeper::metrics {
namespace {

using testing::Exposition;
using testing::HttpGet;
using testing::HttpRequest;
using testing::HttpResponse;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    counter_ =
        *registry_.AddCounter("leasekeeper_releases_total", "Leases released.");
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
        MetricsHttpServer::Start("127.0.0.1:0", registry_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  Registry registry_;
  Counter* counter_ = nullptr;
  std::unique_ptr<MetricsHttpServer> server_;
};

TEST_F(HttpServerTest, PortZeroBindsAFreeLoopbackPort) {
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(server_->address(), "127.0.0.1:" + std::to_string(server_->port()));
}

TEST_F(HttpServerTest, GetMetricsServesTheCurrentExposition) {
  counter_->Increment(2);
  absl::StatusOr<HttpResponse> response = HttpGet(server_->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->headers["content-type"], kExpositionContentType);
  absl::StatusOr<Exposition> parsed = Exposition::Parse(response->body);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("leasekeeper_releases_total"), 2);

  counter_->Increment();
  response = HttpGet(server_->port(), "/metrics");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(
      Exposition::Parse(response->body)->Value("leasekeeper_releases_total"),
      3);
}

TEST_F(HttpServerTest, HeadSendsHeadersWithoutBody) {
  absl::StatusOr<HttpResponse> response =
      HttpRequest(server_->port(), "HEAD", "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "");
  EXPECT_NE(response->headers["content-length"], "0");
}

TEST_F(HttpServerTest, OtherPathsAre404AndOtherMethods405) {
  absl::StatusOr<HttpResponse> response = HttpGet(server_->port(), "/");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 404);
  response = HttpGet(server_->port(), "/metrics/extra");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 404);
  response = HttpRequest(server_->port(), "POST", "/metrics");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->headers["allow"], "GET, HEAD");
}

TEST_F(HttpServerTest, ABoundPortIsUnavailableToASecondServer) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> second =
      MetricsHttpServer::Start(server_->address(), registry_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(server_->address()),
            std::string::npos);
}

TEST_F(HttpServerTest, StoppedServerRefusesConnections) {
  const int port = server_->port();
  server_.reset();
  EXPECT_EQ(HttpGet(port, "/metrics").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(HttpServerAddressTest, MalformedAddressesAreInvalidArgument) {
  Registry registry;
  for (const char* address :
       {"", "127.0.0.1", ":9464", "127.0.0.1:", "127.0.0.1:65536",
        "127.0.0.1:x", "127.0.0.1:-1", "[::1", "[::1]9464"}) {
    EXPECT_EQ(MetricsHttpServer::Start(address, registry).status().code(),
              absl::StatusCode::kInvalidArgument)
        << address;
  }
}

TEST(HttpServerAddressTest, ResolvesLocalhostAndIpv6Literals) {
  Registry registry;
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start("localhost:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  // IPv6 may be disabled in a container; only check it does not crash and
  // reports an address in brackets when it works.
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> v6 =
      MetricsHttpServer::Start("[::1]:0", registry);
  if (v6.ok()) {
    EXPECT_EQ((*v6)->address().rfind("[::1]:", 0), 0u);
  }
}

}  // namespace
}  // namespace leasekeeper::metrics
