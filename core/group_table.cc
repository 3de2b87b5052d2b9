#include "core/group_table.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/errors.h"

namespace leasekeeper {
namespace {

absl::Status BadSnapshot(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad group snapshot: ", why));
}

absl::Status Broken(absl::string_view group, uint32_t partition,
                    absl::string_view why) {
  return absl::InternalError(
      absl::StrCat("group ", group, " partition ", partition, ": ", why));
}

}  // namespace

absl::string_view LeaveReasonName(LeaveReason reason) {
  switch (reason) {
    case LeaveReason::kLeft:
      return "left";
    case LeaveReason::kSessionClosed:
      return "session_closed";
    case LeaveReason::kSessionExpired:
      return "session_expired";
  }
  return "unknown";
}

absl::string_view PartitionStateName(PartitionState state) {
  switch (state) {
    case PartitionState::kOwned:
      return "owned";
    case PartitionState::kRevoking:
      return "revoking";
    case PartitionState::kUnassigned:
      return "unassigned";
  }
  return "unknown";
}

bool GroupTable::DeadlineKey::operator<(const DeadlineKey& other) const {
  if (deadline != other.deadline) return deadline < other.deadline;
  if (group != other.group) return group->name < other.group->name;
  return partition < other.partition;
}

GroupTable::GroupTable(GroupConfig config) : config_(config) {
  config_.handoff_timeout =
      std::clamp<int64_t>(config_.handoff_timeout, 1, kMaxCoreTtl);
}

GroupTable::~GroupTable() = default;

GroupTable::Group* GroupTable::FindGroup(absl::string_view name) const {
  auto it = groups_.find(name);
  return it == groups_.end() ? nullptr : it->second.get();
}

GroupTable::Member* GroupTable::FindMember(const Group& group,
                                           absl::string_view name) const {
  auto it = group.members.find(name);
  return it == group.members.end() ? nullptr : it->second.get();
}

void GroupTable::Emit(GroupEvent::Kind kind, Tick at, const Group& group,
                      const Member& member, uint32_t partition,
                      FencingToken token, Tick deadline) {
  GroupEvent& event = events_.emplace_back();
  event.kind = kind;
  event.at = at;
  event.group = group.name;
  event.member = member.name;
  event.partition = partition;
  event.token = token;
  event.deadline = deadline;
}

void GroupTable::Place(Group& group, uint32_t partition, Member* holder,
                       Member* assignee, Tick deadline) {
  PartitionSlot& slot = group.partitions[partition];
  Member* const old_assignee = slot.assignee;
  // Members re-keyed in the load order are those in it: a departing member
  // left it first and stays out.
  bool rekey_old = false;
  bool rekey_new = false;
  if (old_assignee != assignee) {
    if (old_assignee != nullptr) {
      rekey_old =
          group.load.erase(LoadKey{old_assignee->assigned(), old_assignee->seq,
                                   old_assignee}) > 0;
    }
    if (assignee != nullptr) {
      rekey_new = group.load.erase(LoadKey{assignee->assigned(), assignee->seq,
                                           assignee}) > 0;
    }
  }
  if (slot.holder != nullptr && slot.holder == slot.assignee) {
    slot.holder->owned.erase(partition);
  } else if (slot.holder != nullptr) {
    slot.holder->outgoing.erase(partition);
    slot.assignee->incoming.erase(partition);
    deadlines_.erase(DeadlineKey{slot.deadline, &group, partition});
  }
  slot.holder = holder;
  slot.assignee = assignee;
  slot.deadline = 0;
  if (holder != nullptr && holder == assignee) {
    holder->owned.insert(partition);
  } else if (holder != nullptr) {
    holder->outgoing.insert(partition);
    assignee->incoming.insert(partition);
    slot.deadline = deadline;
    deadlines_.insert(DeadlineKey{deadline, &group, partition});
  }
  if (rekey_old) {
    group.load.insert(
        LoadKey{old_assignee->assigned(), old_assignee->seq, old_assignee});
  }
  if (rekey_new) {
    group.load.insert(LoadKey{assignee->assigned(), assignee->seq, assignee});
  }
}

void GroupTable::Grant(Group& group, uint32_t partition, Member& to, Tick at) {
  PartitionSlot& slot = group.partitions[partition];
  ++slot.last_token;
  Place(group, partition, &to, &to, 0);
  Emit(GroupEvent::Kind::kAssigned, at, group, to, partition, slot.last_token);
}

void GroupTable::Retire(Tick now) {
  now_ = std::max(now_, now);
  while (!deadlines_.empty() && deadlines_.begin()->deadline <= now_) {
    const DeadlineKey due = *deadlines_.begin();
    // The key's group is one of groups_, owned (and mutable) here.
    Group& group = *FindGroup(due.group->name);
    const PartitionSlot& slot = group.partitions[due.partition];
    Emit(GroupEvent::Kind::kLost, due.deadline, group, *slot.holder,
         due.partition, slot.last_token);
    Grant(group, due.partition, *slot.assignee, due.deadline);
  }
}

void GroupTable::AdvanceTo(Tick now) { Retire(now); }

std::optional<Tick> GroupTable::NextDeadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->deadline;
}

