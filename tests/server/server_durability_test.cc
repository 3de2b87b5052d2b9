// Durability of the real leasekeeperd (issue 5): child daemons on a data
// dir, killed with SIGKILL or refused a disk, then restarted on the same
// dir. Marked live: they run the real clock and real fsyncs.
//
// What a restart must keep: every fencing counter at least as high as any
// token a client was told (tokens per lock only rise across everything
// acknowledged), every acknowledged store write, the ages of registered
// clients, held leases (with the restart grace) and no incompatible
// holders. What it must refuse: a second daemon on the same dir, a log
// corrupt before its tail; and after a write error, every mutation
// (UNAVAILABLE) rather than an answer that is not durable.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/session_stream.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;


Daemon StartOn(const DataDir& dir, std::vector<std::string> extra = {}) {
  extra.push_back(dir.flag());
  return StartDaemon(extra);
}

void Kill(Daemon& daemon) {
  daemon.process->Signal(SIGKILL);
  ASSERT_TRUE(daemon.process->WaitExit(milliseconds(5'000)).has_value());
}

// Starts `args` through /bin/sh and returns its exit status (the daemon is
// expected to refuse to start).
std::optional<int> ExitStatusOfDaemon(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--listen=127.0.0.1:0", "--log-level=warn"};
  all.insert(all.end(), args.begin(), args.end());
  ChildProcess process(LEASEKEEPERD_PATH, all);
  std::optional<int> status = process.WaitExit(milliseconds(10'000));
  if (!status.has_value()) return std::nullopt;
  return WIFEXITED(*status) ? std::optional<int>(WEXITSTATUS(*status))
                            : std::nullopt;
}

TEST(DurabilityTest, RestartKeepsCountersStoreAgesAndHolders) {
  DataDir dir;
  {
    Daemon daemon = StartOn(dir);
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    ASSERT_EQ(client.Acquire("a", "L", 60'000).response.granted().token(), 1u);
    ASSERT_TRUE(client.Release("a", "L").ok());
    ASSERT_EQ(client.Acquire("b", "L", 60'000).response.granted().token(), 2u);
    ASSERT_TRUE(client.Write("L", "k", "written under 2", 2).ok());
    ASSERT_EQ(client.Acquire("c", "M", 60'000).response.granted().token(), 1u);
    Kill(daemon);
  }
  Daemon daemon = StartOn(dir);
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  // b still holds L with its token; c still holds M.
  Result<pb::InspectResponse> l = client.Inspect("L");
  ASSERT_EQ(l.response.holders_size(), 1);
  EXPECT_EQ(l.response.holders(0).client_id(), "b");
  EXPECT_EQ(l.response.holders(0).token(), 2u);
  EXPECT_EQ(client.Inspect("M").response.holders(0).client_id(), "c");
  EXPECT_EQ(client.Read("L", "k").response.value(), "written under 2");
  // A stale token is still stale; the counter goes on from 2.
  EXPECT_FALSE(client.Write("L", "k", "stale", 1).ok());
  ASSERT_TRUE(client.Release("b", "L").ok());
  EXPECT_EQ(client.Acquire("d", "L", 60'000).response.granted().token(), 3u);
  // Ages: a registered first, b second, c third.
  EXPECT_EQ(client.Status("a").response.age(), 1u);
  EXPECT_EQ(client.Status("c").response.age(), 3u);
  EXPECT_EQ(client.Status("d").response.age(), 4u);
}

// A delete is an operation like a write: after SIGKILL and a restart the
// key is still gone and the mark the delete raised still fences, whether
// the restart replays the log or starts from a snapshot taken after it.
TEST(DurabilityTest, DeletedKeyStaysDeletedAcrossAKill) {
  for (const char* snapshot_every : {"1000000", "1"}) {
    SCOPED_TRACE(snapshot_every);
    DataDir dir;
    const std::vector<std::string> flags = {
        absl::StrCat("--snapshot-every=", snapshot_every)};
    {
      Daemon daemon = StartOn(dir, flags);
      ASSERT_FALSE(daemon.address.empty());
      TestClient client(daemon.address);
      ASSERT_EQ(client.Acquire("a", "L", 60'000).response.granted().token(),
                1u);
      ASSERT_TRUE(client.Write("L", "gone", "v", 1).ok());
      ASSERT_TRUE(client.Write("L", "kept", "v", 1).ok());
      ASSERT_TRUE(client.Release("a", "L").ok());
      ASSERT_EQ(client.Acquire("b", "L", 60'000).response.granted().token(),
                2u);
      Result<pb::DeleteResponse> deleted =
          client.Delete(DeleteRequest("L", "gone", 2, "b"));
      ASSERT_TRUE(deleted.ok()) << deleted.status.error_message();
      ASSERT_TRUE(deleted.response.existed());
      Kill(daemon);
    }
    Daemon daemon = StartOn(dir, flags);
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    EXPECT_FALSE(client.Read("L", "gone").response.found());
    EXPECT_EQ(client.Read("L", "kept").response.value(), "v");
    Result<pb::ListKeysResponse> keys = client.ListKeys(ListKeysRequest("L"));
    ASSERT_TRUE(keys.ok());
    EXPECT_EQ(std::vector<std::string>(keys.response.keys().begin(),
                                       keys.response.keys().end()),
              std::vector<std::string>{"kept"});
    // The delete's token 2 is still the mark: token 1 cannot write it back.
    EXPECT_EQ(client.Write("L", "gone", "back", 1).reason, "STALE_TOKEN");
  }
}

// The holder label a lease was taken with, after a SIGKILL and a restart;
// a label that went with its lease does not come back.
void ExpectLabelsSurviveARestart(std::vector<std::string> flags) {
  DataDir dir;
  auto labelled = [](const std::string& client, const std::string& lock,
                     const std::string& label) {
    pb::AcquireRequest request = AcquireRequest(client, lock, 60'000);
    request.set_holder_label(label);
    return request;
  };
  {
    Daemon daemon = StartOn(dir, flags);
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    ASSERT_TRUE(client.Acquire(labelled("a", "L", "job-a")).ok());
    ASSERT_TRUE(client.Acquire(labelled("b", "M", "gone")).ok());
    ASSERT_TRUE(client.Release("b", "M").ok());
    ASSERT_TRUE(client.Acquire("b", "M", 60'000).ok());
    ASSERT_TRUE(client.Acquire(labelled("c", "N", "first")).ok());
    ASSERT_TRUE(client.Release("c", "N").ok());
    ASSERT_TRUE(client.Acquire(labelled("c", "N", "second")).ok());
    Kill(daemon);
  }
  Daemon daemon = StartOn(dir, flags);
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  auto label_of = [&client](const std::string& lock) {
    Result<pb::InspectResponse> view = client.Inspect(lock);
    return view.response.holders_size() == 1
               ? view.response.holders(0).holder_label()
               : std::string("(no single holder)");
  };
  EXPECT_EQ(label_of("L"), "job-a");
  EXPECT_EQ(label_of("M"), "");
  EXPECT_EQ(label_of("N"), "second");
  Result<pb::StatusResponse> status = client.Status("a");
  ASSERT_EQ(status.response.holds_size(), 1);
  EXPECT_EQ(status.response.holds(0).holder_label(), "job-a");
}

TEST(DurabilityTest, RestartKeepsHolderLabelsFromTheLog) {
  ExpectLabelsSurviveARestart({});
}

TEST(DurabilityTest, RestartKeepsHolderLabelsFromASnapshot) {
  ExpectLabelsSurviveARestart({"--snapshot-every=1"});
}

TEST(DurabilityTest, RestartGraceLetsALivingHolderRenew) {
  for (const bool grace : {true, false}) {
    SCOPED_TRACE(grace ? "with grace" : "without grace");
    DataDir dir;
    const std::string grace_flag =
        grace ? "--restart-grace=3s" : "--restart-grace=0";
    {
      Daemon daemon = StartOn(dir, {grace_flag});
      ASSERT_FALSE(daemon.address.empty());
      TestClient client(daemon.address);
      ASSERT_TRUE(client.Acquire("holder", "L", 400).ok());
      std::this_thread::sleep_for(milliseconds(300));
      // The last logged tick: 300 ms into holder's 400 ms lease.
      ASSERT_TRUE(client.Acquire("other", "M", 60'000).ok());
      Kill(daemon);
    }
    Daemon daemon = StartOn(dir, {grace_flag});
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    std::this_thread::sleep_for(milliseconds(400));
    Result<pb::RenewResponse> renewed = client.Renew("holder", "L", 5'000);
    EXPECT_EQ(renewed.ok(), grace) << renewed.status.error_message();
  }
}

TEST(DurabilityTest, SecondDaemonOnTheSameDataDirRefusesToStart) {
  DataDir dir;
  Daemon first = StartOn(dir);
  ASSERT_FALSE(first.address.empty());
  EXPECT_EQ(ExitStatusOfDaemon({dir.flag()}), std::optional<int>(1));
  // The first one still serves.
  TestClient client(first.address);
  EXPECT_TRUE(client.Acquire("a", "L", 1'000).ok());
}

TEST(DurabilityTest, CorruptionBeforeTheTailStopsTheStart) {
  DataDir dir;
  {
    Daemon daemon = StartOn(dir);
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(client.Acquire(absl::StrCat("c", i), "L", 60'000,
                                 pb::LOCK_MODE_SHARED)
                      .ok());
    }
    Kill(daemon);
  }
  std::string segment;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (absl::StartsWith(e.path().filename().string(), "wal-") &&
        e.file_size() > 200) {
      segment = e.path();
    }
  }
  ASSERT_FALSE(segment.empty());
  {
    std::fstream file(segment, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('\x5a');
  }
  EXPECT_EQ(ExitStatusOfDaemon({dir.flag()}), std::optional<int>(1));
  // The documented way forward starts, keeping what precedes the damage.
  Daemon daemon = StartOn(dir, {"--recover-truncate"});
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  EXPECT_GE(client.Inspect("L").response.holders_size(), 1);
}

// A write error that is not a full disk fails the store for good: a file
// size limit (RLIMIT_FSIZE, with SIGXFSZ ignored so that write(2) fails
// with EFBIG). A real full disk, which passes: server_full_disk_test.cc.
TEST(DurabilityTest, AWriteErrorFailsTheStoreAndRefusesMutationsWithUnavailable) {
  DataDir dir;
  const std::string command = absl::StrCat(
      "trap '' XFSZ; exec prlimit --fsize=16384 ", LEASEKEEPERD_PATH,
      " --listen=127.0.0.1:0 --log-level=error --snapshot-every=0 ",
      dir.flag());
  auto process = std::make_unique<ChildProcess>(
      "/bin/sh", std::vector<std::string>{"-c", command});
  std::optional<std::string> line = process->ReadLine(milliseconds(10'000));
  ASSERT_TRUE(line.has_value());
  const std::string address = line->substr(line->rfind(' ') + 1);
  TestClient client(address);
  std::set<uint64_t> acknowledged;
  grpc::StatusCode refused = grpc::StatusCode::OK;
  for (int i = 0; i < 2'000; ++i) {
    Result<pb::AcquireResponse> r =
        client.Acquire(absl::StrCat("client-", i), "L", 60'000,
                       pb::LOCK_MODE_SHARED);
    if (!r.ok()) {
      refused = r.code();
      break;
    }
    acknowledged.insert(r.response.granted().token());
  }
  ASSERT_EQ(refused, grpc::StatusCode::UNAVAILABLE);
  EXPECT_GT(acknowledged.size(), 10u);
  // Every later mutation is refused too, with the reason.
  Result<pb::AcquireResponse> later = client.Acquire("late", "M", 1'000);
  EXPECT_EQ(later.code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(later.status.error_message().find("durable store failed"),
            std::string::npos)
      << later.status.error_message();
  process.reset();  // SIGKILL

  // On a healthy disk, everything acknowledged is there.
  Daemon daemon = StartOn(dir);
  ASSERT_FALSE(daemon.address.empty());
  TestClient after(daemon.address);
  std::set<uint64_t> held;
  const Result<pb::InspectResponse> view = after.Inspect("L");
  for (const pb::Holder& h : view.response.holders()) held.insert(h.token());
  for (uint64_t token : acknowledged) EXPECT_TRUE(held.contains(token));
}

// The crash test of issue 5: clients run a mixed load (exclusive and shared
// acquires with waits, fenced writes, renewals, releases) while the daemon
// is killed with SIGKILL at random moments, 20 rounds on one data dir.
// After each restart: tokens per lock only rose across everything any
// client was acknowledged, every acknowledged write reads back, and no lock
// has incompatible holders.
class CrashLoad {
 public:
  static constexpr int kLocks = 4;

  struct Grant {
    std::string lock;
    uint64_t token;
    int round;
  };
  struct Written {
    std::string lock;
    std::string key;
    std::string value;
    int round;
  };

  void Run(const std::string& address, int round, int workers,
           std::atomic<bool>& stop) {
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] { Worker(address, round, w, stop); });
    }
    for (std::thread& t : threads) t.join();
  }

  // Checks what was acknowledged against a restarted daemon: every grant,
  // every holder, and the writes of the round that just crashed plus a
  // sample of older ones (all of them when `all_writes`; each older write
  // was read back fully after its own round already).
  void Verify(TestClient& client, int round, bool all_writes) {
    std::lock_guard<std::mutex> lock(mu_);
    // Tokens: unique per lock across all rounds, and every token of a round
    // above every token acknowledged in the rounds before it.
    std::map<std::string, std::map<uint64_t, int>> seen;
    for (const Grant& g : grants_) {
      auto [it, inserted] = seen[g.lock].emplace(g.token, g.round);
      EXPECT_TRUE(inserted) << "token " << g.token << " of " << g.lock
                            << " acknowledged twice";
    }
    for (const auto& [lock_name, tokens] : seen) {
      int max_round = -1;
      for (const auto& [token, grant_round] : tokens) {
        EXPECT_GE(grant_round, max_round)
            << lock_name << ": token " << token << " (round " << grant_round
            << ") below a token of round " << max_round;
        max_round = std::max(max_round, grant_round);
      }
    }
    // Writes: each key was written once, so each reads back exactly.
    std::mt19937 sample(round);
    for (const Written& w : writes_) {
      if (!all_writes && w.round != round && sample() % 16 != 0) continue;
      Result<pb::ReadResponse> read = client.Read(w.lock, w.key);
      ASSERT_TRUE(read.ok()) << read.status.error_message();
      EXPECT_TRUE(read.response.found()) << w.key << " lost after round "
                                         << round;
      EXPECT_EQ(read.response.value(), w.value);
    }
    // Holders: one exclusive or only shared; tokens within what was seen.
    for (int i = 0; i < kLocks; ++i) {
      Result<pb::InspectResponse> view = client.Inspect(LockName(i));
      ASSERT_TRUE(view.ok());
      int exclusive = 0;
      for (const pb::Holder& h : view.response.holders()) {
        if (h.mode() == pb::LOCK_MODE_EXCLUSIVE) ++exclusive;
      }
      EXPECT_TRUE(exclusive == 0 || view.response.holders_size() == 1)
          << LockName(i) << " has incompatible holders after round " << round;
    }
  }

  size_t grants() {
    std::lock_guard<std::mutex> lock(mu_);
    return grants_.size();
  }
  size_t writes() {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_.size();
  }

 private:
  static std::string LockName(int i) { return absl::StrCat("crash/L", i); }

  void Worker(const std::string& address, int round, int w,
              std::atomic<bool>& stop) {
    TestClient client(address);
    std::mt19937 rng(round * 1000 + w);
    const std::string me = absl::StrCat("r", round, "-w", w);
    int n = 0;
    while (!stop.load()) {
      const std::string lock = LockName(rng() % kLocks);
      pb::AcquireRequest request = AcquireRequest(me, lock, 1'500, 200);
      request.set_mode(rng() % 3 == 0 ? pb::LOCK_MODE_SHARED
                                      : pb::LOCK_MODE_EXCLUSIVE);
      Result<pb::AcquireResponse> acquired = client.Acquire(request);
      if (!acquired.ok() || !acquired.response.has_granted()) {
        if (acquired.ok() && acquired.response.has_queued()) {
          client.Release(me, lock);  // not waiting (wait ended): withdraw
        }
        if (!acquired.ok() &&
            acquired.code() == grpc::StatusCode::UNAVAILABLE) {
          std::this_thread::sleep_for(milliseconds(5));
        }
        continue;
      }
      const uint64_t token = acquired.response.granted().token();
      Record(Grant{lock, token, round});
      const std::string key = absl::StrCat(me, "-", n++);
      const std::string value = absl::StrCat("v", token, "-", rng());
      if (client.Write(lock, key, value, token).ok()) {
        Record(Written{lock, key, value, round});
      }
      if (rng() % 2 == 0) client.Renew(me, lock, 1'500);
      client.Release(me, lock);
    }
  }

  void Record(Grant g) {
    std::lock_guard<std::mutex> lock(mu_);
    grants_.push_back(std::move(g));
  }
  void Record(Written w) {
    std::lock_guard<std::mutex> lock(mu_);
    writes_.push_back(std::move(w));
  }

  std::mutex mu_;
  std::vector<Grant> grants_;
  std::vector<Written> writes_;
};

TEST(DurabilityTest, KillNineUnderMixedLoadLosesNothingAcknowledged) {
  DataDir dir;
  CrashLoad load;
  std::mt19937 rng(5);
  const std::vector<std::string> flags = {"--restart-grace=300ms",
                                          "--snapshot-every=500"};
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    Daemon daemon = StartOn(dir, flags);
    ASSERT_FALSE(daemon.address.empty()) << "restart failed";
    if (round > 0) {
      TestClient checker(daemon.address);
      load.Verify(checker, round - 1, /*all_writes=*/false);
      if (::testing::Test::HasFailure()) return;
    }
    std::atomic<bool> stop{false};
    std::thread clients(
        [&] { load.Run(daemon.address, round, /*workers=*/8, stop); });
    std::this_thread::sleep_for(milliseconds(200 + rng() % 800));
    Kill(daemon);
    stop.store(true);
    clients.join();
  }
  Daemon daemon = StartOn(dir, flags);
  ASSERT_FALSE(daemon.address.empty());
  TestClient checker(daemon.address);
  load.Verify(checker, 19, /*all_writes=*/true);
  EXPECT_GT(load.grants(), 200u);
  EXPECT_GT(load.writes(), 100u);
  std::printf("20 kills: %zu grants and %zu fenced writes acknowledged\n",
              load.grants(), load.writes());
}

}  // namespace
}  // namespace leasekeeper::testing

// ---------------------------------------------------------------------------
// Durable sessions and retry cache: a client rides over a restart.

namespace leasekeeper::testing {
namespace {

// Opens a session for `client` on `address` and returns its id ("" and a
// test failure if the open was refused).
std::string OpenSessionOn(SessionStream& stream, const std::string& client,
                          const std::string& resume = "") {
  std::optional<pb::SessionResponse> opened = stream.Open(client, resume);
  EXPECT_TRUE(opened.has_value() && opened->has_opened());
  if (!opened.has_value() || !opened->has_opened()) return "";
  EXPECT_EQ(opened->opened().resumed(), !resume.empty());
  return opened->opened().session_id();
}

// Stops the daemon with `signal` and waits for its exit.
void Stop(Daemon& daemon, int signal) {
  daemon.process->Signal(signal);
  ASSERT_TRUE(daemon.process->WaitExit(milliseconds(10'000)).has_value());
}

struct HeldLease {
  std::string session_id;  // "" if something failed (and a test failure)
  uint64_t token = 0;
  std::string address;  // of the daemon, now stopped
};

// Starts a daemon on `dir` with `flags`, opens a session for "job",
// acquires "L" in it (60 s) and stops the daemon with `signal`; the stream
// dies with it.
HeldLease HoldInASessionThenStop(const DataDir& dir,
                                 const std::vector<std::string>& flags,
                                 int signal) {
  HeldLease held;
  Daemon daemon = StartOn(dir, flags);
  if (daemon.address.empty()) return held;
  held.address = daemon.address;
  TestClient client(daemon.address);
  SessionStream stream(client.stub());
  const std::string session_id = OpenSessionOn(stream, "job");
  std::optional<pb::SessionCallResult> acquired =
      stream.Call(1, AcquireCall("L", 60'000));
  EXPECT_TRUE(acquired.has_value() && acquired->has_acquire());
  if (acquired.has_value() && acquired->has_acquire()) {
    held.token = acquired->acquire().granted().token();
    held.session_id = session_id;
  }
  Stop(daemon, signal);
  stream.Abandon();
  return held;
}

pb::ReleaseRequest ReleaseInSession(const std::string& client,
                                    const std::string& lock,
                                    const std::string& session_id) {
  pb::ReleaseRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  request.set_session_id(session_id);
  return request;
}

TEST(DurableSessionTest, ALeaseHeldInASessionRidesOverARestart) {
  for (const int signal : {SIGTERM, SIGKILL}) {
    SCOPED_TRACE(signal == SIGTERM ? "SIGTERM" : "SIGKILL");
    DataDir dir;
    const std::vector<std::string> flags = {"--restart-grace=20s"};
    const HeldLease held = HoldInASessionThenStop(dir, flags, signal);
    ASSERT_FALSE(held.session_id.empty());
    const std::string& session_id = held.session_id;
    const uint64_t token = held.token;
    ASSERT_GT(token, 0u);
    Daemon daemon = StartOn(dir, flags);
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    // Before the client is back, the session is in grace and still holds L.
    Result<pb::StatusResponse> status = client.Status("job");
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(status.response.session(), pb::SESSION_STATE_GRACE);
    SessionStream stream(client.stub());
    ASSERT_EQ(OpenSessionOn(stream, "job", session_id), session_id);
    std::optional<pb::KeepaliveAck> ack = stream.Keepalive(1);
    ASSERT_TRUE(ack.has_value());
    EXPECT_EQ(ack->renewed_leases(), 1);
    std::optional<pb::SessionCallResult> renewed =
        stream.Call(2, RenewCall("L", 5'000));
    ASSERT_TRUE(renewed.has_value() && renewed->has_renew())
        << (renewed.has_value() ? renewed->error().message() : "no answer");
    EXPECT_EQ(renewed->renew().token(), token);
    Result<pb::InspectResponse> inspected = client.Inspect("L");
    ASSERT_EQ(inspected.response.holders_size(), 1);
    EXPECT_EQ(inspected.response.holders(0).client_id(), "job");
    EXPECT_EQ(inspected.response.holders(0).token(), token);
    EXPECT_TRUE(stream.Close().ok());
  }
}

TEST(DurableSessionTest, ASessionNotResumedWithinTheGraceAfterARestartEnds) {
  DataDir dir;
  const std::vector<std::string> flags = {"--restart-grace=600ms",
                                          "--session-grace=300ms"};
  const HeldLease held = HoldInASessionThenStop(dir, flags, SIGKILL);
  ASSERT_FALSE(held.session_id.empty());
  const std::string& session_id = held.session_id;
  Daemon daemon = StartOn(dir, flags);
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  // Live: the grace (max of the two, 600 ms) runs out on the real clock.
  ASSERT_TRUE(Eventually(
      [&] { return client.Inspect("L").response.holders_size() == 0; },
      std::chrono::seconds(5)));
  Result<pb::ReleaseResponse> late =
      client.Release(ReleaseInSession("job", "L", session_id));
  EXPECT_EQ(late.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(late.reason, "SESSION_ENDED");
  SessionStream stream(client.stub());
  EXPECT_FALSE(stream.Open("job", session_id).has_value());
  EXPECT_EQ(stream.Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST(DurableSessionTest, AReleaseThatFailedDuringTheOutageSucceedsAfterIt) {
  DataDir dir;
  const HeldLease held = HoldInASessionThenStop(dir, {}, SIGKILL);
  ASSERT_FALSE(held.session_id.empty());
  const std::string& session_id = held.session_id;
  TestClient during(held.address);
  Result<pb::ReleaseResponse> failed =
      during.Release(ReleaseInSession("job", "L", session_id));
  EXPECT_EQ(failed.code(), grpc::StatusCode::UNAVAILABLE);

  Daemon restarted = StartOn(dir);
  ASSERT_FALSE(restarted.address.empty());
  TestClient client(restarted.address);
  Result<pb::ReleaseResponse> released =
      client.Release(ReleaseInSession("job", "L", session_id));
  ASSERT_TRUE(released.ok()) << released.status.error_message();
  EXPECT_EQ(released.response.result(), pb::RELEASE_RESULT_RELEASED);
  EXPECT_EQ(client.Inspect("L").response.holders_size(), 0);
}

// Snapshots carry the retry cache too: with --snapshot-every=2 the answers
// are recovered from a snapshot, without it from log records.
TEST(DurableRetryTest, ARetryWithTheSameRequestIdAcrossARestartGetsTheFirstAnswer) {
  for (const char* snapshots : {"--snapshot-every=200000", "--snapshot-every=2"}) {
    SCOPED_TRACE(snapshots);
    DataDir dir;
    const std::vector<std::string> flags = {snapshots};
    pb::AcquireRequest acquire = AcquireRequest("a", "L", 60'000);
    acquire.set_request_id("acquire-1");
    pb::RenewRequest renew;
    renew.set_client_id("a");
    renew.set_lock("M");
    renew.set_ttl_ms(60'000);
    renew.set_request_id("renew-1");
    pb::ReleaseRequest release;
    release.set_client_id("a");
    release.set_lock("L");
    release.set_request_id("release-1");
    // Refused at first (a does not hold N yet); applied anew after a takes
    // N, it would succeed.
    pb::ReleaseRequest failed;
    failed.set_client_id("a");
    failed.set_lock("N");
    failed.set_request_id("release-bad");
    Result<pb::ReleaseResponse> first_failed;
    {
      Daemon daemon = StartOn(dir, flags);
      ASSERT_FALSE(daemon.address.empty());
      TestClient client(daemon.address);
      ASSERT_EQ(client.Acquire(acquire).response.granted().token(), 1u);
      ASSERT_TRUE(client.Acquire("a", "M", 60'000).ok());
      ASSERT_TRUE(client.Renew(renew).ok());
      ASSERT_EQ(client.Release(release).response.result(),
                pb::RELEASE_RESULT_RELEASED);
      ASSERT_EQ(client.Acquire("b", "L", 60'000).response.granted().token(),
                2u);
      first_failed = client.Release(failed);
      ASSERT_EQ(first_failed.reason, "NOT_HOLDER");
      ASSERT_TRUE(client.Acquire("a", "N", 60'000).ok());
      Kill(daemon);
    }
    Daemon daemon = StartOn(dir, flags);
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    // Applied anew, each would fail: b holds L, a no longer does.
    Result<pb::AcquireResponse> acquired = client.Acquire(acquire);
    ASSERT_TRUE(acquired.ok()) << acquired.status.error_message();
    EXPECT_EQ(acquired.response.granted().token(), 1u);
    Result<pb::ReleaseResponse> released = client.Release(release);
    ASSERT_TRUE(released.ok()) << released.status.error_message();
    EXPECT_EQ(released.response.result(), pb::RELEASE_RESULT_RELEASED);
    EXPECT_TRUE(client.Renew(renew).ok());
    // An error answer comes back whole: code, message and reason.
    Result<pb::ReleaseResponse> again = client.Release(failed);
    EXPECT_EQ(again.code(), first_failed.code());
    EXPECT_EQ(again.status.error_message(), first_failed.status.error_message());
    EXPECT_EQ(again.reason, first_failed.reason);
    // The same id with other arguments is still refused.
    pb::AcquireRequest reused = acquire;
    reused.set_ttl_ms(1'000);
    EXPECT_EQ(client.Acquire(reused).reason, "REQUEST_ID_REUSED");
    EXPECT_EQ(client.Inspect("L").response.holders(0).client_id(), "b");
  }
}

}  // namespace
}  // namespace leasekeeper::testing
