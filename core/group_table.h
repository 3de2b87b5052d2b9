// GroupTable: groups of live members sharing a fixed number of partitions,
// each partition owned by one member at a time under a fencing token of
// its own, kept balanced over the members and handed off on a change only
// once its old owner lets go. How and why: docs/design/groups.md.
//
// Thread-safety: none. One owner calls it, one call at a time.
//
// Time: it never reads a clock. Every method that takes `now` first ends,
// in deadline order, every hand-off whose deadline is <= now, granting each
// partition to its assignee at the instant the deadline passed. REQUIRES:
// now in [kMinTick, kMaxTick]; a `now` below the latest seen is taken as
// the latest. What a call does (grants, revocations, releases, losses,
// joins and leaves) is queued for TakeEvents(), the caller's own effects
// included. Nothing waits: every call decides at once. No method scans all
// groups or members; costs are per method.
#ifndef LEASEKEEPER_CORE_GROUP_TABLE_H_
#define LEASEKEEPER_CORE_GROUP_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/group_snapshot.h"
#include "core/types.h"

namespace leasekeeper {

// A group has between 1 and kMaxGroupPartitions partitions.
inline constexpr uint32_t kMaxGroupPartitions = 65536;

struct GroupConfig {
  // Ticks a revoked owner has to release a partition before it loses it
  // anyway: 5 s in the daemon's milliseconds. Taken as 1 if below 1 and as
  // kMaxCoreTtl if above it.
  int64_t handoff_timeout = 5000;
};

// Why a member left (reported in GroupEvent::kLeft, otherwise the same).
enum class LeaveReason : uint8_t {
  kLeft,            // it asked to
  kSessionClosed,   // its session was closed or replaced
  kSessionExpired,  // its session's grace ran out (the process died)
};
// "left", "session_closed", "session_expired".
absl::string_view LeaveReasonName(LeaveReason reason);

enum class PartitionState : uint8_t {
  kOwned,       // held by the member it is assigned to
  kRevoking,    // held by one member, assigned to another: a hand-off
  kUnassigned,  // the group has no members
};
// "owned", "revoking", "unassigned".
absl::string_view PartitionStateName(PartitionState state);

// Something a call did. A grant's life is kAssigned, optionally kRevoked,
// then kReleased or kLost; or, when the revocation is called back (the
// partition is assigned back to its holder before it released), a kAssigned
// of the same partition to the same member with a higher token, which
// replaces the earlier grant.
struct GroupEvent {
  enum class Kind : uint8_t {
    kJoined,    // `member` joined with `label`
    kLeft,      // `member` left for `reason`; its kLost events follow
    kAssigned,  // `member` owns `partition` under `token` from `at`
    kRevoked,   // `member` must Release `partition` (`token`) by `deadline`
    kReleased,  // `member` released its grant `token` of `partition`
    // `member`'s grant `token` of `partition` ended without a Release: the
    // hand-off deadline passed (`at` is the deadline) or the member left.
    kLost,
  };
  Kind kind = Kind::kJoined;
  Tick at = 0;
  std::string group;
  std::string member;
  std::string label;                        // kJoined
  LeaveReason reason = LeaveReason::kLeft;  // kLeft
  uint32_t partition = 0;                   // partition events
  FencingToken token = 0;                   // partition events
  Tick deadline = 0;                        // kRevoked
};

struct MemberView {
  std::string member;
  std::string label;
  std::vector<uint32_t> holds;  // partitions it holds, revoked ones included
};

struct PartitionView {
  uint32_t partition = 0;
  PartitionState state = PartitionState::kUnassigned;
  // The holder and its grant's token; for kUnassigned no owner, and the
  // last token issued (0 if none).
  std::string owner;
  FencingToken token = 0;
  // kRevoking: the member it goes to and the hand-off deadline.
  std::string next_owner;
  Tick deadline = 0;
};

// Invariants, true between calls:
//  1. A group with members has, for every partition below its count, one
//     holder and one assignee, both members; a group without members has
//     neither for any partition (all unassigned), and partitions at or
//     above the count never have them.
//  2. A partition is owned iff its holder is its assignee, revoking iff
//     they differ; a revoking partition has a deadline > the latest now.
//  3. The members' numbers of assigned partitions differ by at most one:
//     each is floor(P/N) or ceil(P/N).
//  4. A held partition's grant token is its counter (>= 1); a counter
//     rises by one per grant and never falls: at most one grant of a
//     partition is live, and every grant has a higher token than the last.
class GroupTable {
 public:
  explicit GroupTable(GroupConfig config = {});
  GroupTable(const GroupTable&) = delete;
  GroupTable& operator=(const GroupTable&) = delete;
  ~GroupTable();

