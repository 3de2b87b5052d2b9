#include "cluster/snapshot_chunks.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace leasekeeper::storage {

absl::Status SnapshotChunks::Add(const SnapshotChunk& chunk) {
  if (!broken_.ok()) return broken_;
  if (!any_) {
    any_ = true;
    fetched_.covered = chunk.covered_position;
    fetched_.payload_crc32c = chunk.payload_crc32c;
    announced_ = chunk.file_bytes;
    if (announced_ > kMaxSnapshotTransferBytes) {
      broken_ = absl::DataLossError(
          absl::StrCat("snapshot transfer: ", announced_,
                       " bytes announced, over ", kMaxSnapshotTransferBytes));
      return broken_;
    }
  }
  const uint64_t held = fetched_.bytes.size();
  if (chunk.offset != held || chunk.data.size() > announced_ - held) {
    broken_ = absl::DataLossError(absl::StrCat(
        "snapshot transfer: a chunk at offset ", chunk.offset, " of ",
        chunk.data.size(), " bytes after ", held, " of ", announced_));
    return broken_;
  }
  fetched_.bytes.append(chunk.data.data(), chunk.data.size());
  return absl::OkStatus();
}

absl::StatusOr<FetchedSnapshot> SnapshotChunks::Finish() {
  if (!broken_.ok()) return broken_;
  if (!any_ || fetched_.bytes.size() != announced_) {
    broken_ = absl::DataLossError(
        absl::StrCat("snapshot transfer: ", fetched_.bytes.size(),
                     " bytes received of ", announced_, " announced"));
    return broken_;
  }
  FetchedSnapshot done = std::move(fetched_);
  fetched_ = FetchedSnapshot{};
  any_ = false;
  announced_ = 0;
  return done;
}

}  // namespace leasekeeper::storage
