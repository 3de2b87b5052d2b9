#include "bench/workloads.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace leasekeeper::bench {
namespace {

using json = nlohmann::json;

// Builds one workload: operations, their expanded count and the results
// expected at chosen positions.
class Builder {
 public:
  Builder(std::string name, std::string description) {
    workload_.name = std::move(name);
    workload_.description = std::move(description);
  }

  // Appends a plain operation; returns its index in the result array.
  size_t Op(json operation) {
    workload_.operations.push_back(std::move(operation));
    ++workload_.expanded_ops;
    return workload_.operations.size() - 1;
  }

  // Appends a plain operation whose result must be `result`.
  void OpExpect(json operation, json result) {
    Expect(Op(std::move(operation)), std::move(result));
  }

  // Appends ["repeat", ts, template, count, step] whose tally must be
  // exactly `tally`, with `aborted` clients listed as aborted.
  void Repeat(int64_t ts, json template_op, int64_t count, json tally,
              int64_t aborted = 0, int64_t step = 0) {
    const size_t index =
        Op(json::array({"repeat", ts, std::move(template_op), count, step}));
    workload_.expanded_ops += static_cast<size_t>(count) - 1;
    json expected = {{"ops", count}, {"results", std::move(tally)}};
    if (aborted > 0) expected["aborted"] = aborted;
    Expect(index, std::move(expected));
  }

  void Expect(size_t index, json result) {
    workload_.expected.emplace_back(index, std::move(result));
  }

  Workload Take() { return std::move(workload_); }

