// leasekeeper-cluster-bench: cluster mode's figures on this machine, with
// real processes on loopback ports (tests/cluster/cluster_harness.h starts
// a three-member etcd and three leasekeeperd nodes):
//
//  1. failover: SIGKILL the leader, then time until the first Acquire is
//     granted by the new leader (the client tries every node, following
//     NOT_LEADER's leader address, every 5 ms); the killed node is started
//     again as a follower before the next round. --kills rounds.
//  2. batching: --clients threads each run Acquire+Release pairs on a lock
//     of their own against the leader for --seconds; etcd transactions per
//     operation = the leader's leasekeeper_etcd_transactions_total over
//     the operations (records per transaction the other way round).
//  3. space: --held locks acquired and held (long ttl, 1,000 per client),
//     then the log's bytes in etcd (sum of key + value sizes under
//     /leasekeeper/<cluster>/log/) and etcd's database size (Maintenance
//     Status dbSize, before any compaction or defragmentation) per lock.
//
// Usage: leasekeeper-cluster-bench [--kills 10] [--clients 64]
//        [--seconds 5] [--held 20000]
// Prints one line per figure; bench/README.md ("Cluster mode") has the
// results and conditions.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "storage/etcd_client.h"
#include "storage/etcd_keys.h"
#include "tests/cluster/cluster_harness.h"

namespace {

namespace pb = ::leasekeeper::v1;
using leasekeeper::testing::EtcdCluster;
using leasekeeper::testing::LeasekeeperCluster;
using leasekeeper::testing::TempDir;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct Options {
  int kills = 10;
  int clients = 64;
  int seconds = 5;
  int held = 20'000;
};

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    int value = 0;
    if (!absl::SimpleAtoi(argv[i + 1], &value) || value < 0) continue;
    const std::string flag = argv[i];
    if (flag == "--kills") options.kills = value;
    if (flag == "--clients") options.clients = value;
    if (flag == "--seconds") options.seconds = value;
    if (flag == "--held") options.held = value;
  }
  return options;
}

