// libFuzzer target over snapshot decoding (storage/snapshot_file.h).
//
// Input: a mode byte, then the bytes to decode.
//   mode % 3 == 0  the bytes are a core payload for DecodeSnapshotPayload.
//   mode % 3 == 1  the bytes are the payload of a version-2 snapshot file
//                  (core and server state) whose header and checksums this
//                  target writes, so that the fuzzer reaches the decoder
//                  behind the checksum; read with ReadSnapshotFile.
//   mode % 3 == 2  the bytes are a whole snapshot file, header included.
//
// Checked (a violation aborts): nothing crashes, hangs, allocates out of
// proportion or trips ASan/UBSan; DecodeSnapshotPayload refuses with
// DataLoss only, ReadSnapshotFile with DataLoss or FailedPrecondition; what
// decodes round-trips (re-encoded, it decodes to a state that encodes to
// the same bytes; a file written from it reads back the same); and the core
// either refuses a decoded state with a status or restores it with its
// invariants intact.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/state_machine.h"
#include "fuzz_files.h"
#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/snapshot_file.h"

namespace {

using leasekeeper::CoreSnapshot;
using leasekeeper::StateMachine;
using leasekeeper::fuzz::ClearDir;
using leasekeeper::fuzz::Die;
using leasekeeper::fuzz::MakeScratchDir;
using leasekeeper::fuzz::WriteWholeFile;
using leasekeeper::storage::Crc32c;
using leasekeeper::storage::DecodeSnapshotPayload;
using leasekeeper::storage::EncodeSnapshotPayload;
using leasekeeper::storage::kSnapshotFormatVersion;
using leasekeeper::storage::PutFixed32;
using leasekeeper::storage::PutFixed64;
using leasekeeper::storage::ReadSnapshotFile;
using leasekeeper::storage::SameServerState;
using leasekeeper::storage::ServerState;
using leasekeeper::storage::SnapshotFileInfo;
using leasekeeper::storage::SnapshotFileName;
using leasekeeper::storage::WriteSnapshotFile;

constexpr uint64_t kCovered = 42;

const std::string& Dir() {
  static const std::string* dir =
      new std::string(MakeScratchDir("lk-snapshot-fuzz"));
  return *dir;
}

// A version-2 file around `payload`, with correct checksums. Written from
// the format in snapshot_file.h, not with the writer's code, so that a
// writer and reader that drift apart together are still caught.
std::string FileAround(absl::string_view payload) {
  std::string file = "LKSNAPSH";
  PutFixed32(file, kSnapshotFormatVersion);
  PutFixed32(file, 0);
  PutFixed64(file, kCovered);
  PutFixed64(file, payload.size());
  PutFixed32(file, Crc32c(payload));
  PutFixed32(file, Crc32c(file));
  file.append(payload.data(), payload.size());
  return file;
}

std::string Encoded(const CoreSnapshot& snapshot) {
  std::string out;
  EncodeSnapshotPayload(snapshot, out);
  return out;
}

// The core's encoding round-trips, and the core restores or refuses it.
void CheckDecodedCore(const CoreSnapshot& snapshot) {
  const std::string encoded = Encoded(snapshot);
  CoreSnapshot again;
  const absl::Status s = DecodeSnapshotPayload(encoded, again);
  if (!s.ok()) Die(absl::StrCat("re-encoded payload: ", s.ToString()));
  if (Encoded(again) != encoded) Die("the payload encoding is not stable");

  StateMachine machine;
  if (machine.Restore(snapshot).ok()) {
    const absl::Status invariants = machine.table().CheckInvariants();
    if (!invariants.ok()) {
      Die(absl::StrCat("restored a state that breaks the core's invariants: ",
                       invariants.ToString()));
    }
  }
}

void CheckFile(absl::string_view file) {
  ClearDir(Dir());
  const std::string path = Dir() + "/" + SnapshotFileName(kCovered);
  WriteWholeFile(path, file);
  CoreSnapshot snapshot;
  ServerState server;
  absl::StatusOr<SnapshotFileInfo> info =
      ReadSnapshotFile(path, &snapshot, &server);
  if (!info.ok()) {
    const absl::StatusCode code = info.status().code();
    if (code != absl::StatusCode::kDataLoss &&
        code != absl::StatusCode::kFailedPrecondition) {
      Die(absl::StrCat("ReadSnapshotFile refused with another code: ",
                       info.status().ToString()));
    }
    return;
  }
  if (info->bytes != file.size()) Die("the reported size is not the file's");
  CheckDecodedCore(snapshot);

  // Written again, the file reads back the same state.
  ClearDir(Dir());
  absl::StatusOr<SnapshotFileInfo> written =
      WriteSnapshotFile(Dir(), snapshot, info->covered, server);
  if (!written.ok()) Die(written.status().ToString());
  CoreSnapshot snapshot_again;
  ServerState server_again;
  absl::StatusOr<SnapshotFileInfo> reread = ReadSnapshotFile(
      Dir() + "/" + SnapshotFileName(info->covered), &snapshot_again,
      &server_again);
  if (!reread.ok()) Die(reread.status().ToString());
  if (reread->covered != info->covered ||
      Encoded(snapshot_again) != Encoded(snapshot) ||
      !SameServerState(server_again, server)) {
    Die("a rewritten snapshot file reads back another state");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1,
                                size - 1);
  switch (data[0] % 3) {
    case 0: {
      CoreSnapshot snapshot;
      const absl::Status s = DecodeSnapshotPayload(bytes, snapshot);
      if (s.ok()) {
        CheckDecodedCore(snapshot);
      } else if (s.code() != absl::StatusCode::kDataLoss) {
        Die(absl::StrCat("DecodeSnapshotPayload refused with another code: ",
                         s.ToString()));
      }
      break;
    }
    case 1:
      CheckFile(FileAround(bytes));
      break;
    case 2:
      CheckFile(bytes);
      break;
  }
  return 0;
}
