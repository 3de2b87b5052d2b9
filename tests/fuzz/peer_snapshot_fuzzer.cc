// libFuzzer target over a follower's side of the snapshot transfer between
// nodes: chunks as a leader's ClusterPeer.FetchSnapshot stream could send
// them, through SnapshotChunks (cluster/snapshot_chunks.h), and what it
// assembles installed with LogReplica::InstallSnapshot, as
// PeerSnapshotSource and EtcdLogFollower do.
//
// Input: one byte, min_covered; then chunks, each a tag byte, the header
// fields if tag bit 0 (covered u64, file_bytes u64, payload_crc32c u32,
// little-endian), an offset if tag bit 1 (u64; else the offset that comes
// next), a u16 length and that many data bytes (fewer at the input's
// end). The stream ends with the input. fuzz_seeds writes valid transfers
// of a real snapshot file (tests/fuzz/corpus/peer_snapshot/).
//
// Checked (a violation aborts): nothing crashes or trips ASan/UBSan, and no
// allocation exceeds scripts/fuzz's -malloc_limit_mb whatever size is
// announced; Add and Finish accept exactly what the contract accepts (a
// model here, from snapshot_chunks.h's text), refuse with DataLoss, and
// repeat their first error; a finished transfer is the chunks' bytes with
// the first chunk's announcement; InstallSnapshot installs, or refuses
// with DataLoss or FailedPrecondition; an installed snapshot is the file in
// the data dir, byte for byte, and round-trips: a replica reopened from the
// dir holds the same state, and the same transfer again is refused.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "cluster/log_replica.h"
#include "cluster/snapshot_chunks.h"
#include "core/state_machine.h"
#include "fuzz_files.h"
#include "storage/coding.h"
#include "storage/snapshot_file.h"

namespace {

using leasekeeper::CoreConfig;
using leasekeeper::CoreSnapshot;
using leasekeeper::fuzz::ClearDir;
using leasekeeper::fuzz::Die;
using leasekeeper::fuzz::MakeScratchDir;
using leasekeeper::fuzz::ReadWholeFile;
using leasekeeper::storage::DecodeFixed32;
using leasekeeper::storage::DecodeFixed64;
using leasekeeper::storage::EncodeSnapshotPayload;
using leasekeeper::storage::FetchedSnapshot;
using leasekeeper::storage::kMaxSnapshotTransferBytes;
using leasekeeper::storage::LogReplica;
using leasekeeper::storage::SnapshotChunk;
using leasekeeper::storage::SnapshotChunks;
using leasekeeper::storage::SnapshotFileName;

const std::string& Dir() {
  static const std::string* dir =
      new std::string(MakeScratchDir("lk-peer-snapshot-fuzz"));
  return *dir;
}

// Reads the input front to back; past its end, zeros and empty strings.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : rest_(bytes) {}
  bool empty() const { return rest_.empty(); }
  absl::string_view Bytes(size_t n) {
    const absl::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(out.size());
    return out;
  }
  uint64_t Fixed64() {
    const absl::string_view b = Bytes(8);
    return b.size() == 8 ? DecodeFixed64(b.data()) : 0;
  }
  uint32_t Fixed32() {
    const absl::string_view b = Bytes(4);
    return b.size() == 4 ? DecodeFixed32(b.data()) : 0;
  }
  uint8_t Byte() {
    const absl::string_view b = Bytes(1);
    return b.empty() ? 0 : static_cast<uint8_t>(b[0]);
  }
  uint16_t Fixed16() {
    const uint16_t low = Byte();
    return static_cast<uint16_t>(low | (Byte() << 8));
  }

 private:
  absl::string_view rest_;
};

// The replica's state, encoded with its sets (locks, clients, store) in
// name order: Snapshot() lists them in hash-table order, which two
// restores of the same state need not share.
std::string Encoded(const LogReplica& replica) {
  CoreSnapshot snapshot = replica.machine().Snapshot();
  auto by = [](auto field) {
    return [field](const auto& a, const auto& b) { return a.*field < b.*field; };
  };
  std::sort(snapshot.locks.begin(), snapshot.locks.end(),
            by(&CoreSnapshot::Lock::name));
  std::sort(snapshot.clients.begin(), snapshot.clients.end(),
            by(&CoreSnapshot::Client::name));
  std::sort(snapshot.store.begin(), snapshot.store.end(),
            by(&CoreSnapshot::StoreLock::lock));
  std::string out;
  EncodeSnapshotPayload(snapshot, out);
  return out;
}

