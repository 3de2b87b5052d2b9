// Groups and partitions in the core (GroupTable): membership, balanced
// assignment with minimal moves, per-partition fencing tokens, hand-offs
// that wait for the release or the deadline, refusals that change nothing,
// and snapshots (core/group_table.h). Time is the tick each call passes.
#include "core/group_table.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/errors.h"
#include "core/group_snapshot.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leasekeeper {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kTimeout = 100;
using Kind = GroupEvent::Kind;

GroupTable MakeTable() { return GroupTable(GroupConfig{kTimeout}); }

void MustJoin(GroupTable& t, Tick now, const std::string& member,
              uint32_t count = 12, const std::string& group = "etl") {
  ASSERT_TRUE(t.Join(now, group, member, "host-" + member, count).ok())
      << member;
}

// Member -> number of partitions it holds.
std::map<std::string, int> Holdings(const GroupTable& t,
                                    const std::string& group = "etl") {
  std::map<std::string, int> out;
  for (const PartitionView& p : t.Partitions(group)) {
    if (!p.owner.empty()) ++out[p.owner];
  }
  return out;
}

// Partition -> "owner #token" (owned), "owner #token -> next" (revoking),
// "- #token" (unassigned).
std::vector<std::string> Table(const GroupTable& t,
                               const std::string& group = "etl") {
  std::vector<std::string> out;
  for (const PartitionView& p : t.Partitions(group)) {
    std::string row =
        (p.owner.empty() ? "-" : p.owner) + " #" + std::to_string(p.token);
    if (p.state == PartitionState::kRevoking) row += " -> " + p.next_owner;
    out.push_back(row);
  }
  return out;
}

// "kind member partition#token@at" per event, drained; kLeft with its
// reason, kRevoked with "by deadline".
std::vector<std::string> Drain(GroupTable& t) {
  std::vector<std::string> out;
  for (const GroupEvent& e : t.TakeEvents()) {
    static constexpr const char* kNames[] = {"joined",  "left",     "assigned",
                                             "revoked", "released", "lost"};
    std::string row =
        std::string(kNames[static_cast<int>(e.kind)]) + " " + e.member;
    if (e.kind == Kind::kLeft) {
      row += " " + std::string(LeaveReasonName(e.reason));
    }
    if (e.kind != Kind::kJoined && e.kind != Kind::kLeft) {
      row += " " + std::to_string(e.partition) + "#" + std::to_string(e.token) +
             "@" + std::to_string(e.at);
    }
    if (e.kind == Kind::kRevoked) row += " by " + std::to_string(e.deadline);
    out.push_back(row);
  }
  return out;
}

// Releases every revoked partition as its holder would, at `now`.
void ReleaseAllRevoked(GroupTable& t, Tick now,
                       const std::string& group = "etl") {
  for (const PartitionView& p : t.Partitions(group)) {
    if (p.state == PartitionState::kRevoking) {
      ASSERT_TRUE(t.Release(now, group, p.owner, p.partition, p.token).ok());
    }
  }
}

// The partitions whose owner changed between the views, ascending; a
// moved one must have a higher token than before, an unmoved one the same.
std::vector<uint32_t> MovedCheckingTokens(
    const std::vector<PartitionView>& before,
    const std::vector<PartitionView>& after) {
  std::vector<uint32_t> moved;
  for (size_t p = 0; p < after.size(); ++p) {
    if (after[p].owner == before[p].owner) {
      EXPECT_EQ(after[p].token, before[p].token) << "unmoved " << p;
      continue;
    }
    EXPECT_GT(after[p].token, before[p].token) << "moved " << p;
    moved.push_back(static_cast<uint32_t>(p));
  }
  return moved;
}

// w1, w2 and w3 join "etl" (12 partitions) by tick 2, each hand-off
// released at once: four each by tick 3.
void JoinThreeAndSettle(GroupTable& t) {
  MustJoin(t, 0, "w1");
  MustJoin(t, 0, "w2");
  ReleaseAllRevoked(t, 1);
  MustJoin(t, 2, "w3");
  ReleaseAllRevoked(t, 3);
}

GroupSnapshot SnapshotOf(const GroupTable& t) {
  GroupSnapshot out;
  t.ExportTo(out);
  return out;
}