  // Adds `member` to `group` with `label`. Outcomes, checked in this order
  // (a refusal changes nothing but time):
  //  - kInvalidArguments: empty group or member; partition_count outside
  //    [1, kMaxGroupPartitions].
  //  - kClientBusy: `member` is a member of `group` already.
  //  - kCapacityMismatch: the group has members and another partition
  //    count (detail "<group> is a group of P partitions, asked Q").
  //  - OK: the first member sets the count and is granted every partition
  //    (kAssigned each); a later one is assigned floor(P/N) partitions taken
  //    one at a time from the members with the most, those awaiting a
  //    hand-off first, the others revoked from their holders (kRevoked,
  //    deadline now + handoff_timeout).
  // Cost: O(the partitions it moves * (log N + log P)); the first member's
  // O(P).
  absl::Status Join(Tick now, absl::string_view group, absl::string_view member,
                    absl::string_view label, uint32_t partition_count);

  // Removes `member` from `group` (kLeft with `reason`). Its grants end
  // (kLost); the partitions assigned to it go one at a time to the members
  // with the fewest, or back to their holder when it is one of those; a
  // partition nobody else holds is granted at once (kAssigned). The last
  // member's partitions become unassigned; the group keeps its counters.
  // Outcomes: OK; kInvalidArguments for an empty name; kNotHolder if
  // `member` is not a member of `group`. Cost: O(the partitions it held or
  // was assigned * (log N + log P)).
  absl::Status Leave(Tick now, absl::string_view group,
                     absl::string_view member, LeaveReason reason);

  // Session end: Leave for every group `member` is in, in group-name order.
  // Returns the number of groups left (0 for a member of none). Cost: as
  // Leave, per group.
  int LeaveAll(Tick now, absl::string_view member, LeaveReason reason);

  // Ends `member`'s grant `token` of `partition` (kReleased). A revoked
  // partition is granted to its assignee at once; one that was not revoked
  // is granted to `member` again under a new token. Outcomes: OK;
  // kInvalidArguments for an empty name or a token < 1, or a partition at
  // or above the group's count (detail "<group> has P partitions");
  // kNotHolder unless `member` holds `partition` under exactly `token`.
  // Cost: O(log N + log P).
  absl::Status Release(Tick now, absl::string_view group,
                       absl::string_view member, uint32_t partition,
                       FencingToken token);

  // Ends every hand-off with a deadline <= now and nothing else: the holder
  // loses the partition (kLost at the deadline), its assignee is granted it.
  void AdvanceTo(Tick now);

  // The earliest hand-off deadline, if any: when the owner must call
  // AdvanceTo next. O(1).
  std::optional<Tick> NextDeadline() const;

  // Views as of the latest `now` seen; a group never seen is empty. Members
  // by name, O(N + P); partitions by number, O(P). partition_count is 0
  // for a group never seen, and stays set when the last member leaves.
  std::vector<MemberView> Members(absl::string_view group) const;
  std::vector<PartitionView> Partitions(absl::string_view group) const;
  uint32_t PartitionCount(absl::string_view group) const;
  // One partition; nullopt for a group never seen or a partition at or
  // above its count. O(1).
  std::optional<PartitionView> Partition(absl::string_view group,
                                         uint32_t partition) const;

  // For the fenced store's checks, as of the latest `now` seen: the highest
  // token issued for the partition (0 if none or no such partition); and
  // whether `member` holds it under exactly `token`. O(1).
  FencingToken LastToken(absl::string_view group, uint32_t partition) const;
  bool HoldsWithToken(absl::string_view group, uint32_t partition,
                      absl::string_view member, FencingToken token) const;

  // Drains the events caused since the last call, in the order they
  // happened; pending_events() reads them without draining.
  std::vector<GroupEvent> TakeEvents();
  const std::vector<GroupEvent>& pending_events() const { return events_; }

  // The latest `now` seen; kMinTick before the first call.
  Tick now() const { return now_; }
  // Sizes, for metrics and tests. O(1).
  size_t group_count() const { return groups_.size(); }
  size_t revoking_count() const { return deadlines_.size(); }

