// The lease contract's examples, replayed verbatim through the gRPC API of an
// in-process leasekeeperd whose clock is fake. Contract seconds become
// milliseconds (ts 30 -> tick 30000); answers are rendered back into the
// contract's notation, absolute expiry = now + expires_in_ms.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

std::string Quoted(const std::string& s) { return absl::StrCat("\"", s, "\""); }

std::string ModeName(pb::LockMode mode) {
  return mode == pb::LOCK_MODE_SHARED ? "shared" : "exclusive";
}

template <typename Response>
std::string ErrorText(const Result<Response>& r) {
  return absl::StrCat("error: ", r.status.error_message());
}

std::string Text(const Result<pb::AcquireResponse>& r, Tick now) {
  if (r.code() == grpc::StatusCode::ABORTED) {
    std::vector<std::string> victims;
    for (const std::string& v : r.detail.victims())
      victims.push_back(Quoted(v));
    return absl::StrCat("[\"deadlock\", [", absl::StrJoin(victims, ", "), "]]");
  }
  if (!r.ok()) return ErrorText(r);
  std::string text;
  if (r.response.has_granted()) {
    text = absl::StrCat("[\"granted\", ", r.response.granted().token(), ", ",
                        now + r.response.granted().ttl_ms());
  } else {
    text = absl::StrCat("[\"queued\", ", r.response.queued().position());
  }
  if (!r.response.aborted_clients().empty()) {
    std::vector<std::string> aborted;
    for (const std::string& c : r.response.aborted_clients()) {
      aborted.push_back(Quoted(c));
    }
    absl::StrAppend(&text, ", [", absl::StrJoin(aborted, ", "), "]");
  }
  return text + "]";
}

template <typename Response>
std::string OkText(const Result<Response>& r) {
  return r.ok() ? "ok" : ErrorText(r);
}

std::string HolderText(const pb::Holder& h, Tick now, bool with_lock) {
  return absl::StrCat("[", Quoted(with_lock ? h.lock() : h.client_id()), ", ",
                      Quoted(ModeName(h.mode())), ", ", h.token(), ", ",
                      now + h.expires_in_ms(), "]");
}

std::string Text(const Result<pb::InspectResponse>& r, Tick now) {
  if (!r.ok()) return ErrorText(r);
  std::vector<std::string> holders;
  for (const pb::Holder& h : r.response.holders()) {
    holders.push_back(HolderText(h, now, /*with_lock=*/false));
  }
  std::vector<std::string> queue;
  for (const pb::Waiter& w : r.response.queue()) {
    queue.push_back(absl::StrCat("[", Quoted(w.client_id()), ", ",
                                 Quoted(ModeName(w.mode())), "]"));
  }
  return absl::StrCat("{\"holders\": [", absl::StrJoin(holders, ", "),
                      "], \"queue\": [", absl::StrJoin(queue, ", "), "]}");
}

std::string Text(const Result<pb::StatusResponse>& r, Tick now) {
  if (!r.ok()) return ErrorText(r);
  std::vector<std::string> holds;
  for (const pb::Holder& h : r.response.holds()) {
    holds.push_back(HolderText(h, now, /*with_lock=*/true));
  }
  return absl::StrCat(
      "{\"age\": ",
      r.response.registered() ? absl::StrCat(r.response.age()) : "null",
      ", \"holds\": [", absl::StrJoin(holds, ", "), "], \"waiting\": ",
      r.response.waiting_for().empty() ? "null"
                                       : Quoted(r.response.waiting_for()),
      "}");
}

std::string Text(const Result<pb::ReadResponse>& r) {
  if (!r.ok()) return ErrorText(r);
  return r.response.found() ? r.response.value() : "null";
}

// One contract operation: its ts in seconds and how to perform it.
struct Step {
  int64_t ts;
  std::function<std::string(TestClient&, Tick now)> run;
};

class ContractTest : public ServerTest {
 protected:
  std::vector<std::string> Replay(const std::vector<Step>& steps) {
    std::vector<std::string> results;
    for (const Step& step : steps) {
      const Tick now = step.ts * 1000;
      At(now);
      results.push_back(step.run(*client_, now));
    }
    return results;
  }
};

