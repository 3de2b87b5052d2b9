// Property test of GroupTable: random sequences of joins, leaves, deaths
// (LeaveAll), releases (right and wrong), time jumps and snapshot restores
// over two groups and six members, checked against a small model of who
// holds what under which token.
//
// After every step:
//  - each outcome is the model's (a refusal, or OK);
//  - each event is legal in the model: a grant only of a partition nobody
//    holds (or a called-back revocation of its holder) with the next token
//    of that partition; a revocation only by a join, of a grant not yet
//    revoked, with the deadline now + timeout; a release only by the
//    holder's own Release; a loss only at its hand-off deadline or when its
//    holder leaves; so a partition never has two owners and a hand-off
//    waits for the release or the deadline;
//  - the table's views equal the model (owners, tokens, states, deadlines,
//    members), no hand-off deadline has passed, and the members' assigned
//    counts are floor(P/N) or ceil(P/N);
//  - a join moves floor(P/N) partitions, all to the newcomer (so at most
//    ceil(P/N)); a leave or death moves exactly the leaver's; nothing else
//    moves an assignment;
//  - a replica fed the same calls (rebuilt from the table's snapshot now
//    and then) reports the same events.
// Every so often the hand-offs are settled (released, or left to time
// out) and the holdings must be balanced too.
// Deterministic: fixed seeds of std::mt19937_64, no clock.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "core/errors.h"
#include "core/group_snapshot.h"
#include "core/group_table.h"
#include "core/types.h"
#include "gtest/gtest.h"

namespace leasekeeper {
namespace {

constexpr int64_t kTimeout = 40;
constexpr int kSeeds = 24;
constexpr int kStepsPerSeed = 1500;
const std::vector<std::string> kGroups = {"g0", "g1"};
const std::vector<std::string> kMembers = {"m0", "m1", "m2", "m3", "m4", "m5"};
const std::vector<uint32_t> kCounts = {1, 2, 3, 5, 8, 12, 16};

struct ModelPartition {
  std::string holder;  // empty: nobody
  FencingToken token = 0;
  bool revoked = false;
  Tick deadline = 0;
};
struct ModelGroup {
  uint32_t count = 0;
  std::set<std::string> members;
  std::vector<ModelPartition> partitions;  // grows, never shrinks
};

struct Coverage {
  int joins = 0;
  int joins_with_more_members_than_partitions = 0;
  int mismatches = 0;
  int revocations = 0;
  int releases = 0;
  int timeouts = 0;
  int callbacks = 0;
  int deaths = 0;
  int restores = 0;
  int settles = 0;
};

// What the step did, for the event checks.
struct Step {
  enum Kind { kJoin, kLeave, kRelease, kAdvance } kind = kAdvance;
  std::string group;
  std::string member;
  uint32_t partition = 0;
  FencingToken token = 0;
};

std::string Row(const GroupEvent& e) {
  return std::to_string(static_cast<int>(e.kind)) + " " + e.group + " " +
         e.member + " " + e.label + " " +
         std::to_string(static_cast<int>(e.reason)) + " " +
         std::to_string(e.partition) + " #" + std::to_string(e.token) + " @" +
         std::to_string(e.at) + " by " + std::to_string(e.deadline);
}

class Checker {
 public:
  explicit Checker(uint64_t seed)
      : rng_(seed),
        table_(GroupConfig{kTimeout}),
        replica_(GroupConfig{kTimeout}) {}

  void Run(Coverage& coverage) {
    for (int i = 0; i < kStepsPerSeed; ++i) {
      now_ += Pick(0, 3);
      RandomStep(coverage);
      if (HasFailure()) return;
      if (Pick(0, 199) == 0) Settle(coverage);
      if (HasFailure()) return;
      if (Pick(0, 99) == 0) Restore(coverage);
    }
  }