// One partition of the newcomer's floor(P/N), from the member assigned the
// most (the youngest of those): one it awaits first, moving a hand-off
// already under way to a new recipient, else one it holds, revoked from it.
void GroupTable::TakeForNewcomer(Group& group, Member& newcomer) {
  Member& donor = *std::prev(group.load.end())->member;
  if (!donor.incoming.empty()) {
    const uint32_t partition = *donor.incoming.begin();
    const PartitionSlot& slot = group.partitions[partition];
    Place(group, partition, slot.holder, &newcomer, slot.deadline);
    return;
  }
  const uint32_t partition = *donor.owned.begin();
  const Tick deadline = now_ + config_.handoff_timeout;
  Place(group, partition, &donor, &newcomer, deadline);
  Emit(GroupEvent::Kind::kRevoked, now_, group, donor, partition,
       group.partitions[partition].last_token, deadline);
}

absl::Status GroupTable::Join(Tick now, absl::string_view group_name,
                              absl::string_view member_name,
                              absl::string_view label,
                              uint32_t partition_count) {
  Retire(now);
  if (group_name.empty() || member_name.empty() || partition_count < 1 ||
      partition_count > kMaxGroupPartitions) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  Group* group = FindGroup(group_name);
  if (group != nullptr && FindMember(*group, member_name) != nullptr) {
    return MakeError(ErrorCode::kClientBusy);
  }
  // The count stands while the group has members.
  if (group != nullptr && !group->members.empty() &&
      group->partition_count != partition_count) {
    return MakeError(
        ErrorCode::kCapacityMismatch,
        absl::StrCat(group->name, " is a group of ", group->partition_count,
                     " partitions, asked ", partition_count));
  }
  if (group == nullptr) {
    auto created = std::make_unique<Group>();
    created->name = std::string(group_name);
    group = created.get();
    groups_.emplace(created->name, std::move(created));
  }
  const bool first = group->members.empty();
  if (first) {
    group->partition_count = partition_count;
    if (group->partitions.size() < partition_count) {
      group->partitions.resize(partition_count);
    }
  }
  auto created = std::make_unique<Member>();
  created->name = std::string(member_name);
  created->label = std::string(label);
  created->seq = ++group->last_seq;
  Member& member = *created;
  group->members.emplace(member.name, std::move(created));
  group->load.insert(LoadKey{0, member.seq, &member});
  member_groups_[member.name].insert(group);
  Emit(GroupEvent::Kind::kJoined, now_, *group, member, 0, 0);
  events_.back().label = member.label;
  if (first) {
    for (uint32_t p = 0; p < partition_count; ++p) {
      Grant(*group, p, member, now_);
    }
    return absl::OkStatus();
  }
  const size_t quota = group->partition_count / group->members.size();
  for (size_t taken = 0; taken < quota; ++taken) {
    TakeForNewcomer(*group, member);
  }
  return absl::OkStatus();
}