Step Acquire(int64_t ts, std::string client, std::string lock, int64_t ttl,
             pb::LockMode mode = pb::LOCK_MODE_EXCLUSIVE) {
  return {ts, [=](TestClient& c, Tick now) {
            return Text(c.Acquire(client, lock, ttl * 1000, mode), now);
          }};
}
Step Renew(int64_t ts, std::string client, std::string lock, int64_t ttl) {
  return {ts, [=](TestClient& c, Tick) {
            return OkText(c.Renew(client, lock, ttl * 1000));
          }};
}
Step Write(int64_t ts, std::string lock, std::string key, std::string value,
           uint64_t token) {
  return {ts, [=](TestClient& c, Tick) {
            return OkText(c.Write(lock, key, value, token));
          }};
}
Step Read(int64_t ts, std::string lock, std::string key) {
  return {ts, [=](TestClient& c, Tick) { return Text(c.Read(lock, key)); }};
}
Step Inspect(int64_t ts, std::string lock) {
  return {ts,
          [=](TestClient& c, Tick now) { return Text(c.Inspect(lock), now); }};
}
Step Status(int64_t ts, std::string client) {
  return {ts,
          [=](TestClient& c, Tick now) { return Text(c.Status(client), now); }};
}
Step Release(int64_t ts, std::string client, std::string lock) {
  return {
      ts, [=](TestClient& c, Tick) {
        Result<pb::ReleaseResponse> r = c.Release(client, lock);
        if (!r.ok()) return ErrorText(r);
        return std::string(r.response.result() == pb::RELEASE_RESULT_RELEASED
                               ? "released"
                               : "withdrawn");
      }};
}

TEST_F(ContractTest, IncidentReplayInc5127MatchesTheRules) {
  const std::vector<std::string> results = Replay({
      Acquire(0, "etl-a", "exports/daily", 30),
      Acquire(5, "etl-b", "exports/daily", 20),
      Acquire(8, "etl-c", "exports/daily", 15),
      Write(20, "exports/daily", "part-1", "a:rows 1-100", 1),
      Renew(30, "etl-a", "exports/daily", 30),
      Write(31, "exports/daily", "part-1", "b:rows 1-100", 2),
      Write(32, "exports/daily", "part-1", "a:rows 101-200", 1),
      Inspect(55, "exports/daily"),
      Read(56, "exports/daily", "part-1"),
  });
  EXPECT_EQ(
      results,
      (std::vector<std::string>{
          R"(["granted", 1, 30000])",
          R"(["queued", 1])",
          R"(["queued", 2])",
          "ok",
          "error: not holder",
          "ok",
          "error: stale token",
          R"({"holders": [["etl-c", "exclusive", 3, 65000]], "queue": []})",
          "b:rows 1-100",
      }));
}

TEST_F(ContractTest, SharedRequestNeverOvertakesQueuedWriter) {
  const std::vector<std::string> results = Replay({
      Acquire(0, "r1", "cfg", 50, pb::LOCK_MODE_SHARED),
      Acquire(1, "r2", "cfg", 20, pb::LOCK_MODE_SHARED),
      Acquire(2, "w1", "cfg", 30),
      Acquire(3, "r3", "cfg", 10, pb::LOCK_MODE_SHARED),
      Inspect(4, "cfg"),
      Inspect(50, "cfg"),
      Inspect(80, "cfg"),
  });
  EXPECT_EQ(
      results,
      (std::vector<std::string>{
          R"(["granted", 1, 50000])",
          R"(["granted", 2, 21000])",
          R"(["queued", 1])",
          R"(["queued", 2])",
          R"({"holders": [["r1", "shared", 1, 50000], ["r2", "shared", 2, 21000]], "queue": [["w1", "exclusive"], ["r3", "shared"]]})",
          R"({"holders": [["w1", "exclusive", 3, 80000]], "queue": [["r3", "shared"]]})",
          R"({"holders": [["r3", "shared", 4, 90000]], "queue": []})",
      }));
}