 private:
  static bool HasFailure() { return ::testing::Test::HasFailure(); }
  int Pick(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  template <typename T>
  const T& OneOf(const std::vector<T>& v) {
    return v[static_cast<size_t>(Pick(0, static_cast<int>(v.size()) - 1))];
  }

  // Group -> partition -> assignee, from the table's views.
  std::map<std::string, std::vector<std::string>> Assignees() const {
    std::map<std::string, std::vector<std::string>> out;
    for (const std::string& g : kGroups) {
      for (const PartitionView& p : table_.Partitions(g)) {
        out[g].push_back(p.state == PartitionState::kRevoking ? p.next_owner
                                                              : p.owner);
      }
    }
    return out;
  }

  void RandomStep(Coverage& coverage) {
    const int dice = Pick(0, 99);
    const std::string& group = OneOf(kGroups);
    ModelGroup& model = groups_[group];
    Step step;
    step.group = group;
    std::optional<ErrorCode> expected;
    absl::Status status;
    const auto before = Assignees();
    if (dice < 30) {
      step.kind = Step::kJoin;
      step.member = OneOf(kMembers);
      uint32_t count = OneOf(kCounts);
      if (!model.members.empty() && Pick(0, 9) != 0) count = model.count;
      if (model.members.count(step.member) > 0) {
        expected = ErrorCode::kClientBusy;
      } else if (!model.members.empty() && count != model.count) {
        expected = ErrorCode::kCapacityMismatch;
        ++coverage.mismatches;
      }
      status = Both([&](GroupTable& t) {
        return t.Join(now_, group, step.member, "label-" + step.member, count);
      });
      if (status.ok()) {
        ++coverage.joins;
        if (model.members.empty()) {
          model.count = count;
          if (model.partitions.size() < count) model.partitions.resize(count);
        }
        model.members.insert(step.member);
        if (model.members.size() > model.count) {
          ++coverage.joins_with_more_members_than_partitions;
        }
      }
    } else if (dice < 42) {
      step.kind = Step::kLeave;
      step.member = OneOf(kMembers);
      if (model.members.count(step.member) == 0) {
        expected = ErrorCode::kNotHolder;
      }
      const LeaveReason reason =
          Pick(0, 1) == 0 ? LeaveReason::kLeft : LeaveReason::kSessionClosed;
      status = Both([&](GroupTable& t) {
        return t.Leave(now_, group, step.member, reason);
      });
    } else if (dice < 50) {
      // A death: the session's grace ran out; it leaves every group.
      step.kind = Step::kLeave;
      step.group.clear();
      step.member = OneOf(kMembers);
      int in = 0;
      for (const auto& [name, g] : groups_) in += g.members.count(step.member);
      const int left = Both([&](GroupTable& t) {
        return t.LeaveAll(now_, step.member, LeaveReason::kSessionExpired);
      });
      EXPECT_EQ(left, in);
      if (in > 0) ++coverage.deaths;
    } else if (dice < 80) {
      step.kind = Step::kRelease;
      ChooseRelease(group, model, step, expected);
      status = Both([&](GroupTable& t) {
        return t.Release(now_, group, step.member, step.partition, step.token);
      });
    } else {
      step.kind = Step::kAdvance;
      now_ += Pick(0, kTimeout + kTimeout / 2);
      Both([&](GroupTable& t) { t.AdvanceTo(now_); });
    }
    if (expected.has_value()) {
      EXPECT_EQ(ErrorCodeOf(status), *expected) << status;
    } else {
      EXPECT_TRUE(status.ok()) << status;
    }
    CheckEvents(step, coverage);
    if (step.kind == Step::kLeave && status.ok()) {
      for (auto& [name, g] : groups_) {
        if (step.group.empty() || step.group == name) {
          g.members.erase(step.member);
        }
      }
    }
    CheckViews();
    CheckMoves(before, step, status.ok());
  }

  // A release of a revoked grant mostly; sometimes of a grant not revoked
  // (a fresh start), of another token, or by a non-holder. A hand-off due
  // by now ends before the release is decided: its holder is then the
  // member it was going to (the table's view says which), with the next
  // token.
  void ChooseRelease(const std::string& group, const ModelGroup& model,
                     Step& step, std::optional<ErrorCode>& expected) {
    std::vector<uint32_t> revoked;
    std::vector<uint32_t> held;
    for (uint32_t p = 0; p < model.count; ++p) {
      if (model.partitions[p].holder.empty()) continue;
      held.push_back(p);
      if (model.partitions[p].revoked) revoked.push_back(p);
    }
    const int dice = Pick(0, 9);
    if (!revoked.empty() && dice < 7) {
      step.partition = OneOf(revoked);
    } else if (!held.empty() && dice < 8) {
      step.partition = OneOf(held);
    } else {
      step.member = OneOf(kMembers);
      step.partition = static_cast<uint32_t>(Pick(0, 15));
      step.token = static_cast<FencingToken>(Pick(1, 4));
      if (model.partitions.empty()) {
        expected = ErrorCode::kNotHolder;  // a group never seen
        return;
      }
      if (step.partition >= model.count) {
        expected = ErrorCode::kInvalidArguments;
        return;
      }
    }
    const ModelPartition& p = model.partitions[step.partition];
    std::string holder = p.holder;
    FencingToken token = p.token;
    if (p.revoked && p.deadline <= now_) {
      holder = table_.Partition(group, step.partition)->next_owner;
      ++token;
    }
    if (step.member.empty()) {
      step.member = p.holder;
      step.token = p.token;
    }
    if (holder != step.member || token != step.token) {
      expected = ErrorCode::kNotHolder;
    }
  }

  // The same call on the table and its replica: the same answer (if any)
  // and the same events.
  template <typename F, typename Answer = std::invoke_result_t<F, GroupTable&>>
  Answer Both(F&& call) {
    if constexpr (std::is_void_v<Answer>) {
      call(table_);
      call(replica_);
      CompareEvents();
    } else {
      Answer answer = call(table_);
      EXPECT_EQ(call(replica_), answer);
      CompareEvents();
      return answer;
    }
  }
  void CompareEvents() {
    const std::vector<GroupEvent>& a = table_.pending_events();
    const std::vector<GroupEvent>& b = replica_.pending_events();
    EXPECT_EQ(a.size(), b.size());
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      EXPECT_EQ(Row(a[i]), Row(b[i])) << "event " << i;
    }
    replica_.TakeEvents();
  }