// A partition whose assignee left goes to a member assigned the fewest (the
// oldest of those); to its holder instead when the holder is one of them,
// which calls its revocation back with a new grant.
void GroupTable::Reassign(Group& group, uint32_t partition, Tick at) {
  const PartitionSlot& slot = group.partitions[partition];
  if (group.load.empty()) {
    Place(group, partition, nullptr, nullptr, 0);
    return;
  }
  Member& fewest = *group.load.begin()->member;
  Member* holder = slot.holder;
  if (holder == nullptr) {
    Grant(group, partition, fewest, at);
  } else if (holder->assigned() == fewest.assigned()) {
    Grant(group, partition, *holder, at);
  } else {
    Place(group, partition, holder, &fewest, slot.deadline);
  }
}

void GroupTable::RemoveMember(Group& group, Member& member, LeaveReason reason,
                              Tick at) {
  Emit(GroupEvent::Kind::kLeft, at, group, member, 0, 0);
  events_.back().reason = reason;
  group.load.erase(LoadKey{member.assigned(), member.seq, &member});
  std::vector<uint32_t> touched;
  touched.reserve(member.owned.size() + member.incoming.size() +
                  member.outgoing.size());
  touched.insert(touched.end(), member.owned.begin(), member.owned.end());
  touched.insert(touched.end(), member.incoming.begin(), member.incoming.end());
  touched.insert(touched.end(), member.outgoing.begin(), member.outgoing.end());
  std::sort(touched.begin(), touched.end());
  for (uint32_t partition : touched) {
    const PartitionSlot& slot = group.partitions[partition];
    if (slot.holder == &member) {
      Emit(GroupEvent::Kind::kLost, at, group, member, partition,
           slot.last_token);
      if (slot.assignee != &member) {
        // Revoked from it: nobody is left to wait for.
        Grant(group, partition, *slot.assignee, at);
        continue;
      }
      Place(group, partition, nullptr, nullptr, 0);
    }
    Reassign(group, partition, at);
  }
  auto groups_of = member_groups_.find(member.name);
  groups_of->second.erase(&group);
  if (groups_of->second.empty()) member_groups_.erase(groups_of);
  const std::string name = member.name;  // the key outlives the member
  group.members.erase(name);
}

absl::Status GroupTable::Leave(Tick now, absl::string_view group_name,
                               absl::string_view member_name,
                               LeaveReason reason) {
  Retire(now);
  if (group_name.empty() || member_name.empty()) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  Group* group = FindGroup(group_name);
  Member* member = group == nullptr ? nullptr : FindMember(*group, member_name);
  if (member == nullptr) return MakeError(ErrorCode::kNotHolder);
  RemoveMember(*group, *member, reason, now_);
  return absl::OkStatus();
}

int GroupTable::LeaveAll(Tick now, absl::string_view member_name,
                         LeaveReason reason) {
  Retire(now);
  auto it = member_groups_.find(member_name);
  if (it == member_groups_.end()) return 0;
  // RemoveMember edits the set (and drops it after the last group).
  const std::vector<Group*> groups(it->second.begin(), it->second.end());
  for (Group* group : groups) {
    RemoveMember(*group, *FindMember(*group, member_name), reason, now_);
  }
  return static_cast<int>(groups.size());
}

absl::Status GroupTable::Release(Tick now, absl::string_view group_name,
                                 absl::string_view member_name,
                                 uint32_t partition, FencingToken token) {
  Retire(now);
  if (group_name.empty() || member_name.empty() || token < 1) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  Group* group = FindGroup(group_name);
  if (group == nullptr) return MakeError(ErrorCode::kNotHolder);
  if (partition >= group->partition_count) {
    return MakeError(ErrorCode::kInvalidArguments,
                     absl::StrCat(group->name, " has ", group->partition_count,
                                  " partitions"));
  }
  Member* member = FindMember(*group, member_name);
  const PartitionSlot& slot = group->partitions[partition];
  if (member == nullptr || slot.holder != member || slot.last_token != token) {
    return MakeError(ErrorCode::kNotHolder);
  }
  Emit(GroupEvent::Kind::kReleased, now_, *group, *member, partition, token);
  Grant(*group, partition, *slot.assignee, now_);
  return absl::OkStatus();
}

