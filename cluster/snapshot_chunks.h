// SnapshotChunks: a follower's side of one snapshot transfer
// (ClusterPeer.FetchSnapshot's stream, PeerSnapshotSource): it checks the
// chunks as they arrive and assembles the file. Whether the bytes are a
// snapshot is LogReplica::InstallSnapshot's to check.
//
// Thread-safety: none; one transfer's reader.
//
// Invariants:
//  1. The bytes held are the chunks' data accepted so far, in order, never
//     more than the size the first chunk announced, itself at most
//     kMaxSnapshotTransferBytes.
//  2. Memory follows the bytes that arrived: an announced size is never
//     allocated ahead of them.
//  3. After an error every later call returns that error.
#ifndef LEASEKEEPER_CLUSTER_SNAPSHOT_CHUNKS_H_
#define LEASEKEEPER_CLUSTER_SNAPSHOT_CHUNKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cluster/snapshot_source.h"

namespace leasekeeper::storage {

inline constexpr uint64_t kMaxSnapshotTransferBytes = uint64_t{4} << 30;

// One chunk as it arrived (v1::SnapshotChunk's fields; the header fields
// count in the first chunk only).
struct SnapshotChunk {
  LogPosition covered_position = 0;
  uint64_t file_bytes = 0;
  uint32_t payload_crc32c = 0;
  uint64_t offset = 0;
  absl::string_view data;
};

class SnapshotChunks {
 public:
  SnapshotChunks() = default;
  SnapshotChunks(const SnapshotChunks&) = delete;
  SnapshotChunks& operator=(const SnapshotChunks&) = delete;

  // Takes the next chunk; the first one's header fields are what the
  // transfer announces. Outcomes: OK; DataLoss for a first chunk announcing
  // more than kMaxSnapshotTransferBytes, or a chunk whose offset is not the
  // number of bytes received so far or whose data goes past the announced
  // size. Cost: O(data.size()) amortized.
  absl::Status Add(const SnapshotChunk& chunk);

  // The stream ended: the whole file with what the first chunk announced.
  // Outcomes: the snapshot (moved out; this is then as new); DataLoss if no
  // chunk arrived or fewer bytes than announced.
  absl::StatusOr<FetchedSnapshot> Finish();

 private:
  FetchedSnapshot fetched_;
  uint64_t announced_ = 0;
  bool any_ = false;
  absl::Status broken_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_SNAPSHOT_CHUNKS_H_