  void CheckEvents(const Step& step, Coverage& coverage) {
    Tick last_at = kMinTick;
    std::set<std::string> left;
    for (const GroupEvent& e : table_.TakeEvents()) {
      SCOPED_TRACE(Row(e));
      EXPECT_GE(e.at, last_at) << "events in time order";
      EXPECT_LE(e.at, now_);
      last_at = e.at;
      ModelGroup& g = groups_[e.group];
      // The member is leaving once its kLeft came: the hand-offs due
      // before the call's own work may still grant it partitions.
      const bool leaving = left.count(e.group + "/" + e.member) > 0;
      const bool about_a_partition = e.kind != GroupEvent::Kind::kJoined &&
                                     e.kind != GroupEvent::Kind::kLeft;
      ModelPartition* p = nullptr;
      if (about_a_partition) {
        ASSERT_LT(e.partition, g.count);
        p = &g.partitions[e.partition];
      }
      // A revocation, release or loss names the live grant.
      if (about_a_partition && e.kind != GroupEvent::Kind::kAssigned) {
        EXPECT_EQ(p->holder, e.member);
        EXPECT_EQ(p->token, e.token);
      }
      switch (e.kind) {
        case GroupEvent::Kind::kJoined:
          EXPECT_EQ(step.kind, Step::kJoin);
          EXPECT_EQ(e.member, step.member);
          EXPECT_EQ(e.label, "label-" + step.member);
          break;
        case GroupEvent::Kind::kLeft:
          EXPECT_EQ(step.kind, Step::kLeave);
          EXPECT_EQ(e.member, step.member);
          EXPECT_TRUE(step.group.empty() || step.group == e.group);
          left.insert(e.group + "/" + e.member);
          break;
        case GroupEvent::Kind::kAssigned:
          EXPECT_TRUE(g.members.count(e.member) > 0 && !leaving);
          if (!p->holder.empty()) {
            EXPECT_EQ(p->holder, e.member) << "two owners";
            EXPECT_TRUE(p->revoked) << "a grant over a live one";
            EXPECT_EQ(step.kind, Step::kLeave) << "callback only on a leave";
            ++coverage.callbacks;
          }
          EXPECT_EQ(e.token, p->token + 1) << "tokens rise by one per grant";
          *p = ModelPartition{e.member, e.token, false, 0};
          break;
        case GroupEvent::Kind::kRevoked:
          EXPECT_EQ(step.kind, Step::kJoin);
          EXPECT_FALSE(p->revoked);
          EXPECT_EQ(e.deadline, now_ + kTimeout);
          p->revoked = true;
          p->deadline = e.deadline;
          ++coverage.revocations;
          break;
        case GroupEvent::Kind::kReleased:
          EXPECT_EQ(step.kind, Step::kRelease);
          EXPECT_EQ(e.member, step.member);
          EXPECT_EQ(e.partition, step.partition);
          EXPECT_EQ(e.token, step.token);
          p->holder.clear();
          p->revoked = false;
          ++coverage.releases;
          break;
        case GroupEvent::Kind::kLost:
          if (!leaving || (p->revoked && p->deadline <= e.at)) {
            EXPECT_TRUE(p->revoked) << "lost without a hand-off";
            EXPECT_EQ(e.at, p->deadline) << "lost at its deadline";
            ++coverage.timeouts;
          }
          p->holder.clear();
          p->revoked = false;
          break;
      }
      if (HasFailure()) return;
    }
  }