PartitionView GroupTable::ViewOf(const Group& group, uint32_t partition) const {
  const PartitionSlot& slot = group.partitions[partition];
  PartitionView view;
  view.partition = partition;
  view.token = slot.last_token;
  if (slot.holder == nullptr) {
    view.state = PartitionState::kUnassigned;
    return view;
  }
  view.owner = slot.holder->name;
  if (slot.holder == slot.assignee) {
    view.state = PartitionState::kOwned;
  } else {
    view.state = PartitionState::kRevoking;
    view.next_owner = slot.assignee->name;
    view.deadline = slot.deadline;
  }
  return view;
}

std::vector<MemberView> GroupTable::Members(absl::string_view name) const {
  std::vector<MemberView> out;
  const Group* group = FindGroup(name);
  if (group == nullptr) return out;
  out.reserve(group->members.size());
  for (const auto& [member_name, member] : group->members) {
    MemberView& view = out.emplace_back();
    view.member = member_name;
    view.label = member->label;
    std::merge(member->owned.begin(), member->owned.end(),
               member->outgoing.begin(), member->outgoing.end(),
               std::back_inserter(view.holds));
  }
  return out;
}

std::vector<PartitionView> GroupTable::Partitions(
    absl::string_view name) const {
  std::vector<PartitionView> out;
  const Group* group = FindGroup(name);
  if (group == nullptr) return out;
  out.reserve(group->partition_count);
  for (uint32_t p = 0; p < group->partition_count; ++p) {
    out.push_back(ViewOf(*group, p));
  }
  return out;
}

uint32_t GroupTable::PartitionCount(absl::string_view name) const {
  const Group* group = FindGroup(name);
  return group == nullptr ? 0 : group->partition_count;
}

std::optional<PartitionView> GroupTable::Partition(absl::string_view name,
                                                   uint32_t partition) const {
  const Group* group = FindGroup(name);
  if (group == nullptr || partition >= group->partition_count) {
    return std::nullopt;
  }
  return ViewOf(*group, partition);
}

FencingToken GroupTable::LastToken(absl::string_view name,
                                   uint32_t partition) const {
  const Group* group = FindGroup(name);
  if (group == nullptr || partition >= group->partition_count) return 0;
  return group->partitions[partition].last_token;
}

bool GroupTable::HoldsWithToken(absl::string_view name, uint32_t partition,
                                absl::string_view member,
                                FencingToken token) const {
  const Group* group = FindGroup(name);
  if (group == nullptr || partition >= group->partition_count) return false;
  const PartitionSlot& slot = group->partitions[partition];
  return slot.holder != nullptr && slot.holder->name == member &&
         slot.last_token == token;
}

std::vector<GroupEvent> GroupTable::TakeEvents() {
  std::vector<GroupEvent> out;
  out.swap(events_);
  return out;
}

void GroupTable::ExportTo(GroupSnapshot& snapshot) const {
  snapshot.now = now_;
  snapshot.groups.clear();
  std::vector<const Group*> by_name;
  by_name.reserve(groups_.size());
  for (const auto& [name, group] : groups_) by_name.push_back(group.get());
  std::sort(by_name.begin(), by_name.end(), ByGroupName{});
  snapshot.groups.reserve(by_name.size());
  for (const Group* group : by_name) {
    GroupSnapshot::Group& out = snapshot.groups.emplace_back();
    out.name = group->name;
    out.partition_count = group->partition_count;
    out.last_seq = group->last_seq;
    out.members.reserve(group->members.size());
    for (const auto& [name, member] : group->members) {
      out.members.push_back({name, member->label, member->seq});
    }
    out.partitions.reserve(group->partitions.size());
    for (const PartitionSlot& slot : group->partitions) {
      GroupSnapshot::Partition& partition = out.partitions.emplace_back();
      partition.last_token = slot.last_token;
      if (slot.holder != nullptr) partition.holder = slot.holder->name;
      if (slot.assignee != nullptr) partition.assignee = slot.assignee->name;
      partition.deadline = slot.deadline;
    }
  }
}