  // The whole state into `snapshot`, groups and members by name. Cost:
  // O(size of the table + groups * log groups).
  void ExportTo(GroupSnapshot& snapshot) const;
  // Replaces the state with `snapshot`'s. InvalidArgument ("bad group
  // snapshot: ...", the table left empty) if it is inconsistent: an empty
  // or repeated name, a count outside [1, kMaxGroupPartitions] or above the
  // partitions kept, a join number of 0, repeated or above last_seq, a
  // holder or assignee that is not a member, or any invariant above broken.
  // Pending events are dropped. Cost: O(size of the snapshot).
  absl::Status ImportFrom(const GroupSnapshot& snapshot);

  // Checks every invariant above and the consistency of all indexes; the
  // first violation found. Cost: O(size of the table); for tests.
  absl::Status CheckInvariants() const;

 private:
  struct Member;
  struct Group;
  struct PartitionSlot {
    FencingToken last_token = 0;
    Member* holder = nullptr;
    Member* assignee = nullptr;
    Tick deadline = 0;  // while holder != assignee
  };
  struct Member {
    std::string name;
    std::string label;
    uint64_t seq = 0;
    // Disjoint, by the partition's (holder, assignee): held and assigned
    // to it; assigned to it, held by another; held by it, assigned to
    // another (revoked from it).
    absl::btree_set<uint32_t> owned;
    absl::btree_set<uint32_t> incoming;
    absl::btree_set<uint32_t> outgoing;
    size_t assigned() const { return owned.size() + incoming.size(); }
  };
  // The balance order: fewest assigned first, then oldest (lowest seq).
  struct LoadKey {
    size_t assigned;
    uint64_t seq;
    Member* member;
    bool operator<(const LoadKey& other) const {
      if (assigned != other.assigned) return assigned < other.assigned;
      return seq < other.seq;
    }
  };
  struct Group {
    std::string name;
    uint32_t partition_count = 0;
    uint64_t last_seq = 0;
    std::vector<PartitionSlot> partitions;  // >= partition_count entries
    absl::btree_map<std::string, std::unique_ptr<Member>, std::less<>> members;
    absl::btree_set<LoadKey> load;  // every member once
  };
  // Hand-offs by (deadline, group name, partition): the same order on
  // every replica.
  struct DeadlineKey {
    Tick deadline;
    const Group* group;
    uint32_t partition;
    bool operator<(const DeadlineKey& other) const;
  };
  struct ByGroupName {
    bool operator()(const Group* a, const Group* b) const {
      return a->name < b->name;
    }
  };

  Group* FindGroup(absl::string_view name) const;
  Member* FindMember(const Group& group, absl::string_view name) const;
  // The one place a partition's holder, assignee and deadline change: it
  // keeps the members' sets, the load order and the deadline index in step.
  void Place(Group& group, uint32_t partition, Member* holder, Member* assignee,
             Tick deadline);
  // A new grant of `partition` to `to` at `at` (kAssigned), under the next
  // token; `to` becomes its holder and assignee. REQUIRES: the holder's
  // grant, if any, has just ended (kReleased or kLost), or is `to`'s own (a
  // revocation called back).
  void Grant(Group& group, uint32_t partition, Member& to, Tick at);
  // Joins' and leaves' moves of one assigned partition.
  void TakeForNewcomer(Group& group, Member& newcomer);
  void Reassign(Group& group, uint32_t partition, Tick at);
  void RemoveMember(Group& group, Member& member, LeaveReason reason, Tick at);
  void Retire(Tick now);
  void Emit(GroupEvent::Kind kind, Tick at, const Group& group,
            const Member& member, uint32_t partition, FencingToken token,
            Tick deadline = 0);
  PartitionView ViewOf(const Group& group, uint32_t partition) const;
  void Clear();
  absl::Status ImportGroup(const GroupSnapshot::Group& in);
  absl::Status CheckGroup(const Group& group) const;

  GroupConfig config_;
  Tick now_ = kMinTick;
  absl::flat_hash_map<std::string, std::unique_ptr<Group>> groups_;
  // The groups each member is in, for LeaveAll.
  absl::flat_hash_map<std::string, absl::btree_set<Group*, ByGroupName>>
      member_groups_;
  absl::btree_set<DeadlineKey> deadlines_;
  std::vector<GroupEvent> events_;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_GROUP_TABLE_H_
