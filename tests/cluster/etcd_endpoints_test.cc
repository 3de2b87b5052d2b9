// ParseEtcdEndpoints and ChannelTargets: the forms etcd and etcdctl write,
// and what every other form is told.
#include "cluster/etcd_endpoints.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leasekeeper::storage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Scheme = EtcdEndpoints::Scheme;

TEST(EtcdEndpointsTest, HostPortAndUrlFormsGiveTheSameAddresses) {
  for (const auto& [list, scheme] :
       std::vector<std::pair<std::vector<std::string>, Scheme>>{
           {{"127.0.0.1:2379", "127.0.0.1:2380"}, Scheme::kBare},
           {{"http://127.0.0.1:2379", "http://127.0.0.1:2380/"}, Scheme::kHttp},
           {{"https://127.0.0.1:2379", "https://127.0.0.1:2380"},
            Scheme::kHttps}}) {
    absl::StatusOr<EtcdEndpoints> parsed = ParseEtcdEndpoints(list);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->scheme, scheme);
    EXPECT_THAT(parsed->addresses,
                ElementsAre("127.0.0.1:2379", "127.0.0.1:2380"));
    EXPECT_THAT(ChannelTargets(*parsed),
                ElementsAre("ipv4:127.0.0.1:2379,127.0.0.1:2380"));
  }
}

TEST(EtcdEndpointsTest, NamesGoThroughDnsOneChannelEach) {
  absl::StatusOr<EtcdEndpoints> one =
      ParseEtcdEndpoints({"https://etcd.example.svc:2379"});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(ChannelTargets(*one),
              ElementsAre("dns:///etcd.example.svc:2379"));
  absl::StatusOr<EtcdEndpoints> mixed =
      ParseEtcdEndpoints({"etcd-0.etcd:2379", "10.0.0.2:2379", "[::1]:2379"});
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_THAT(ChannelTargets(*mixed),
              ElementsAre("dns:///etcd-0.etcd:2379", "ipv4:10.0.0.2:2379",
                          "ipv6:[::1]:2379"));
  absl::StatusOr<EtcdEndpoints> v6 =
      ParseEtcdEndpoints({"http://[::1]:2379", "http://[fe80::1]:2379"});
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_THAT(ChannelTargets(*v6),
              ElementsAre("ipv6:[::1]:2379,[fe80::1]:2379"));
}

TEST(EtcdEndpointsTest, OtherFormsAreRefusedNamingTheEndpoint) {
  for (const std::string& bad : std::vector<std::string>{
           "", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
           "127.0.0.1:23x9", ":2379", "unix:///run/etcd.sock", "ftp://h:2379",
           "http://", "http://h:2379/v3", "http://user@h:2379", "h:2379?x=1",
           "1.2.3:2379", "300.0.0.1:2379", "[::1]", "::1:2379",
           "bad host:2379"}) {
    absl::StatusOr<EtcdEndpoints> parsed = ParseEtcdEndpoints({bad});
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()))
        << "\"" << bad << "\"";
    EXPECT_THAT(parsed.status().message(),
                HasSubstr("etcd endpoint \"" + bad + "\""));
  }
  EXPECT_TRUE(absl::IsInvalidArgument(ParseEtcdEndpoints({}).status()));
}

TEST(EtcdEndpointsTest, HttpAndHttpsAreNeverMixed) {
  for (const std::vector<std::string>& list :
       std::vector<std::vector<std::string>>{
           {"http://127.0.0.1:2379", "https://127.0.0.1:2380"},
           {"https://127.0.0.1:2379", "127.0.0.1:2380"},
           {"127.0.0.1:2379", "http://127.0.0.1:2380"}}) {
    absl::StatusOr<EtcdEndpoints> parsed = ParseEtcdEndpoints(list);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()));
    EXPECT_THAT(parsed.status().message(), HasSubstr("same scheme"));
  }
}

}  // namespace
}  // namespace leasekeeper::storage