 private:
  Workload workload_;
};

json Holder(const std::string& client, const char* mode, int64_t token,
            int64_t expires_at) {
  return json::array({client, mode, token, expires_at});
}

json Waiter(const std::string& client, const char* mode) {
  return json::array({client, mode});
}

json LockView(json holders, json queue) {
  return {{"holders", std::move(holders)}, {"queue", std::move(queue)}};
}

json ClientView(json age, json holds, json waiting) {
  return {{"age", std::move(age)},
          {"holds", std::move(holds)},
          {"waiting", std::move(waiting)}};
}

std::string Name(const char* prefix, int64_t i) {
  return absl::StrCat(prefix, i);
}

// (a) 4,000 clients over 2,000 exclusive locks and 1,000 shared ones:
// grants, one waiter per lock, renews, hand-over on release, fenced writes
// (accepted, then stale), reads, statuses after every lease lapsed.
Workload ManyLocks() {
  Builder b("many_locks",
            "4,000 clients on 2,000 exclusive + 1,000 shared locks: grants, "
            "queues, renews, hand-overs, fenced writes, reads, lapses");
  b.Repeat(0, {"acquire", "c{i}", "L{i%2000}", 100}, 4000,
           {{"granted", 2000}, {"queued", 2000}});
  b.Repeat(1, {"renew", "c{i}", "L{i%2000}", 200}, 4000,
           {{"renewed", 2000}, {"error: not holder", 2000}});
  b.Repeat(2, {"write", "L{i%2000}", "part-{i}", "v1", 1}, 2000,
           {{"ok", 2000}});
  // Each release hands L{i} to c{i+2000} at ts 3: token 2, expires 103.
  b.Repeat(3, {"release", "c{i}", "L{i%2000}"}, 2000, {{"released", 2000}});
  b.Repeat(4, {"write", "L{i%2000}", "part-{i}", "v2", 2}, 2000,
           {{"ok", 2000}});
  b.Repeat(5, {"write", "L{i%2000}", "part-{i}", "v3", 1}, 1000,
           {{"error: stale token", 1000}});
  b.Repeat(6, {"acquire", "s{i}", "M{i%1000}", 50, "shared"}, 2000,
           {{"granted", 2000}});
  b.Repeat(7, {"read", "L{i%2000}", "part-{i}"}, 2000, {{"v2", 2000}});
  b.OpExpect({"inspect", 7, "L5"},
             LockView({Holder("c2005", "exclusive", 2, 103)}, json::array()));
  b.OpExpect({"inspect", 7, "M5"}, LockView({Holder("s5", "shared", 1, 56),
                                             Holder("s1005", "shared", 2, 56)},
                                            json::array()));
  // Every lease has lapsed by 200; the clients stay registered.
  b.Repeat(200, {"status", "c{i+2000}"}, 1000, {{"other", 1000}});
  b.OpExpect({"inspect", 201, "L0"}, LockView(json::array(), json::array()));
  b.OpExpect({"status", 201, "c2000"},
             ClientView(2001, json::array(), nullptr));
  return b.Take();
}

// (b) 8 locks with queues of 300: withdrawals from the middle, releases
// handing over one by one, a lapse chain of 300 one-second leases per lock,
// then 300 readers granted together behind a writer and a writer behind
// them.
Workload Queues() {
  Builder b("queues",
            "8 locks x 300 waiters: withdrawals, releases handing over, lapse "
            "chains, runs of shared waiters granted together");
  constexpr int kLocks = 8;
  constexpr int kPerLock = 300;
  constexpr int kClients = kLocks * kPerLock;
  b.Repeat(0, {"acquire", "w{i}", "Q{i%8}", 10}, kClients,
           {{"granted", kLocks}, {"queued", kClients - kLocks}});
  // The first 100 waiters of each lock withdraw.
  b.Repeat(1, {"release", "w{i+8}", "Q{i%8}"}, 800, {{"withdrawn", 800}});
  // In client order every release finds the current holder, except the 800
  // that withdrew.
  b.Repeat(2, {"release", "w{i}", "Q{i%8}"}, kClients,
           {{"released", kClients - 800}, {"error: not holder", 800}});
  // Q{j} has issued tokens 1..200. A chain of 1-second leases: the k-th
  // client of a lock holds [10 + k, 11 + k) with token 201 + k.
  b.Repeat(10, {"acquire", "x{i}", "Q{i%8}", 1}, kClients,
           {{"granted", kLocks}, {"queued", kClients - kLocks}});
  {
    json queue = json::array();
    for (int k = 91; k < kPerLock; ++k) {
      queue.push_back(Waiter(Name("x", k * kLocks), "exclusive"));
    }
    b.OpExpect({"inspect", 100, "Q0"},
               LockView({Holder("x720", "exclusive", 291, 101)}, queue));
  }
  // A writer holds each lock (token 501); 300 readers, a writer and 300
  // more readers queue behind it.
  b.Repeat(1000, {"acquire", "y{i}", "Q{i%8}", 50}, kLocks,
           {{"granted", kLocks}});
  b.Repeat(1000, {"acquire", "z{i}", "Q{i%8}", 50, "shared"}, kClients,
           {{"queued", kClients}});
  b.Repeat(1000, {"acquire", "v{i}", "Q{i%8}", 50}, kLocks,
           {{"queued", kLocks}});
  b.Repeat(1000, {"acquire", "u{i}", "Q{i%8}", 50, "shared"}, kClients,
           {{"queued", kClients}});
  // The writers release: the 300 readers at each head are granted together.
  b.Repeat(1001, {"release", "y{i}", "Q{i%8}"}, kLocks, {{"released", kLocks}});
  {
    json holders = json::array();
    json queue = json::array({Waiter("v0", "exclusive")});
    for (int k = 0; k < kPerLock; ++k) {
      holders.push_back(Holder(Name("z", k * kLocks), "shared", 502 + k, 1051));
      queue.push_back(Waiter(Name("u", k * kLocks), "shared"));
    }
    b.OpExpect({"inspect", 1002, "Q0"}, LockView(holders, queue));
  }
  b.Repeat(1010, {"renew", "z{i}", "Q{i%8}", 50}, kClients,
           {{"renewed", kClients}});
  // The readers lapse together at 1060; the writer holds [1060, 1110).
  {
    json queue = json::array();
    for (int k = 0; k < kPerLock; ++k) {
      queue.push_back(Waiter(Name("u", k * kLocks), "shared"));
    }
    b.OpExpect({"inspect", 1070, "Q0"},
               LockView({Holder("v0", "exclusive", 802, 1110)}, queue));
  }
  b.Repeat(1200, {"status", "u{i}"}, kClients, {{"other", kClients}});
  // Registration order: w, x, y, z, v, then u0.
  b.OpExpect({"status", 1200, "u0"},
             ClientView(3 * kClients + 2 * kLocks + 1, json::array(), nullptr));
  b.Repeat(1200, {"acquire", "w{i}", "Q{i%8}", 10}, kClients,
           {{"granted", kLocks}, {"queued", kClients - kLocks}});
  return b.Take();
}

// (c) One lock with 2,000 shared holders granted one a second, a writer and
// 2,000 readers queued behind them, renews, releases and withdrawals, the
// writer granted at the instant the last reader lapses and the readers
// behind it granted together; then the same with every reader lapsing at
// one instant.
Workload SharedHolders() {
  Builder b("shared_2000",
            "one lock with 2,000 shared holders, a writer and 2,000 readers "
            "queued behind them, renews, releases, lapses handing over");
  constexpr int kReaders = 2000;
  // r{i} holds [i, 3000 + i) with token i + 1.
  b.Repeat(0, {"acquire", "r{i}", "S", 3000, "shared"}, kReaders,
           {{"granted", kReaders}}, 0, /*step=*/1);
  b.OpExpect({"acquire", 2000, "w", "S", 100}, {"queued", 1});
  b.Repeat(2000, {"acquire", "q{i}", "S", 100, "shared"}, kReaders,
           {{"queued", kReaders}});
  // r{i} renews at 2001 + i: expires 4001 + i.
  b.Repeat(2001, {"renew", "r{i}", "S", 2000}, kReaders,
           {{"renewed", kReaders}}, 0, /*step=*/1);
  b.Repeat(4000, {"release", "r{i}", "S"}, 1000, {{"released", 1000}});
  b.Repeat(4000, {"release", "q{i}", "S"}, 500, {{"withdrawn", 500}});
  json queue = json::array({Waiter("w", "exclusive")});
  for (int i = 500; i < kReaders; ++i) {
    queue.push_back(Waiter(Name("q", i), "shared"));
  }
  {
    json holders = json::array();
    for (int i = 1000; i < kReaders; ++i) {
      holders.push_back(Holder(Name("r", i), "shared", i + 1, 4001 + i));
    }
    b.OpExpect({"inspect", 4000, "S"}, LockView(holders, queue));
  }
  b.OpExpect({"inspect", 5999, "S"},
             LockView({Holder("r1999", "shared", 2000, 6000)}, queue));
  // The last reader lapses at 6000 and the writer starts then.
  b.OpExpect({"status", 6000, "w"},
             ClientView(2001, {Holder("S", "exclusive", 2001, 6100)}, nullptr));
  {
    json holders = json::array();
    for (int i = 500; i < kReaders; ++i) {
      holders.push_back(Holder(Name("q", i), "shared", 1502 + i, 6200));
    }
    b.OpExpect({"inspect", 6100, "S"}, LockView(holders, json::array()));
  }
  b.Repeat(6101, {"renew", "q{i+500}", "S", 100}, 1500, {{"renewed", 1500}});

  // Every reader lapses at one instant (7015) and the writer takes over.
  b.Repeat(7000, {"acquire", "t{i}", "T", 10, "shared"}, kReaders,
           {{"granted", kReaders}});
  b.OpExpect({"acquire", 7000, "tw", "T", 10}, {"queued", 1});
  b.Repeat(7000, {"acquire", "tr{i}", "T", 10, "shared"}, kReaders,
           {{"queued", kReaders}});
  b.Repeat(7005, {"renew", "t{i}", "T", 10}, kReaders, {{"renewed", kReaders}});
  {
    json waiting = json::array();
    for (int i = 0; i < kReaders; ++i) {
      waiting.push_back(Waiter(Name("tr", i), "shared"));
    }
    b.OpExpect({"inspect", 7016, "T"},
               LockView({Holder("tw", "exclusive", 2001, 7025)}, waiting));
  }
  // Registration: r 1..2000, w 2001, q 2002..4001, t 4002..6001, tw 6002.
  b.OpExpect({"status", 7030, "tr0"},
             ClientView(6003, {Holder("T", "shared", 2002, 7035)}, nullptr));
  b.Repeat(7030, {"status", "tr{i}"}, 5000, {{"other", 5000}});
  return b.Take();
}

// (d) Deep wait-for graphs: a chain of 2,500 clients each holding one lock
// and waiting for the next, 200 more waiters whose cycle check walks the
// whole chain, and acquires closing cycles of thousands of clients (a
// waiter ahead of the requester and then a holder, the youngest chain member,
// the requester itself), then 1,600 two-client deadlocks.
Workload DeepWaitFor(int spokes) {
  Builder b("deep_wait_for",
            absl::StrCat("wait-for chains of 2,500 and 2,000 clients, ", spokes,
                         " waiters whose cycle check walks a chain, cycles of "
                         "thousands closed, 1,600 two-client deadlocks"));
  // k{i} holds K{i} and waits for K{i+1}; k2499 waits for nothing.
  constexpr int kChain = 2500;
  b.Repeat(0, {"acquire", "k{i}", "K{i}", 1000}, kChain, {{"granted", kChain}});
  b.Repeat(1, {"acquire", "k{i}", "K{i+1}", 1000}, kChain - 1,
           {{"queued", kChain - 1}});
  // s{i} holds S{i}, t{i} waits for it, then s{i} queues for K0: its check
  // walks every s ahead of it and the whole chain (no cycle).
  b.Repeat(2, {"acquire", "s{i}", "S{i}", 1000}, spokes, {{"granted", spokes}});
  b.Repeat(2, {"acquire", "t{i}", "S{i}", 1000}, spokes, {{"queued", spokes}});
  b.Repeat(3, {"acquire", "s{i}", "K0", 1000}, spokes, {{"queued", spokes}});
  // k2499 -> s0 (holder), t0 (ahead) -> s0 -> k0 -> ... -> k2499. The
  // youngest on it is t0, then s0 on what is left; releasing S0 grants it.
  b.OpExpect({"acquire", 4, "k2499", "S0", 1000},
             {"granted", 2, 1004, {"t0", "s0"}});

  // a1999 registers first, so the youngest on the closed cycle is a1998,
  // whose abort hands A1998 to a1997 and breaks the cycle.
  constexpr int kChainA = 2000;
  const int age_a1999 = kChain + 2 * spokes + 1;
  b.OpExpect({"acquire", 5, "a1999", "A1999", 1000}, {"granted", 1, 1005});
  b.Repeat(5, {"acquire", "a{i}", "A{i}", 1000}, kChainA - 1,
           {{"granted", kChainA - 1}});
  b.Repeat(6, {"acquire", "a{i}", "A{i+1}", 1000}, kChainA - 1,
           {{"queued", kChainA - 1}});
  b.OpExpect({"acquire", 7, "a1999", "A0", 1000}, {"queued", 1, {"a1998"}});
  b.OpExpect({"status", 8, "a1998"},
             ClientView(nullptr, json::array(), nullptr));
  b.OpExpect({"status", 8, "a1997"},
             ClientView(age_a1999 + 1998,
                        {Holder("A1997", "exclusive", 1, 1005),
                         Holder("A1998", "exclusive", 2, 1007)},
                        nullptr));

  // The requester closing the cycle is its youngest member.
  b.Repeat(9, {"acquire", "b{i}", "B{i}", 1000}, kChainA,
           {{"granted", kChainA}});
  b.Repeat(10, {"acquire", "b{i}", "B{i+1}", 1000}, kChainA - 1,
           {{"queued", kChainA - 1}});
  b.OpExpect({"acquire", 11, "b1999", "B0", 1000}, {"deadlock", {"b1999"}});
  b.OpExpect({"inspect", 12, "B1999"},
             LockView({Holder("b1998", "exclusive", 2, 1011)}, json::array()));

  // The contract's Part 3 example 1, 1,600 times over.
  constexpr int kPairs = 1600;
  b.Repeat(12, {"acquire", "p{i}", "P{i}", 100}, kPairs, {{"granted", kPairs}});
  b.Repeat(12, {"acquire", "q{i}", "Q{i}", 100}, kPairs, {{"granted", kPairs}});
  b.Repeat(13, {"acquire", "q{i}", "P{i}", 100}, kPairs, {{"queued", kPairs}});
  b.Repeat(14, {"acquire", "p{i}", "Q{i}", 100}, kPairs, {{"granted", kPairs}},
           /*aborted=*/kPairs);
  return b.Take();
}

}  // namespace

std::vector<Workload> Part4Workloads() {
  std::vector<Workload> workloads;
  workloads.push_back(ManyLocks());
  workloads.push_back(Queues());
  workloads.push_back(SharedHolders());
  workloads.push_back(DeepWaitFor(/*spokes=*/200));
  return workloads;
}

absl::Status CheckResults(const Workload& workload, std::string_view output) {
  const json results = json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!results.is_array()) {
    return absl::FailedPreconditionError("output is not a JSON array");
  }
  if (results.size() != workload.operations.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("expected ", workload.operations.size(), " results, got ",
                     results.size()));
  }
  for (const auto& [index, expected] : workload.expected) {
    if (results[index] != expected) {
      std::string got = results[index].dump();
      if (got.size() > 300) got = got.substr(0, 300) + "...";
      std::string want = expected.dump();
      if (want.size() > 300) want = want.substr(0, 300) + "...";
      return absl::FailedPreconditionError(absl::StrCat(
          workload.name, ": result ", index, " of ",
          workload.operations[index].dump(), " is ", got, ", expected ", want));
    }
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper::bench