// Snapshots compared through a table's export, field by field as text.
std::string Describe(const GroupSnapshot& s) {
  std::string out = "now " + std::to_string(s.now) + "\n";
  for (const GroupSnapshot::Group& g : s.groups) {
    out += g.name + " P=" + std::to_string(g.partition_count) + " seq " +
           std::to_string(g.last_seq) + "\n";
    for (const GroupSnapshot::Member& m : g.members) {
      out += " member " + m.name + " '" + m.label + "' " +
             std::to_string(m.seq) + "\n";
    }
    for (const GroupSnapshot::Partition& p : g.partitions) {
      out += " #" + std::to_string(p.last_token) + " " + p.holder + " " +
             p.assignee + " " + std::to_string(p.deadline) + "\n";
    }
  }
  return out;
}

TEST(GroupTable, FirstMemberIsGrantedEveryPartitionWithTokenOne) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 3);
  EXPECT_THAT(Drain(t), ElementsAre("joined w1", "assigned w1 0#1@0",
                                    "assigned w1 1#1@0", "assigned w1 2#1@0"));
  EXPECT_THAT(Table(t), ElementsAre("w1 #1", "w1 #1", "w1 #1"));
  EXPECT_EQ(t.PartitionCount("etl"), 3u);
  ASSERT_TRUE(t.CheckInvariants().ok());
}

TEST(GroupTable, ThreeMembersOfTwelvePartitionsOwnFourEach) {
  GroupTable t = MakeTable();
  JoinThreeAndSettle(t);
  EXPECT_EQ(Holdings(t),
            (std::map<std::string, int>{{"w1", 4}, {"w2", 4}, {"w3", 4}}));
  EXPECT_EQ(t.revoking_count(), 0u);
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(GroupTable, AfterAMemberDiesTheTwoLeftOwnSixEachUnmovedKeepTheirTokens) {
  GroupTable t = MakeTable();
  JoinThreeAndSettle(t);
  const std::vector<PartitionView> before = t.Partitions("etl");
  t.TakeEvents();

  EXPECT_EQ(t.LeaveAll(10, "w2", LeaveReason::kSessionExpired), 1);
  EXPECT_EQ(Holdings(t), (std::map<std::string, int>{{"w1", 6}, {"w3", 6}}));
  std::vector<uint32_t> w2s;
  for (const PartitionView& p : before) {
    if (p.owner == "w2") w2s.push_back(p.partition);
  }
  EXPECT_EQ(MovedCheckingTokens(before, t.Partitions("etl")), w2s);
  EXPECT_EQ(w2s.size(), 4u);
  EXPECT_EQ(t.revoking_count(), 0u) << "granted at once";
  const std::vector<std::string> events = Drain(t);
  EXPECT_EQ(events.front(), "left w2 session_expired");
  EXPECT_EQ(events.size(), 1u + 4 + 4) << "a loss and a grant per partition";
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(GroupTable, AFourthMemberJoiningTakesExactlyThree) {
  GroupTable t = MakeTable();
  JoinThreeAndSettle(t);
  const std::vector<PartitionView> before = t.Partitions("etl");
  t.TakeEvents();
  MustJoin(t, 5, "w4");
  std::vector<std::string> events = Drain(t);
  EXPECT_EQ(events.size(), 1u + 3) << "joined, then three revocations";
  EXPECT_EQ(t.revoking_count(), 3u);
  EXPECT_EQ(Holdings(t).count("w4"), 0u) << "nothing granted before releases";
  ReleaseAllRevoked(t, 6);
  EXPECT_EQ(Holdings(t), (std::map<std::string, int>{
                             {"w1", 3}, {"w2", 3}, {"w3", 3}, {"w4", 3}}));
  const std::vector<PartitionView> after = t.Partitions("etl");
  const std::vector<uint32_t> moved = MovedCheckingTokens(before, after);
  EXPECT_EQ(moved.size(), 3u);
  for (uint32_t p : moved) {
    EXPECT_EQ(after[p].owner, "w4");
    EXPECT_EQ(after[p].token, before[p].token + 1) << "one grant after";
  }
}

TEST(GroupTable, JoinRevokesFirstAndGrantsOnlyAfterTheRelease) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 2);
  t.TakeEvents();
  MustJoin(t, 10, "w2", 2);
  EXPECT_THAT(Drain(t), ElementsAre("joined w2", "revoked w1 0#1@10 by 110"));
  EXPECT_THAT(Table(t), ElementsAre("w1 #1 -> w2", "w1 #1"));
  std::optional<PartitionView> p0 = t.Partition("etl", 0);
  ASSERT_TRUE(p0.has_value());
  EXPECT_EQ(p0->state, PartitionState::kRevoking);
  EXPECT_EQ(p0->deadline, 110);
  EXPECT_EQ(t.NextDeadline(), 110);

  ASSERT_TRUE(t.Release(20, "etl", "w1", 0, 1).ok());
  EXPECT_THAT(Drain(t),
              ElementsAre("released w1 0#1@20", "assigned w2 0#2@20"));
  EXPECT_THAT(Table(t), ElementsAre("w2 #2", "w1 #1"));
  EXPECT_EQ(t.NextDeadline(), std::nullopt);
}