// Acquire on `address`; sets *leader from NOT_LEADER's metadata.
bool TryAcquire(const std::string& address, const std::string& client,
                const std::string& lock, int64_t ttl_ms, std::string* leader,
                uint64_t* token = nullptr) {
  auto stub = pb::LockService::NewStub(leasekeeper::testing::NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(1000));
  pb::AcquireRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  pb::AcquireResponse response;
  const grpc::Status status = stub->Acquire(&context, request, &response);
  if (leader != nullptr) *leader = leasekeeper::testing::LeaderMetadata(context);
  if (token != nullptr && response.has_granted()) {
    *token = response.granted().token();
  }
  return status.ok() && response.has_granted();
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(
      values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  return values[index];
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  TempDir dir;
  std::unique_ptr<EtcdCluster> etcd = EtcdCluster::Start(dir.path());
  if (etcd == nullptr) return 1;
  std::unique_ptr<LeasekeeperCluster> cluster =
      LeasekeeperCluster::Start(dir.path(), etcd->endpoints(), 3);
  if (cluster == nullptr) return 1;

  // 1. Failover.
  std::vector<double> failovers_ms;
  for (int round = 0; round < options.kills; ++round) {
    const int leader = cluster->WaitForLeader(milliseconds(20'000));
    if (leader < 0) {
      std::fprintf(stderr, "no leader in round %d\n", round);
      return 1;
    }
    const std::string lock = absl::StrCat("failover-", round);
    const auto killed = steady_clock::now();
    cluster->Kill(leader);
    std::string next;
    int rotate = leader;
    while (true) {
      if (next.empty() || next == cluster->address(leader)) {
        rotate = (rotate + 1) % 3;
        if (rotate == leader) rotate = (rotate + 1) % 3;
        next = cluster->address(rotate);
      }
      std::string redirect;
      if (TryAcquire(next, "probe", lock, 1000, &redirect)) break;
      next = redirect;
      std::this_thread::sleep_for(milliseconds(5));
      if (steady_clock::now() - killed > std::chrono::seconds(30)) {
        std::fprintf(stderr, "no grant 30 s after the kill\n");
        return 1;
      }
    }
    failovers_ms.push_back(
        std::chrono::duration<double, std::milli>(steady_clock::now() - killed)
            .count());
    std::printf("failover round %d: %.0f ms\n", round, failovers_ms.back());
    std::fflush(stdout);
    if (!cluster->Restart(leader)) return 1;
  }
  if (!failovers_ms.empty()) {
    std::printf(
        "failover (SIGKILL leader -> first grant on the new leader), %zu "
        "kills: p50 %.0f ms, max %.0f ms\n",
        failovers_ms.size(), Percentile(failovers_ms, 0.5),
        *std::max_element(failovers_ms.begin(), failovers_ms.end()));
  }

  const int leader = cluster->WaitForLeader(milliseconds(20'000));
  if (leader < 0) return 1;
  const std::string leader_address = cluster->address(leader);
  std::optional<pb::ClusterStatusResponse> status = cluster->Status(leader);

  // 2. Batching at --clients clients.
  if (options.clients > 0 && options.seconds > 0) {
    leasekeeper::storage::EtcdClientOptions etcd_options;
    etcd_options.endpoints = etcd->endpoint_list();
    std::unique_ptr<leasekeeper::storage::EtcdClient> client =
        *leasekeeper::storage::EtcdClient::Connect(etcd_options);
    auto revision = [&]() -> int64_t {
      etcdserverpb::RangeRequest probe;
      probe.set_key("/");
      probe.set_limit(1);
      probe.set_keys_only(true);
      absl::StatusOr<etcdserverpb::RangeResponse> got = client->Range(probe);
      return got.ok() ? got->header().revision() : 0;
    };
    // The members' own reports (a put every 200 ms each) move the revision
    // too: measured idle first and taken off.
    const int64_t idle_start = revision();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double idle_per_second =
        static_cast<double>(revision() - idle_start) / 2.0;
    status = cluster->Status(leader);
    const uint64_t records_before = status.has_value() ? status->last_position() : 0;
    const int64_t revision_before = revision();
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> pairs{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < options.clients; ++t) {
      threads.emplace_back([&, t] {
        auto stub = pb::LockService::NewStub(
            leasekeeper::testing::NewChannel(leader_address));
        const std::string client_id = absl::StrCat("load", t);
        const std::string lock = absl::StrCat("load-lock-", t);
        while (!stop.load()) {
          grpc::ClientContext acquire_context;
          pb::AcquireRequest acquire;
          acquire.set_client_id(client_id);
          acquire.set_lock(lock);
          acquire.set_ttl_ms(10'000);
          pb::AcquireResponse granted;
          if (!stub->Acquire(&acquire_context, acquire, &granted).ok()) continue;
          grpc::ClientContext release_context;
          pb::ReleaseRequest release;
          release.set_client_id(client_id);
          release.set_lock(lock);
          pb::ReleaseResponse released;
          if (stub->Release(&release_context, release, &released).ok()) {
            pairs.fetch_add(1);
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::seconds(options.seconds));
    stop.store(true);
    for (std::thread& thread : threads) thread.join();
    const int64_t raw_revisions = revision() - revision_before;
    const int64_t revisions = std::max<int64_t>(
        1, raw_revisions - static_cast<int64_t>(idle_per_second *
                                                options.seconds));
    std::optional<pb::ClusterStatusResponse> after = cluster->Status(leader);
    const uint64_t records =
        after.has_value() ? after->last_position() - records_before : 0;
    const double operations = 2.0 * static_cast<double>(pairs.load());
    std::printf(
        "batching at %d clients for %d s: %.0f pairs/s, %llu log records, "
        "%lld etcd revisions (%lld less %.1f/s of member reports): %.3f "
        "etcd transactions per operation, %.1f records per transaction\n",
        options.clients, options.seconds,
        static_cast<double>(pairs.load()) / options.seconds,
        static_cast<unsigned long long>(records),
        static_cast<long long>(revisions),
        static_cast<long long>(raw_revisions), idle_per_second,
        operations > 0 ? static_cast<double>(revisions) / operations : 0,
        revisions > 0 ? static_cast<double>(records) /
                            static_cast<double>(revisions)
                      : 0);
    std::fflush(stdout);
  }

  // 3. Space per held lock.
  if (options.held > 0) {
    leasekeeper::storage::EtcdClientOptions etcd_options;
    etcd_options.endpoints = etcd->endpoint_list();
    std::unique_ptr<leasekeeper::storage::EtcdClient> client =
        *leasekeeper::storage::EtcdClient::Connect(etcd_options);
    const leasekeeper::storage::ClusterKeys keys("test");
    auto log_bytes = [&]() -> uint64_t {
      uint64_t bytes = 0;
      std::string start = keys.log_prefix();
      const std::string end = leasekeeper::storage::PrefixRangeEnd(start);
      while (true) {
        etcdserverpb::RangeRequest page;
        page.set_key(start);
        page.set_range_end(end);
        page.set_limit(500);
        absl::StatusOr<etcdserverpb::RangeResponse> got = client->Range(page);
        if (!got.ok()) return bytes;
        for (const mvccpb::KeyValue& kv : got->kvs()) {
          bytes += kv.key().size() + kv.value().size();
          start = kv.key() + std::string(1, '\0');
        }
        if (!got->more()) return bytes;
      }
    };
    auto db_size = [&]() -> int64_t {
      auto maintenance = etcdserverpb::Maintenance::NewStub(grpc::CreateChannel(
          etcd->endpoint_list().front(), grpc::InsecureChannelCredentials()));
      grpc::ClientContext context;
      etcdserverpb::StatusResponse response;
      if (!maintenance->Status(&context, etcdserverpb::StatusRequest(), &response)
               .ok()) {
        return -1;
      }
      return response.dbsize();
    };
    const uint64_t bytes_before = log_bytes();
    const int64_t db_before = db_size();
    const auto start = steady_clock::now();
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < options.clients; ++t) {
      threads.emplace_back([&] {
        auto stub = pb::LockService::NewStub(
            leasekeeper::testing::NewChannel(leader_address));
        while (true) {
          const int i = next.fetch_add(1);
          if (i >= options.held) return;
          grpc::ClientContext context;
          pb::AcquireRequest acquire;
          acquire.set_client_id(absl::StrCat("holder", i / 1000));
          acquire.set_lock(absl::StrCat("held/", i));
          acquire.set_ttl_ms(3'600'000);
          pb::AcquireResponse granted;
          (void)stub->Acquire(&context, acquire, &granted);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    const double took =
        std::chrono::duration<double>(steady_clock::now() - start).count();
    const uint64_t bytes_after = log_bytes();
    const int64_t db_after = db_size();
    std::printf(
        "space: %d held locks (acquired in %.1f s): log in etcd +%llu bytes "
        "(%.1f bytes per lock, keys and values), etcd db +%lld bytes (%.1f "
        "bytes per lock, before compaction/defrag)\n",
        options.held, took,
        static_cast<unsigned long long>(bytes_after - bytes_before),
        static_cast<double>(bytes_after - bytes_before) / options.held,
        static_cast<long long>(db_after - db_before),
        static_cast<double>(db_after - db_before) / options.held);
  }
  return 0;
}