void GroupTable::Clear() {
  deadlines_.clear();
  member_groups_.clear();
  groups_.clear();
  events_.clear();
  now_ = kMinTick;
}

absl::Status GroupTable::ImportGroup(const GroupSnapshot::Group& in) {
  if (in.name.empty()) return BadSnapshot("a group without a name");
  if (FindGroup(in.name) != nullptr) {
    return BadSnapshot(absl::StrCat("group ", in.name, " twice"));
  }
  if (in.partition_count < 1 || in.partition_count > kMaxGroupPartitions ||
      in.partitions.size() < in.partition_count ||
      in.partitions.size() > kMaxGroupPartitions) {
    return BadSnapshot(absl::StrCat("group ", in.name, " has ",
                                    in.partition_count, " partitions of ",
                                    in.partitions.size(), " kept"));
  }
  auto created = std::make_unique<Group>();
  Group& group = *created;
  group.name = in.name;
  group.partition_count = in.partition_count;
  group.last_seq = in.last_seq;
  group.partitions.resize(in.partitions.size());
  groups_.emplace(group.name, std::move(created));
  absl::btree_set<uint64_t> seqs;
  for (const GroupSnapshot::Member& in_member : in.members) {
    if (in_member.name.empty() || in_member.seq < 1 ||
        in_member.seq > in.last_seq || !seqs.insert(in_member.seq).second ||
        FindMember(group, in_member.name) != nullptr) {
      return BadSnapshot(absl::StrCat("group ", in.name, " member '",
                                      in_member.name, "' join number ",
                                      in_member.seq));
    }
    auto member = std::make_unique<Member>();
    member->name = in_member.name;
    member->label = in_member.label;
    member->seq = in_member.seq;
    group.load.insert(LoadKey{0, member->seq, member.get()});
    member_groups_[member->name].insert(&group);
    group.members.emplace(member->name, std::move(member));
  }
  for (uint32_t p = 0; p < in.partitions.size(); ++p) {
    const GroupSnapshot::Partition& in_partition = in.partitions[p];
    Member* holder = in_partition.holder.empty()
                         ? nullptr
                         : FindMember(group, in_partition.holder);
    Member* assignee = in_partition.assignee.empty()
                           ? nullptr
                           : FindMember(group, in_partition.assignee);
    if ((holder == nullptr) != in_partition.holder.empty() ||
        (assignee == nullptr) != in_partition.assignee.empty() ||
        (holder == nullptr) != (assignee == nullptr)) {
      return BadSnapshot(absl::StrCat(
          "group ", in.name, " partition ", p, ": holder '",
          in_partition.holder, "', assignee '", in_partition.assignee, "'"));
    }
    group.partitions[p].last_token = in_partition.last_token;
    Place(group, p, holder, assignee, in_partition.deadline);
  }
  return absl::OkStatus();
}

absl::Status GroupTable::ImportFrom(const GroupSnapshot& snapshot) {
  Clear();
  now_ = snapshot.now;
  for (const GroupSnapshot::Group& group : snapshot.groups) {
    if (absl::Status status = ImportGroup(group); !status.ok()) {
      Clear();
      return status;
    }
  }
  if (absl::Status status = CheckInvariants(); !status.ok()) {
    Clear();
    return BadSnapshot(status.message());
  }
  return absl::OkStatus();
}