TEST_F(ContractTest, YoungerOfTwoJobsIsAbortedAsDeadlockVictim) {
  const std::vector<std::string> results = Replay({
      Acquire(0, "alice", "L1", 100),
      Acquire(1, "bob", "L2", 100),
      Acquire(2, "bob", "L1", 100),
      Acquire(3, "alice", "L2", 100),
      Status(4, "bob"),
      Status(4, "alice"),
      Inspect(4, "L1"),
  });
  EXPECT_EQ(
      results,
      (std::vector<std::string>{
          R"(["granted", 1, 100000])",
          R"(["granted", 1, 101000])",
          R"(["queued", 1])",
          R"(["granted", 2, 103000, ["bob"]])",
          R"({"age": null, "holds": [], "waiting": null})",
          R"({"age": 1, "holds": [["L1", "exclusive", 1, 100000], ["L2", "exclusive", 2, 103000]], "waiting": null})",
          R"({"holders": [["alice", "exclusive", 1, 100000]], "queue": []})",
      }));
}

TEST_F(ContractTest, WaiterAheadOfRequesterOnTheCycleIsAbortedFirst) {
  const std::vector<std::string> results = Replay({
      Acquire(0, "H", "L", 100),
      Acquire(1, "Z", "M", 100),
      Acquire(2, "Y", "L", 100),
      Acquire(3, "H", "M", 100),
      Acquire(4, "Z", "L", 100),
  });
  EXPECT_EQ(results, (std::vector<std::string>{
                         R"(["granted", 1, 100000])",
                         R"(["granted", 1, 101000])",
                         R"(["queued", 1])",
                         R"(["queued", 1])",
                         R"(["deadlock", ["Y", "Z"]])",
                     }));
}

TEST_F(ContractTest, ExpiredLeasesHandOverInChainsAtTheirOwnInstants) {
  const std::vector<std::string> results = Replay({
      Acquire(0, "a", "L", 1),
      Acquire(0, "b", "L", 1),
      Acquire(0, "c", "L", 5),
      Inspect(4, "L"),
      Inspect(7, "L"),
  });
  EXPECT_EQ(results,
            (std::vector<std::string>{
                R"(["granted", 1, 1000])",
                R"(["queued", 1])",
                R"(["queued", 2])",
                R"({"holders": [["c", "exclusive", 3, 7000]], "queue": []})",
                R"({"holders": [], "queue": []})",
            }));
}

TEST_F(ContractTest, ReleaseAfterTheLeaseLapsedIsNotHolder) {
  const std::vector<std::string> results = Replay({
      Acquire(0, "a", "L", 10),
      Acquire(1, "b", "L", 10),
      Release(10, "a", "L"),
      Inspect(11, "L"),
      Release(12, "b", "L"),
  });
  EXPECT_EQ(results,
            (std::vector<std::string>{
                R"(["granted", 1, 10000])",
                R"(["queued", 1])",
                "error: not holder",
                R"({"holders": [["b", "exclusive", 2, 20000]], "queue": []})",
                "released",
            }));
}

TEST_F(ContractTest,
       TokenCounterSurvivesAnIdleNightAndSeveralKeysShareOneToken) {
  const std::vector<std::string> results = Replay({
      Acquire(0, "job-6", "nightly", 60),
      Write(1, "nightly", "k1", "v1", 1),
      Release(2, "job-6", "nightly"),
      Acquire(40000, "job-7", "nightly", 60),
      Write(40001, "nightly", "k1", "v2", 2),
      Write(40002, "nightly", "k2", "v3", 2),
      Read(40003, "nightly", "k2"),
      Acquire(40004, "job-7", "nightly", 60),
  });
  EXPECT_EQ(results, (std::vector<std::string>{
                         R"(["granted", 1, 60000])",
                         "ok",
                         "released",
                         R"(["granted", 2, 40060000])",
                         "ok",
                         "ok",
                         "v3",
                         "error: client busy",
                     }));
}

}  // namespace
}  // namespace leasekeeper::testing
