// Server addresses (client/host_port.h, ParseEndpoints in client/channel.h):
// the forms accepted, the reasons an address is refused, and that the
// library's constructors refuse a bad address before any I/O, with the
// documented text `invalid server address "ADDR": REASON`.
#include <string>
#include <vector>

#include "client/channel.h"
#include "client/client.h"
#include "client/host_port.h"
#include "client/rpc_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leasekeeper::client {
namespace {

using ::testing::ElementsAre;

TEST(ServerAddressTest, HostPortSplitsNamesIpv4AndBracketedIpv6) {
  absl::StatusOr<HostPort> parsed = ParseHostPort("locks.internal:7233", 1);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "locks.internal");
  EXPECT_EQ(parsed->port, 7233);
  EXPECT_FALSE(parsed->ipv6);
  parsed = ParseHostPort("[fe80::1%eth0]:65535", 1);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "fe80::1%eth0");
  EXPECT_EQ(parsed->port, 65535);
  EXPECT_TRUE(parsed->ipv6);
  EXPECT_TRUE(ParseHostPort("127.0.0.1:1", 1).ok());
}

TEST(ServerAddressTest, PortZeroIsTakenOnlyWhereItMeansPickOne) {
  EXPECT_TRUE(ParseHostPort("127.0.0.1:0", 0).ok());  // the daemon's --listen
  EXPECT_EQ(ParseHostPort("127.0.0.1:0", 1).status().message(),
            "port out of range (1-65535)");
}

TEST(ServerAddressTest, EachRefusalHasItsDocumentedReason) {
  struct Case {
    const char* address;
    const char* reason;
  } cases[] = {
      {"127.0.0.1:99999", "port out of range (1-65535)"},
      {"127.0.0.1:65536", "port out of range (1-65535)"},
      {"127.0.0.1:0", "port out of range (1-65535)"},
      {"127.0.0.1:-1", "port out of range (1-65535)"},
      {"127.0.0.1:http", "port out of range (1-65535)"},
      {"127.0.0.1:99999999999999999999999", "port out of range (1-65535)"},
      {"127.0.0.1", "missing port"},
      {"127.0.0.1:", "missing port"},
      {"[::1]", "missing port"},
      {"[::1]:", "missing port"},
      {":7233", "empty host"},
      {"http://127.0.0.1:7233", "scheme not supported; write host:port"},
      {"https://locks.internal", "scheme not supported; write host:port"},
      {"::1:7233", "malformed IPv6 address"},
      {"[::1:7233", "malformed IPv6 address"},
      {"[not-v6]:7233", "malformed IPv6 address"},
      {"[]:7233", "malformed IPv6 address"},
      {"[::1]7233", "malformed IPv6 address"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<HostPort> parsed = ParseHostPort(c.address, 1);
    ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << c.address;
    EXPECT_EQ(parsed.status().message(), c.reason) << c.address;
  }
}

TEST(ServerAddressTest, ListsTakeHostPortDnsAndUnixForms) {
  absl::StatusOr<std::vector<std::string>> list = ParseEndpoints(
      "a:1, [::1]:7233 ,dns:///locks.svc:7233,dns:b:2,"
      "dns://10.0.0.53/c:3,unix:/run/leasekeeper.sock");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(*list, ElementsAre("a:1", "[::1]:7233", "dns:///locks.svc:7233",
                                 "dns:b:2", "dns://10.0.0.53/c:3",
                                 "unix:/run/leasekeeper.sock"));
}

TEST(ServerAddressTest, EveryEntryOfAListIsCheckedAndTheBadOneNamed) {
  struct Case {
    const char* list;
    const char* message;
  } cases[] = {
      {"127.0.0.1:99999",
       "invalid server address \"127.0.0.1:99999\": port out of range "
       "(1-65535)"},
      {"a:1, 127.0.0.1 ,c:3",
       "invalid server address \"127.0.0.1\": missing port"},
      {"http://127.0.0.1:7233",
       "invalid server address \"http://127.0.0.1:7233\": scheme not "
       "supported; write host:port"},
      {"ipv4:127.0.0.1:7233",
       "invalid server address \"ipv4:127.0.0.1:7233\": scheme not "
       "supported; write host:port"},
      {"dns:///locks.svc", "invalid server address \"dns:///locks.svc\": "
                           "missing port"},
      {"dns:locks.svc:0", "invalid server address \"dns:locks.svc:0\": "
                          "port out of range (1-65535)"},
      {"dns://10.0.0.53", "invalid server address \"dns://10.0.0.53\": "
                          "missing port"},
      {"unix:", "invalid server address \"unix:\": empty host"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<std::string>> list = ParseEndpoints(c.list);
    ASSERT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument)
        << c.list;
    EXPECT_EQ(list.status().message(), c.message) << c.list;
  }
}

TEST(ServerAddressTest, ConnectRefusesABadAddressBeforeAnyCall) {
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect("127.0.0.1:99999");
  ASSERT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.status().message(),
            "invalid server address \"127.0.0.1:99999\": port out of range "
            "(1-65535)");
  absl::StatusOr<std::unique_ptr<RpcClient>> rpc =
      RpcClient::Connect("a:1,http://b:2");
  ASSERT_EQ(rpc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rpc.status().message(),
            "invalid server address \"http://b:2\": scheme not supported; "
            "write host:port");
}

}  // namespace
}  // namespace leasekeeper::client