TEST(GroupTable, AnOwnerThatDoesNotReleaseLosesThePartitionAtTheDeadline) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 2);
  MustJoin(t, 10, "w2", 2);
  t.TakeEvents();
  t.AdvanceTo(109);
  EXPECT_THAT(Drain(t), IsEmpty());
  EXPECT_THAT(Table(t), ElementsAre("w1 #1 -> w2", "w1 #1"));
  t.AdvanceTo(500);
  EXPECT_THAT(Drain(t), ElementsAre("lost w1 0#1@110", "assigned w2 0#2@110"));
  // Its release comes too late: that grant is over.
  EXPECT_EQ(ErrorCodeOf(t.Release(501, "etl", "w1", 0, 1)),
            ErrorCode::kNotHolder);
  EXPECT_THAT(Table(t), ElementsAre("w2 #2", "w1 #1"));
}

TEST(GroupTable, EveryCallEndsTheHandOffsDueBeforeItDecides) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 2);
  MustJoin(t, 10, "w2", 2);
  t.TakeEvents();
  // A refused call still moves time on; the hand-off ended at 110.
  EXPECT_EQ(ErrorCodeOf(t.Join(200, "etl", "w2", "", 2)),
            ErrorCode::kClientBusy);
  EXPECT_THAT(Drain(t), ElementsAre("lost w1 0#1@110", "assigned w2 0#2@110"));
}

TEST(GroupTable, ADepartedMembersPartitionsAreGrantedAtOnce) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 4);
  MustJoin(t, 0, "w2", 4);  // revokes 0 and 1 from w1
  t.TakeEvents();
  // w1 dies holding everything: what was revoked from it goes to w2 now,
  // and what was its own goes to w2 too, the only member left.
  ASSERT_TRUE(t.Leave(5, "etl", "w1", LeaveReason::kSessionExpired).ok());
  EXPECT_THAT(Drain(t), ElementsAre("left w1 session_expired", "lost w1 0#1@5",
                                    "assigned w2 0#2@5", "lost w1 1#1@5",
                                    "assigned w2 1#2@5", "lost w1 2#1@5",
                                    "assigned w2 2#2@5", "lost w1 3#1@5",
                                    "assigned w2 3#2@5"));
  EXPECT_EQ(t.revoking_count(), 0u);
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(GroupTable, AnAssigneeLeavingDuringAHandOffCallsTheRevocationBack) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 4);
  MustJoin(t, 0, "w2", 4);
  t.TakeEvents();
  ASSERT_TRUE(t.Leave(5, "etl", "w2", LeaveReason::kLeft).ok());
  // w1 still holds 0 and 1: it keeps them, under new grants.
  EXPECT_THAT(Drain(t), ElementsAre("left w2 left", "assigned w1 0#2@5",
                                    "assigned w1 1#2@5"));
  EXPECT_THAT(Table(t), ElementsAre("w1 #2", "w1 #2", "w1 #1", "w1 #1"));
  EXPECT_EQ(t.NextDeadline(), std::nullopt);
  // The release of the called-back grant is stale.
  EXPECT_EQ(ErrorCodeOf(t.Release(6, "etl", "w1", 0, 1)),
            ErrorCode::kNotHolder);
}

