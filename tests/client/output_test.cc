// What leasekeeper-ctl prints: aligned tables for people, JSON for scripts.
#include "client/ctl/output.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace leasekeeper::ctl {
namespace {

using client::HolderInfo;
using client::LockInfo;
using client::LockMode;
using client::WaiterInfo;

LockInfo SampleLock() {
  LockInfo info;
  HolderInfo holder;
  holder.client_id = "etl-c";
  holder.lock = "exports/daily";
  holder.mode = LockMode::kExclusive;
  holder.token = 3;
  holder.expires_in = absl::Milliseconds(29500);
  holder.holder_label = "pod-7";
  info.holders.push_back(holder);
  WaiterInfo waiter;
  waiter.client_id = "etl-d";
  waiter.mode = LockMode::kShared;
  waiter.ttl = absl::Seconds(20);
  waiter.position = 1;
  info.queue.push_back(waiter);
  return info;
}

client::WatchUpdate SampleEvent() {
  client::WatchUpdate update;
  update.kind = client::WatchUpdate::Kind::kEvent;
  update.event.kind = client::WatchEventKind::kGranted;
  update.event.lock = "exports/daily";
  update.event.client_id = "etl-d";
  update.event.mode = LockMode::kShared;
  update.event.token = 4;
  update.event.ttl = absl::Seconds(20);
  update.event.time = absl::FromUnixMillis(1'764'589'407'123);
  update.event.sequence = 1042;
  return update;
}

TEST(OutputTest, WatchLinesShowTheSnapshotThenOneLinePerChange) {
  client::WatchUpdate current;
  current.kind = client::WatchUpdate::Kind::kCurrent;
  current.lock = "exports/daily";
  current.current = SampleLock();
  EXPECT_EQ(FormatWatchUpdate(current, OutputFormat::kTable),
            "current exports/daily holder etl-c exclusive token=3 "
            "expires_in=29.5s\n"
            "current exports/daily waiter etl-d shared position=1 ttl=20s\n");
  client::WatchUpdate synced;
  synced.kind = client::WatchUpdate::Kind::kSynced;
  synced.sequence = 1041;
  synced.locks = 1;
  EXPECT_EQ(FormatWatchUpdate(synced, OutputFormat::kTable),
            "synced sequence=1041 locks=1\n");
  EXPECT_EQ(FormatWatchUpdate(SampleEvent(), OutputFormat::kTable),
            "2025-12-01T11:43:27.123+00:00 #1042 granted exports/daily etl-d "
            "shared token=4 ttl=20s\n");
  client::WatchUpdate withdrawn = SampleEvent();
  withdrawn.event.kind = client::WatchEventKind::kWithdrawn;
  withdrawn.event.token = 0;
  withdrawn.event.ttl = absl::ZeroDuration();
  EXPECT_EQ(FormatWatchUpdate(withdrawn, OutputFormat::kTable),
            "2025-12-01T11:43:27.123+00:00 #1042 withdrawn exports/daily "
            "etl-d shared\n");
}

TEST(OutputTest, WatchJsonIsOneObjectPerLineWithTheDocumentedShape) {
  const std::string line = FormatWatchUpdate(SampleEvent(), OutputFormat::kJson);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  nlohmann::json event = nlohmann::json::parse(line)["event"];
  EXPECT_EQ(event["kind"], "granted");
  EXPECT_EQ(event["lock"], "exports/daily");
  EXPECT_EQ(event["client"], "etl-d");
  EXPECT_EQ(event["mode"], "shared");
  EXPECT_EQ(event["token"], 4);
  EXPECT_EQ(event["ttl_ms"], 20'000);
  EXPECT_EQ(event["time"], "2025-12-01T11:43:27.123+00:00");
  EXPECT_EQ(event["sequence"], 1042);
}

TEST(OutputTest, PartitionIsALineOrADocumentedJsonObject) {
  EXPECT_EQ(FormatPartition("exports/daily", 64, false, 22,
                            OutputFormat::kTable),
            "22\n");
  EXPECT_EQ(FormatPartition("exports/daily", 64, true, 6, OutputFormat::kJson),
            "{\"count\":64,\"key\":\"exports/daily\",\"partition\":6,"
            "\"scheme\":\"consistent\"}\n");
}

TEST(OutputTest, TableColumnsAreAlignedAndLinesNotPadded) {
  EXPECT_EQ(RenderTable({{"A", "LONGER", "C"}, {"wide-cell", "x", ""}}),
            "A          LONGER  C\n"
            "wide-cell  x\n");
}

TEST(OutputTest, InspectTableShowsHoldersAndQueue) {
  EXPECT_EQ(FormatInspect("exports/daily", SampleLock(), OutputFormat::kTable),
            "lock exports/daily\n"
            "\n"
            "HOLDER  MODE       TOKEN  EXPIRES IN  LABEL\n"
            "etl-c   exclusive  3      29.5s       pod-7\n"
            "\n"
            "POSITION  WAITER  MODE    TTL  LABEL\n"
            "1         etl-d   shared  20s  -\n");
}

TEST(OutputTest, InspectJsonHasTheDocumentedShape) {
  const std::string text =
      FormatInspect("exports/daily", SampleLock(), OutputFormat::kJson);
  ASSERT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line";
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["lock"], "exports/daily");
  EXPECT_EQ(json["holders"][0]["client"], "etl-c");
  EXPECT_EQ(json["holders"][0]["token"], 3);
  EXPECT_EQ(json["holders"][0]["expires_in_ms"], 29500);
  EXPECT_TRUE(json["holders"][0]["expires_at"].is_null());
  EXPECT_EQ(json["holders"][0]["label"], "pod-7");
  EXPECT_EQ(json["queue"][0]["mode"], "shared");
  EXPECT_EQ(json["queue"][0]["ttl_ms"], 20000);
  EXPECT_EQ(json["queue"][0]["position"], 1);
}

TEST(OutputTest, InspectNamesASemaphoresCapacityInTableAndJson) {
  LockInfo info = SampleLock();
  info.capacity = 4;
  EXPECT_EQ(FormatInspect("pool", info, OutputFormat::kTable)
                .substr(0, std::string("lock pool (semaphore, capacity 4)\n")
                               .size()),
            "lock pool (semaphore, capacity 4)\n");
  EXPECT_EQ(nlohmann::json::parse(
                FormatInspect("pool", info, OutputFormat::kJson))["capacity"],
            4);
  EXPECT_TRUE(nlohmann::json::parse(FormatInspect("L", SampleLock(),
                                                  OutputFormat::kJson))
                  ["capacity"]
                      .is_null());
}

TEST(OutputTest, EmptyLockSaysSo) {
  EXPECT_EQ(FormatInspect("L", LockInfo{}, OutputFormat::kTable),
            "lock L\n\nholders: none\n\nqueue: empty\n");
}

TEST(OutputTest, ReadPrintsTheBareValueOrNothing) {
  EXPECT_EQ(FormatRead("L", "k", std::string("v1"), OutputFormat::kTable),
            "v1\n");
  EXPECT_EQ(FormatRead("L", "k", std::nullopt, OutputFormat::kTable), "");
  const nlohmann::json json = nlohmann::json::parse(
      FormatRead("L", "k", std::nullopt, OutputFormat::kJson));
  EXPECT_EQ(json["found"], false);
  EXPECT_TRUE(json["value"].is_null());
}

TEST(OutputTest, DeletedSaysWhetherTheKeyExisted) {
  EXPECT_EQ(FormatDeleted("L", "k", 3, true, OutputFormat::kTable),
            "deleted L k with token 3\n");
  EXPECT_EQ(FormatDeleted("L", "k", 3, false, OutputFormat::kTable),
            "nothing to delete under L k (token 3)\n");
  const nlohmann::json json = nlohmann::json::parse(
      FormatDeleted("L", "k", 3, false, OutputFormat::kJson));
  EXPECT_EQ(json["existed"], false);
  EXPECT_EQ(json["token"], 3);
}

TEST(OutputTest, KeysOneALineAndTheNextPageInJson) {
  const client::KeysPage page{.keys = {"a", "b"}, .next_after = "b"};
  EXPECT_EQ(FormatKeys("L", page, OutputFormat::kTable), "a\nb\n");
  EXPECT_EQ(FormatKeys("L", client::KeysPage{}, OutputFormat::kTable), "");
  nlohmann::json json =
      nlohmann::json::parse(FormatKeys("L", page, OutputFormat::kJson));
  EXPECT_EQ(json["keys"], nlohmann::json::array({"a", "b"}));
  EXPECT_EQ(json["next_after"], "b");
  json = nlohmann::json::parse(
      FormatKeys("L", client::KeysPage{}, OutputFormat::kJson));
  EXPECT_TRUE(json["keys"].empty());
  EXPECT_TRUE(json["next_after"].is_null());
}

TEST(OutputTest, JsonSurvivesValuesThatAreNotUtf8) {
  const std::string text =
      FormatRead("L", "k", std::string("\xff\xfe"), OutputFormat::kJson);
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(OutputTest, BusyJsonSaysNotAcquired) {
  const nlohmann::json json =
      nlohmann::json::parse(FormatBusy("L", "c", 2, OutputFormat::kJson));
  EXPECT_EQ(json["acquired"], false);
  EXPECT_EQ(json["busy"], true);
  EXPECT_EQ(json["position"], 2);
}

TEST(OutputTest, StatusOfAnUnregisteredClient) {
  client::ClientStatus status;
  status.session = client::SessionState::kNone;
  EXPECT_EQ(FormatStatus("ghost", status, OutputFormat::kTable),
            "client       ghost\n"
            "registered   no\n"
            "session      none\n"
            "waiting for  -\n"
            "\n"
            "holds: nothing\n");
  const nlohmann::json json =
      nlohmann::json::parse(FormatStatus("ghost", status, OutputFormat::kJson));
  EXPECT_TRUE(json["age"].is_null());
  EXPECT_TRUE(json["waiting_for"].is_null());
  EXPECT_EQ(json["holds"].size(), 0u);
}

TEST(OutputTest, StatusSaysWhatTheAgeCounts) {
  client::ClientStatus status;
  status.registered = true;
  status.age = 3;
  status.session = client::SessionState::kOpen;
  const std::string table = FormatStatus("ops", status, OutputFormat::kTable);
  EXPECT_NE(table.find("registered   yes, age 3 (its registration number: "
                       "larger is younger)\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(nlohmann::json::parse(
                FormatStatus("ops", status, OutputFormat::kJson))["age"],
            3);
}

TEST(OutputTest, LocksTableListsHoldersAndQueueLength) {
  client::LockSummary summary;
  summary.lock = "exports/daily";
  summary.holders = SampleLock().holders;
  summary.queue_length = 4;
  EXPECT_EQ(FormatLocks({summary}, OutputFormat::kTable),
            "LOCK           MODE       HOLDERS  TOKENS  QUEUE\n"
            "exports/daily  exclusive  etl-c    3       4\n");
  EXPECT_EQ(FormatLocks({}, OutputFormat::kTable),
            "no locks held or waited for\n");
}

TEST(OutputTest, ErrorsAreALineOrAJsonObjectWithCodeReasonAndMessage) {
  const absl::Status transport = absl::UnavailableError("connection refused");
  EXPECT_EQ(FormatError("inspect L", transport, OutputFormat::kTable),
            "leasekeeper-ctl: inspect L: UNAVAILABLE: connection refused\n");
  const std::string text =
      FormatError("inspect L", transport, OutputFormat::kJson);
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line";
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["error"]["code"], "UNAVAILABLE");
  EXPECT_TRUE(json["error"]["reason"].is_null());
  EXPECT_EQ(json["error"]["message"], "connection refused");
}

TEST(OutputTest, ForceReleasedListsEachLease) {
  const std::vector<ForcedRelease> released = {{"etl-a", 3, LockMode::kShared},
                                               {"etl-b", 4, LockMode::kShared}};
  EXPECT_EQ(FormatForceReleased("L", released, OutputFormat::kTable),
            "force-released L held by etl-a (token 3, shared)\n"
            "force-released L held by etl-b (token 4, shared)\n");
  const nlohmann::json json = nlohmann::json::parse(
      FormatForceReleased("L", released, OutputFormat::kJson));
  EXPECT_EQ(json["released"][1]["client"], "etl-b");
  EXPECT_EQ(json["released"][1]["token"], 4);
}

TEST(OutputTest, VersionWithoutAServerHasOnlyTheClientsPart) {
  const absl::StatusOr<ServerInfo> unreachable = absl::UnavailableError("down");
  const std::string table =
      FormatVersion("127.0.0.1:1", unreachable, OutputFormat::kTable);
  EXPECT_EQ(table.find("leasekeeper-ctl "), 0u);
  EXPECT_EQ(table.find("leasekeeperd"), std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(
      FormatVersion("127.0.0.1:1", unreachable, OutputFormat::kJson));
  EXPECT_TRUE(json["server"].is_null());
  EXPECT_FALSE(std::string(json["client"]["version"]).empty());
}

TEST(OutputTest, HealthPrintsTheProtoStatusName) {
  EXPECT_EQ(FormatHealth("h:1", "", {{"h:1", HealthStatus::kServing}},
                         OutputFormat::kTable),
            "SERVING\n");
  EXPECT_EQ(FormatHealth("h:1", "", {{"h:1", HealthStatus::kNotServing}},
                         OutputFormat::kTable),
            "NOT_SERVING\n");
  const nlohmann::json json = nlohmann::json::parse(
      FormatHealth("h:1", "leasekeeper.v1.LockService",
                   {{"h:1", HealthStatus::kUnknown}}, OutputFormat::kJson));
  EXPECT_EQ(json["server"], "h:1");
  EXPECT_EQ(json["service"], "leasekeeper.v1.LockService");
  EXPECT_EQ(json["status"], "UNKNOWN");
  ASSERT_EQ(json["nodes"].size(), 1u);
  EXPECT_EQ(json["nodes"][0]["status"], "UNKNOWN");
}

TEST(OutputTest, HealthOfSeveralNodesHasALineEachAndServesIfAnyServes) {
  const std::vector<NodeHealth> nodes = {
      {"a:1", absl::UnavailableError("connection refused")},
      {"b:1", HealthStatus::kNotServing},
      {"c:1", HealthStatus::kServing}};
  EXPECT_EQ(FormatHealth("a:1,b:1,c:1", "", nodes, OutputFormat::kTable),
            "a:1  error: UNAVAILABLE: connection refused\n"
            "b:1  NOT_SERVING\n"
            "c:1  SERVING\n");
  const nlohmann::json json = nlohmann::json::parse(
      FormatHealth("a:1,b:1,c:1", "", nodes, OutputFormat::kJson));
  EXPECT_EQ(json["server"], "a:1,b:1,c:1");
  EXPECT_EQ(json["status"], "SERVING");
  ASSERT_EQ(json["nodes"].size(), 3u);
  EXPECT_EQ(json["nodes"][0]["server"], "a:1");
  EXPECT_TRUE(json["nodes"][0]["status"].is_null());
  EXPECT_EQ(json["nodes"][0]["error"], "UNAVAILABLE: connection refused");
  EXPECT_EQ(json["nodes"][1]["status"], "NOT_SERVING");
  EXPECT_TRUE(json["nodes"][1]["error"].is_null());
  EXPECT_EQ(OverallHealth(nodes), HealthStatus::kServing);
  EXPECT_EQ(OverallHealth({nodes[0], nodes[1]}), HealthStatus::kNotServing);
  EXPECT_EQ(OverallHealth({nodes[0]}), std::nullopt);
  EXPECT_TRUE(nlohmann::json::parse(FormatHealth("a:1", "", {nodes[0]},
                                                 OutputFormat::kJson))["status"]
                  .is_null());
}

client::ClusterInfo ThreeNodes() {
  client::ClusterInfo info;
  info.cluster = "prod";
  info.node_id = "n2";
  info.role = client::MemberRole::kFollower;
  info.leader_id = "n1";
  info.leader_address = "10.0.0.1:7233";
  info.epoch = 41;
  info.last_position = 1200;
  info.members = {
      {"n1", "10.0.0.1:7233", client::MemberRole::kLeader, 1200, 0},
      {"n2", "10.0.0.2:7233", client::MemberRole::kFollower, 1190, 10},
      {"n3", "10.0.0.3:7233", client::MemberRole::kCatchingUp, 900, 300}};
  return info;
}

TEST(OutputTest, ClusterStatusTableShowsLeaderEpochAndEachMembersLag) {
  EXPECT_EQ(FormatClusterStatus(ThreeNodes(), OutputFormat::kTable),
            "cluster prod, leader n1 at 10.0.0.1:7233, epoch 41, last "
            "position 1200; answered by n2 (follower)\n"
            "NODE  ADDRESS        ROLE         APPLIED  LAG\n"
            "n1    10.0.0.1:7233  leader       1200     0\n"
            "n2    10.0.0.2:7233  follower     1190     10\n"
            "n3    10.0.0.3:7233  catching-up  900      300\n");
}

TEST(OutputTest, ClusterStatusJsonHasTheDocumentedShape) {
  const nlohmann::json json = nlohmann::json::parse(
      FormatClusterStatus(ThreeNodes(), OutputFormat::kJson));
  EXPECT_EQ(json["cluster"], "prod");
  EXPECT_EQ(json["node"], "n2");
  EXPECT_EQ(json["role"], "follower");
  EXPECT_EQ(json["leader"]["id"], "n1");
  EXPECT_EQ(json["leader"]["address"], "10.0.0.1:7233");
  EXPECT_EQ(json["epoch"], 41);
  EXPECT_EQ(json["last_position"], 1200);
  ASSERT_EQ(json["members"].size(), 3u);
  EXPECT_EQ(json["members"][2]["node"], "n3");
  EXPECT_EQ(json["members"][2]["address"], "10.0.0.3:7233");
  EXPECT_EQ(json["members"][2]["role"], "catching-up");
  EXPECT_EQ(json["members"][2]["applied_position"], 900);
  EXPECT_EQ(json["members"][2]["lag"], 300);
}

TEST(OutputTest, ClusterStatusOfASingleNodeSaysItIsNotInClusterMode) {
  client::ClusterInfo info;  // what a daemon without --cluster answers
  info.role = client::MemberRole::kLeader;
  info.leader_address = "127.0.0.1:7233";
  info.last_position = 12;
  EXPECT_EQ(FormatClusterStatus(info, OutputFormat::kTable),
            "single node at 127.0.0.1:7233, not in cluster mode (no "
            "--cluster): it serves every call itself; last position 12\n");
  const nlohmann::json json =
      nlohmann::json::parse(FormatClusterStatus(info, OutputFormat::kJson));
  EXPECT_EQ(json["cluster"], "");
  EXPECT_EQ(json["role"], "leader");
}

TEST(OutputTest, ClusterStatusWithoutALeaderSaysUnknown) {
  client::ClusterInfo info = ThreeNodes();
  info.leader_id.clear();
  info.leader_address.clear();
  info.members.clear();
  EXPECT_EQ(FormatClusterStatus(info, OutputFormat::kTable),
            "cluster prod, leader unknown, epoch 41, last position 1200; "
            "answered by n2 (follower)\n");
  EXPECT_TRUE(nlohmann::json::parse(
                  FormatClusterStatus(info, OutputFormat::kJson))["leader"]
                  .is_null());
}

TEST(OutputTest, ClusterStatusOfANodeThatCannotUseEtcdSaysWhy) {
  client::ClusterInfo info = ThreeNodes();
  info.leader_id.clear();
  info.leader_address.clear();
  info.members.clear();
  info.role = client::MemberRole::kDisconnected;
  info.etcd_error = "etcd Txn: UNAVAILABLE: connection refused";
  EXPECT_EQ(FormatClusterStatus(info, OutputFormat::kTable),
            "cluster prod, leader unknown, epoch 41, last position 1200; "
            "answered by n2 (disconnected)\n"
            "etcd: etcd Txn: UNAVAILABLE: connection refused\n");
  EXPECT_EQ(nlohmann::json::parse(FormatClusterStatus(
                info, OutputFormat::kJson))["etcd_error"],
            "etcd Txn: UNAVAILABLE: connection refused");
  EXPECT_FALSE(nlohmann::json::parse(
                   FormatClusterStatus(ThreeNodes(), OutputFormat::kJson))
                   .contains("etcd_error"));
}

}  // namespace
}  // namespace leasekeeper::ctl
