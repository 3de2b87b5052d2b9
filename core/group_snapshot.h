// GroupSnapshot: the whole state of a GroupTable as plain data.
//
// Like CoreSnapshot, every field that influences a later decision is here,
// so restoring it and applying the operations that followed gives exactly
// the state the original reached: the time, each group's partition count
// and join sequence, its members with their labels and join numbers, and
// for every partition whose counter was ever used its counter, holder,
// assigned member and hand-off deadline (also for partitions nobody holds:
// a counter never goes back).
//
// Thread-safety: a plain value.
#ifndef LEASEKEEPER_CORE_GROUP_SNAPSHOT_H_
#define LEASEKEEPER_CORE_GROUP_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace leasekeeper {

struct GroupSnapshot {
  struct Member {
    std::string name;
    std::string label;
    uint64_t seq = 0;  // join number within the group, >= 1
  };
  struct Partition {
    FencingToken last_token = 0;  // the partition's fencing counter
    // Who holds the partition and who is assigned it; both empty when the
    // group has no members. They differ while it is revoked (deadline set).
    std::string holder;
    std::string assignee;
    Tick deadline = 0;  // of the hand-off; 0 unless revoking
  };
  struct Group {
    std::string name;
    uint32_t partition_count = 0;
    uint64_t last_seq = 0;
    std::vector<Member> members;  // by name
    // At least partition_count entries: those beyond it keep the counters
    // of an earlier, larger count.
    std::vector<Partition> partitions;
  };

  Tick now = kMinTick;
  std::vector<Group> groups;  // by name
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_GROUP_SNAPSHOT_H_