TEST(GroupTable, AJoinMovesHandOffsUnderWayBeforeRevokingMore) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1");
  MustJoin(t, 0, "w2");  // six revoked from w1 to w2
  t.TakeEvents();
  MustJoin(t, 1, "w3");  // w3 needs four: two of w2's pending, two of w1's
  std::vector<std::string> events = Drain(t);
  EXPECT_EQ(events.size(), 1u + 2) << "only two more revocations";
  EXPECT_EQ(t.revoking_count(), 8u);
  ReleaseAllRevoked(t, 2);
  EXPECT_EQ(Holdings(t),
            (std::map<std::string, int>{{"w1", 4}, {"w2", 4}, {"w3", 4}}));
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(GroupTable, ReleasingAPartitionNotRevokedGrantsItAgainUnderANewToken) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 1);
  t.TakeEvents();
  ASSERT_TRUE(t.Release(3, "etl", "w1", 0, 1).ok());
  EXPECT_THAT(Drain(t), ElementsAre("released w1 0#1@3", "assigned w1 0#2@3"));
}

TEST(GroupTable, TokensOfAPartitionRiseAcrossAnEmptyGroupAndANewCount) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 4);
  ASSERT_TRUE(t.Leave(1, "etl", "w1", LeaveReason::kLeft).ok());
  EXPECT_THAT(Table(t), ElementsAre("- #1", "- #1", "- #1", "- #1"));
  EXPECT_EQ(t.Partition("etl", 2)->state, PartitionState::kUnassigned);
  // An empty group takes the next member's count.
  MustJoin(t, 2, "w2", 2);
  EXPECT_THAT(Table(t), ElementsAre("w2 #2", "w2 #2"));
  ASSERT_TRUE(t.Leave(3, "etl", "w2", LeaveReason::kLeft).ok());
  MustJoin(t, 4, "w3", 3);
  EXPECT_THAT(Table(t), ElementsAre("w3 #3", "w3 #3", "w3 #2"));
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(GroupTable, AnotherCountIsRefusedWithTheGroupsCountInTheError) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 12);
  const absl::Status status = t.Join(1, "etl", "w2", "", 8);
  EXPECT_EQ(ErrorCodeOf(status), ErrorCode::kCapacityMismatch);
  EXPECT_EQ(status.message(), "capacity mismatch");
  EXPECT_EQ(ErrorDetailOf(status), "etl is a group of 12 partitions, asked 8");
  EXPECT_THAT(Holdings(t), (std::map<std::string, int>{{"w1", 12}}));
}

TEST(GroupTable, RefusalsChangeNothingButTime) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 4);
  MustJoin(t, 0, "w2", 4);
  const GroupSnapshot before = SnapshotOf(t);
  t.TakeEvents();
  struct Case {
    const char* what;
    absl::Status status;
    ErrorCode code;
  } cases[] = {
      {"join: empty group", t.Join(1, "", "w3", "", 4),
       ErrorCode::kInvalidArguments},
      {"join: empty member", t.Join(1, "etl", "", "", 4),
       ErrorCode::kInvalidArguments},
      {"join: no partitions", t.Join(1, "etl", "w3", "", 0),
       ErrorCode::kInvalidArguments},
      {"join: too many", t.Join(1, "etl", "w3", "", kMaxGroupPartitions + 1),
       ErrorCode::kInvalidArguments},
      {"join: a member already", t.Join(1, "etl", "w1", "", 4),
       ErrorCode::kClientBusy},
      {"join: another count", t.Join(1, "etl", "w3", "", 5),
       ErrorCode::kCapacityMismatch},
      {"leave: empty member", t.Leave(1, "etl", "", LeaveReason::kLeft),
       ErrorCode::kInvalidArguments},
      {"leave: not a member", t.Leave(1, "etl", "w9", LeaveReason::kLeft),
       ErrorCode::kNotHolder},
      {"leave: no such group", t.Leave(1, "other", "w1", LeaveReason::kLeft),
       ErrorCode::kNotHolder},
      {"release: token 0", t.Release(1, "etl", "w1", 2, 0),
       ErrorCode::kInvalidArguments},
      {"release: beyond the count", t.Release(1, "etl", "w1", 4, 1),
       ErrorCode::kInvalidArguments},
      {"release: another token", t.Release(1, "etl", "w1", 2, 2),
       ErrorCode::kNotHolder},
      {"release: not its holder", t.Release(1, "etl", "w2", 2, 1),
       ErrorCode::kNotHolder},
      {"release: the assignee", t.Release(1, "etl", "w2", 0, 1),
       ErrorCode::kNotHolder},
      {"release: no such group", t.Release(1, "other", "w1", 0, 1),
       ErrorCode::kNotHolder},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ErrorCodeOf(c.status), c.code) << c.what << ": " << c.status;
  }
  EXPECT_EQ(ErrorDetailOf(t.Release(1, "etl", "w1", 4, 1)),
            "etl has 4 partitions");
  EXPECT_THAT(Drain(t), IsEmpty());
  GroupSnapshot after = SnapshotOf(t);
  EXPECT_EQ(after.now, 1);
  after.now = before.now;
  EXPECT_EQ(Describe(after), Describe(before));
  EXPECT_EQ(t.LeaveAll(1, "w9", LeaveReason::kSessionClosed), 0);
}