  void CheckViews() {
    ASSERT_TRUE(table_.CheckInvariants().ok()) << table_.CheckInvariants();
    for (const std::string& name : kGroups) {
      SCOPED_TRACE(name);
      const ModelGroup& g = groups_[name];
      std::vector<std::string> members;
      for (const MemberView& m : table_.Members(name)) {
        members.push_back(m.member);
        EXPECT_EQ(m.label, "label-" + m.member);
      }
      EXPECT_EQ(members,
                std::vector<std::string>(g.members.begin(), g.members.end()));
      const std::vector<PartitionView> views = table_.Partitions(name);
      ASSERT_EQ(views.size(), size_t{g.count});
      std::map<std::string, size_t> assigned;
      for (const PartitionView& v : views) {
        const ModelPartition& p = g.partitions[v.partition];
        EXPECT_EQ(v.owner, p.holder) << v.partition;
        EXPECT_EQ(v.token, p.token) << v.partition;
        EXPECT_EQ(v.owner.empty(), g.members.empty())
            << "held iff the group has members";
        if (p.revoked) {
          EXPECT_EQ(v.state, PartitionState::kRevoking);
          EXPECT_EQ(v.deadline, p.deadline);
          EXPECT_GT(p.deadline, now_) << "a hand-off past its deadline";
          ++assigned[v.next_owner];
        } else if (!p.holder.empty()) {
          EXPECT_EQ(v.state, PartitionState::kOwned);
          ++assigned[v.owner];
        } else {
          EXPECT_EQ(v.state, PartitionState::kUnassigned);
        }
      }
      if (g.members.empty()) continue;
      const size_t floor = g.count / g.members.size();
      const size_t ceil = (g.count + g.members.size() - 1) / g.members.size();
      for (const std::string& m : g.members) {
        EXPECT_GE(assigned[m], floor) << m;
        EXPECT_LE(assigned[m], ceil) << m;
      }
    }
  }

  void CheckMoves(const std::map<std::string, std::vector<std::string>>& before,
                  const Step& step, bool ok) {
    const auto after = Assignees();
    for (const std::string& name : kGroups) {
      SCOPED_TRACE(name);
      const std::vector<std::string> empty;
      const auto b = before.count(name) ? before.at(name) : empty;
      const auto& a = after.count(name) ? after.at(name) : empty;
      if (b.size() != a.size()) {
        // Only a first join sets or changes the count.
        EXPECT_TRUE(ok && step.kind == Step::kJoin && step.group == name);
        continue;
      }
      size_t moved = 0;
      for (size_t p = 0; p < a.size(); ++p) {
        const bool departed = step.kind == Step::kLeave &&
                              b[p] == step.member &&
                              (step.group.empty() || step.group == name);
        if (departed) {
          EXPECT_NE(a[p], b[p]) << "a leaver's partition stays with it";
          continue;
        }
        if (a[p] == b[p]) continue;
        ++moved;
        const bool first_join = b[p].empty();
        EXPECT_TRUE(ok && step.kind == Step::kJoin && step.group == name &&
                    (a[p] == step.member || first_join))
            << "partition " << p << " moved from " << b[p] << " to " << a[p];
      }
      if (ok && step.kind == Step::kJoin && step.group == name &&
          !before.at(name).empty() && !before.at(name)[0].empty()) {
        const ModelGroup& g = groups_[name];
        EXPECT_EQ(moved, g.count / g.members.size()) << "a join's quota";
      }
    }
  }

  // Ends every hand-off (a release, or its deadline) and checks the
  // holdings are balanced too.
  void Settle(Coverage& coverage) {
    ++coverage.settles;
    if (Pick(0, 1) == 0) {
      now_ += kTimeout;
      Both([&](GroupTable& t) { t.AdvanceTo(now_); });
      CheckEvents(Step{}, coverage);
    } else {
      for (const std::string& name : kGroups) {
        for (const PartitionView& v : table_.Partitions(name)) {
          if (v.state != PartitionState::kRevoking) continue;
          Step step;
          step.kind = Step::kRelease;
          step.group = name;
          step.member = v.owner;
          step.partition = v.partition;
          step.token = v.token;
          EXPECT_TRUE(Both([&](GroupTable& t) {
                        return t.Release(now_, name, v.owner, v.partition,
                                         v.token);
                      }).ok());
          CheckEvents(step, coverage);
        }
      }
    }
    CheckViews();
    EXPECT_EQ(table_.revoking_count(), 0u);
    for (const std::string& name : kGroups) {
      const ModelGroup& g = groups_[name];
      if (g.members.empty()) continue;
      std::map<std::string, size_t> holds;
      for (const MemberView& m : table_.Members(name)) {
        holds[m.member] = m.holds.size();
      }
      for (const auto& [member, n] : holds) {
        EXPECT_GE(n, g.count / g.members.size()) << name << " " << member;
        EXPECT_LE(n, (g.count + g.members.size() - 1) / g.members.size())
            << name << " " << member;
      }
    }
  }

  // The replica restarts from the table's snapshot.
  void Restore(Coverage& coverage) {
    ++coverage.restores;
    GroupSnapshot snapshot;
    table_.ExportTo(snapshot);
    ASSERT_TRUE(replica_.ImportFrom(snapshot).ok());
    GroupSnapshot again;
    replica_.ExportTo(again);
    EXPECT_EQ(again.groups.size(), snapshot.groups.size());
    EXPECT_EQ(replica_.NextDeadline(), table_.NextDeadline());
  }

  std::mt19937_64 rng_;
  GroupTable table_;
  GroupTable replica_;
  Tick now_ = 0;
  std::map<std::string, ModelGroup> groups_;
};

TEST(GroupProperty, RandomSequencesKeepOwnershipBalancedFencedAndMinimal) {
  Coverage coverage;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Checker(static_cast<uint64_t>(seed)).Run(coverage);
    if (::testing::Test::HasFailure()) return;
  }
  // The sequences reached every rule.
  EXPECT_GT(coverage.joins, 3000);
  EXPECT_GT(coverage.joins_with_more_members_than_partitions, 500);
  EXPECT_GT(coverage.mismatches, 200);
  EXPECT_GT(coverage.revocations, 3000);
  EXPECT_GT(coverage.releases, 3000);
  EXPECT_GT(coverage.timeouts, 1000);
  EXPECT_GT(coverage.callbacks, 200);
  EXPECT_GT(coverage.deaths, 1000);
  EXPECT_GT(coverage.restores, 200);
  EXPECT_GT(coverage.settles, 100);
}

}  // namespace
}  // namespace leasekeeper