std::unique_ptr<LogReplica> OpenReplica() {
  absl::StatusOr<std::unique_ptr<LogReplica>> replica =
      LogReplica::Open(Dir(), CoreConfig{});
  if (!replica.ok()) Die(absl::StrCat("Open: ", replica.status().ToString()));
  return *std::move(replica);
}

void Install(const FetchedSnapshot& fetched, uint64_t min_covered) {
  ClearDir(Dir());
  std::unique_ptr<LogReplica> replica = OpenReplica();
  const absl::Status installed =
      replica->InstallSnapshot(fetched, min_covered);
  if (!installed.ok()) {
    if (installed.code() != absl::StatusCode::kDataLoss &&
        installed.code() != absl::StatusCode::kFailedPrecondition) {
      Die(absl::StrCat("InstallSnapshot refused with another code: ",
                       installed.ToString()));
    }
    if (replica->applied() != 0) Die("a refused snapshot changed the replica");
    return;
  }
  if (replica->applied() != fetched.covered ||
      replica->snapshot_position() != fetched.covered) {
    Die("the replica is not at the installed snapshot's position");
  }
  if (ReadWholeFile(Dir() + "/" + SnapshotFileName(fetched.covered)) !=
      fetched.bytes) {
    Die("the data dir does not hold the received file");
  }
  if (replica->InstallSnapshot(fetched, min_covered).code() !=
      absl::StatusCode::kFailedPrecondition) {
    Die("the same snapshot installed twice");
  }
  const std::string state = Encoded(*replica);
  replica.reset();  // unlocks the dir
  std::unique_ptr<LogReplica> reopened = OpenReplica();
  if (reopened->applied() != fetched.covered) {
    Die(absl::StrCat("a replica reopened from the installed snapshot is at ",
                     reopened->applied()));
  }
  if (!reopened->damaged_snapshots().empty()) {
    Die(absl::StrCat("the installed snapshot reads as damaged: ",
                     reopened->damaged_snapshots().front()));
  }
  if (Encoded(*reopened) != state) {
    Die("a replica reopened from the installed snapshot holds another state");
  }
}

void ExpectDataLoss(const absl::Status& status, const char* call) {
  if (status.code() != absl::StatusCode::kDataLoss) {
    Die(absl::StrCat(call, ": ", status.ToString(), ", the contract says "
                     "DataLoss"));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(absl::string_view(reinterpret_cast<const char*>(data), size));
  const uint64_t min_covered = in.Byte();
  SnapshotChunks chunks;
  // The model: what the contract says has been accepted so far.
  std::string held;
  FetchedSnapshot announced;
  uint64_t announced_bytes = 0;
  bool any = false;
  absl::Status broken;
  while (!in.empty()) {
    const uint8_t tag = in.Byte();
    SnapshotChunk chunk;
    if (tag & 1) {
      chunk.covered_position = in.Fixed64();
      chunk.file_bytes = in.Fixed64();
      chunk.payload_crc32c = in.Fixed32();
    }
    chunk.offset = (tag & 2) ? in.Fixed64() : held.size();
    chunk.data = in.Bytes(in.Fixed16());

    bool refused = !broken.ok();
    if (!refused && !any) {
      any = true;
      announced.covered = chunk.covered_position;
      announced.payload_crc32c = chunk.payload_crc32c;
      announced_bytes = chunk.file_bytes;
      refused = announced_bytes > kMaxSnapshotTransferBytes;
    }
    refused = refused || chunk.offset != held.size() ||
              held.size() + chunk.data.size() > announced_bytes;

    const absl::Status added = chunks.Add(chunk);
    if (!broken.ok()) {
      if (added != broken) Die("Add after an error: another outcome");
    } else if (refused) {
      ExpectDataLoss(added, "Add");
      broken = added;
    } else if (!added.ok()) {
      Die(absl::StrCat("Add refused a chunk the contract accepts: ",
                       added.ToString()));
    } else {
      held.append(chunk.data.data(), chunk.data.size());
    }
  }

  absl::StatusOr<FetchedSnapshot> fetched = chunks.Finish();
  if (!broken.ok()) {
    if (fetched.status() != broken) Die("Finish after an error: another outcome");
    return 0;
  }
  if (!any || held.size() != announced_bytes) {
    ExpectDataLoss(fetched.status(), "Finish");
    return 0;
  }
  if (!fetched.ok()) {
    Die(absl::StrCat("Finish refused a whole transfer: ",
                     fetched.status().ToString()));
  }
  if (fetched->bytes != held || fetched->covered != announced.covered ||
      fetched->payload_crc32c != announced.payload_crc32c) {
    Die("the finished transfer is not what was sent and announced");
  }
  Install(*fetched, min_covered);
  return 0;
}