TEST(GroupTable, LeaveAllLeavesEveryGroupOfTheMemberInNameOrder) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 2, "b");
  MustJoin(t, 0, "w1", 2, "a");
  MustJoin(t, 0, "w2", 2, "a");
  t.TakeEvents();
  EXPECT_EQ(t.LeaveAll(1, "w1", LeaveReason::kSessionClosed), 2);
  std::vector<std::string> left;
  for (const GroupEvent& e : t.TakeEvents()) {
    if (e.kind == Kind::kLeft) left.push_back(e.group + " " + e.member);
  }
  EXPECT_THAT(left, ElementsAre("a w1", "b w1"));
  EXPECT_THAT(Holdings(t, "a"), (std::map<std::string, int>{{"w2", 2}}));
  EXPECT_THAT(Holdings(t, "b"), IsEmpty());
  EXPECT_EQ(t.LeaveAll(2, "w1", LeaveReason::kSessionClosed), 0);
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(GroupTable, MembersAreListedByNameWithLabelsAndHoldings) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w2", 3);
  MustJoin(t, 0, "w1", 3);  // revokes partition 0 from w2
  const std::vector<MemberView> members = t.Members("etl");
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].member, "w1");
  EXPECT_EQ(members[0].label, "host-w1");
  EXPECT_THAT(members[0].holds, IsEmpty());
  EXPECT_EQ(members[1].member, "w2");
  EXPECT_THAT(members[1].holds, ElementsAre(0, 1, 2));
  EXPECT_THAT(t.Members("nobody"), IsEmpty());
  EXPECT_THAT(t.Partitions("nobody"), IsEmpty());
  EXPECT_EQ(t.Partition("etl", 3), std::nullopt);
}

TEST(GroupTable, FencedChecksSeeTheLiveGrantOnly) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 2);
  MustJoin(t, 0, "w2", 2);
  EXPECT_EQ(t.LastToken("etl", 0), 1u);
  EXPECT_TRUE(t.HoldsWithToken("etl", 0, "w1", 1)) << "revoked, still held";
  EXPECT_FALSE(t.HoldsWithToken("etl", 0, "w2", 1));
  ASSERT_TRUE(t.Release(1, "etl", "w1", 0, 1).ok());
  EXPECT_EQ(t.LastToken("etl", 0), 2u);
  EXPECT_FALSE(t.HoldsWithToken("etl", 0, "w1", 1));
  EXPECT_TRUE(t.HoldsWithToken("etl", 0, "w2", 2));
  EXPECT_EQ(t.LastToken("etl", 2), 0u);
  EXPECT_FALSE(t.HoldsWithToken("etl", 2, "w1", 1));
  EXPECT_EQ(t.LastToken("other", 0), 0u);
}

TEST(GroupTable, ATimeBelowTheLatestIsTakenAsTheLatest) {
  GroupTable t = MakeTable();
  MustJoin(t, 50, "w1", 2);
  MustJoin(t, 10, "w2", 2);
  EXPECT_EQ(t.now(), 50);
  EXPECT_EQ(t.NextDeadline(), 50 + kTimeout);
}

TEST(GroupTable, HandOffTimeoutIsAtLeastOneTick) {
  GroupTable t(GroupConfig{0});
  MustJoin(t, 0, "w1", 2);
  MustJoin(t, 0, "w2", 2);
  EXPECT_EQ(t.NextDeadline(), 1);
}

TEST(GroupTable, SnapshotRoundTripKeepsAssignmentTokensAndDeadlines) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1");
  MustJoin(t, 0, "w2");
  ReleaseAllRevoked(t, 1);
  MustJoin(t, 2, "w3");
  MustJoin(t, 3, "x1", 5, "other");
  ASSERT_TRUE(t.Leave(4, "other", "x1", LeaveReason::kLeft).ok());
  const GroupSnapshot snapshot = SnapshotOf(t);

  GroupTable copy = MakeTable();
  ASSERT_TRUE(copy.ImportFrom(snapshot).ok());
  EXPECT_EQ(Describe(SnapshotOf(copy)), Describe(snapshot));
  EXPECT_EQ(Table(copy), Table(t));
  EXPECT_EQ(copy.NextDeadline(), t.NextDeadline());
  ASSERT_TRUE(copy.CheckInvariants().ok()) << copy.CheckInvariants();
  // Both go on identically.
  t.TakeEvents();
  for (GroupTable* table : {&t, &copy}) {
    ASSERT_TRUE(table->Leave(50, "etl", "w1", LeaveReason::kLeft).ok());
    table->AdvanceTo(1000);
    MustJoin(*table, 1001, "w4");
  }
  EXPECT_EQ(Drain(copy), Drain(t));
  EXPECT_EQ(Describe(SnapshotOf(copy)), Describe(SnapshotOf(t)));
}

TEST(GroupTable, AnInconsistentSnapshotIsRefusedAndLeavesTheTableEmpty) {
  GroupTable t = MakeTable();
  MustJoin(t, 0, "w1", 4);
  MustJoin(t, 0, "w2", 4);
  const GroupSnapshot good = SnapshotOf(t);
  struct Case {
    const char* what;
    void (*spoil)(GroupSnapshot&);
  } cases[] = {
      {"group twice",
       [](GroupSnapshot& s) { s.groups.push_back(s.groups[0]); }},
      {"no count", [](GroupSnapshot& s) { s.groups[0].partition_count = 0; }},
      {"fewer partitions than the count",
       [](GroupSnapshot& s) { s.groups[0].partitions.pop_back(); }},
      {"member twice",
       [](GroupSnapshot& s) {
         s.groups[0].members.push_back(s.groups[0].members[0]);
       }},
      {"join number above last_seq",
       [](GroupSnapshot& s) { s.groups[0].members[0].seq = 9; }},
      {"holder not a member",
       [](GroupSnapshot& s) { s.groups[0].partitions[2].holder = "w9"; }},
      {"holder without an assignee",
       [](GroupSnapshot& s) { s.groups[0].partitions[2].assignee.clear(); }},
      {"held without a token",
       [](GroupSnapshot& s) { s.groups[0].partitions[2].last_token = 0; }},
      {"hand-off deadline passed",
       [](GroupSnapshot& s) { s.groups[0].partitions[0].deadline = s.now; }},
      {"unbalanced",
       [](GroupSnapshot& s) {
         for (GroupSnapshot::Partition& p : s.groups[0].partitions) {
           p.holder = p.assignee = "w1";
           p.deadline = 0;
         }
       }},
      {"an empty group with a holder",
       [](GroupSnapshot& s) { s.groups[0].members.clear(); }},
  };
  for (const Case& c : cases) {
    GroupSnapshot bad = good;
    c.spoil(bad);
    GroupTable other = MakeTable();
    MustJoin(other, 0, "z", 1, "zz");
    const absl::Status status = other.ImportFrom(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(std::string(status.message()),
                ::testing::StartsWith("bad group snapshot: "))
        << c.what;
    EXPECT_EQ(other.group_count(), 0u) << c.what;
    EXPECT_EQ(other.now(), kMinTick) << c.what;
  }
}

}  // namespace
}  // namespace leasekeeper