absl::Status GroupTable::CheckGroup(const Group& group) const {
  if (group.partition_count < 1 ||
      group.partition_count > kMaxGroupPartitions ||
      group.partitions.size() < group.partition_count) {
    return absl::InternalError(
        absl::StrCat("group ", group.name, ": bad partition count"));
  }
  const bool has_members = !group.members.empty();
  size_t owned = 0;
  size_t revoking = 0;
  for (uint32_t p = 0; p < group.partitions.size(); ++p) {
    const PartitionSlot& slot = group.partitions[p];
    const bool counted = p < group.partition_count;
    if ((slot.holder != nullptr) != (counted && has_members) ||
        (slot.assignee != nullptr) != (slot.holder != nullptr)) {
      return Broken(group.name, p, "holder or assignee out of place");
    }
    if (slot.holder == nullptr) continue;
    if (FindMember(group, slot.holder->name) != slot.holder ||
        FindMember(group, slot.assignee->name) != slot.assignee) {
      return Broken(group.name, p, "holder or assignee not a member");
    }
    if (slot.last_token < 1) return Broken(group.name, p, "held, no token");
    if (slot.holder == slot.assignee) {
      ++owned;
      if (!slot.holder->owned.contains(p)) {
        return Broken(group.name, p, "missing from its owner's set");
      }
      continue;
    }
    ++revoking;
    if (slot.deadline <= now_ ||
        !deadlines_.contains(DeadlineKey{slot.deadline, &group, p})) {
      return Broken(group.name, p, "hand-off without a future deadline");
    }
    if (!slot.holder->outgoing.contains(p) ||
        !slot.assignee->incoming.contains(p)) {
      return Broken(group.name, p, "missing from its hand-off's sets");
    }
  }
  // Every set entry was found above from its partition; equal totals leave
  // no stray ones.
  size_t owned_entries = 0;
  size_t incoming_entries = 0;
  size_t outgoing_entries = 0;
  size_t fewest = SIZE_MAX;
  size_t most = 0;
  absl::btree_set<uint64_t> seqs;
  for (const auto& [name, member] : group.members) {
    owned_entries += member->owned.size();
    incoming_entries += member->incoming.size();
    outgoing_entries += member->outgoing.size();
    fewest = std::min(fewest, member->assigned());
    most = std::max(most, member->assigned());
    if (member->name != name || member->seq < 1 ||
        member->seq > group.last_seq || !seqs.insert(member->seq).second) {
      return absl::InternalError(absl::StrCat(
          "group ", group.name, " member ", name, ": bad name or join number"));
    }
    if (!group.load.contains(
            LoadKey{member->assigned(), member->seq, member.get()})) {
      return absl::InternalError(absl::StrCat("group ", group.name, " member ",
                                              name, ": not in the load order"));
    }
    auto groups_of = member_groups_.find(name);
    if (groups_of == member_groups_.end() ||
        !groups_of->second.contains(const_cast<Group*>(&group))) {
      return absl::InternalError(absl::StrCat("group ", group.name, " member ",
                                              name, ": not in its groups"));
    }
  }
  if (owned_entries != owned || incoming_entries != revoking ||
      outgoing_entries != revoking ||
      group.load.size() != group.members.size()) {
    return absl::InternalError(
        absl::StrCat("group ", group.name, ": stray set or load entries"));
  }
  if (has_members && most - fewest > 1) {
    return absl::InternalError(absl::StrCat(
        "group ", group.name, ": unbalanced, ", fewest, " to ", most));
  }
  return absl::OkStatus();
}

absl::Status GroupTable::CheckInvariants() const {
  size_t revoking = 0;
  size_t memberships = 0;
  for (const auto& [name, group] : groups_) {
    if (group->name != name) {
      return absl::InternalError(absl::StrCat("group ", name, ": bad name"));
    }
    if (absl::Status status = CheckGroup(*group); !status.ok()) return status;
    for (const auto& [member_name, member] : group->members) {
      revoking += member->outgoing.size();
    }
    memberships += group->members.size();
  }
  size_t indexed = 0;
  for (const auto& [member, groups] : member_groups_) indexed += groups.size();
  if (revoking != deadlines_.size() || memberships != indexed) {
    return absl::InternalError("stray deadline or membership index entries");
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper
