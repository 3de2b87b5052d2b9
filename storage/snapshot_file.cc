#include "storage/snapshot_file.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/file.h"
#include "storage/operation_codec.h"

namespace leasekeeper::storage {
namespace {

constexpr absl::string_view kSnapshotMagic = "LKSNAPSH";
constexpr uint64_t kAnyLength = std::numeric_limits<uint64_t>::max();

// Decodes the payload; on failure `offset` tells where.
class PayloadDecoder {
 public:
  PayloadDecoder(absl::string_view payload, uint32_t version)
      : payload_(payload), in_(payload), version_(version) {}

  // The core's part; bytes may follow (the server state of version 2).
  absl::Status DecodeCore(CoreSnapshot& s) {
    uint64_t n = 0;
    if (!in_.GetSignedVarint64(s.now) || !in_.GetVarint64(s.last_age) ||
        !in_.GetVarint64(s.last_sequence)) {
      return Bad("header fields");
    }
    if (!Count(n)) return Bad("client count");
    s.clients.clear();
    s.clients.resize(n);
    for (CoreSnapshot::Client& c : s.clients) {
      if (!in_.GetString(c.name, kAnyLength) || !in_.GetVarint64(c.age)) {
        return Bad("client");
      }
    }
    if (!Count(n)) return Bad("lock count");
    s.locks.clear();
    s.locks.resize(n);
    for (CoreSnapshot::Lock& lock : s.locks) {
      uint64_t holders = 0;
      uint64_t capacity = 0;
      if (!in_.GetString(lock.name, kAnyLength) ||
          !in_.GetVarint64(lock.last_token) ||
          (version_ >= 3 && (!in_.GetVarint64(capacity) ||
                             capacity > kMaxSemaphoreCapacity)) ||
          !Count(holders)) {
        return Bad("lock");
      }
      lock.capacity = static_cast<uint32_t>(capacity);
      lock.holders.resize(holders);
      for (CoreSnapshot::Holder& h : lock.holders) {
        if (!in_.GetString(h.client, kAnyLength) || !Mode(h.mode) ||
            !in_.GetVarint64(h.token) || !in_.GetSignedVarint64(h.expires_at) ||
            !in_.GetSignedVarint64(h.ttl) || !in_.GetVarint64(h.sequence)) {
          return Bad("holder");
        }
      }
      uint64_t waiters = 0;
      if (!Count(waiters)) return Bad("queue length");
      lock.queue.resize(waiters);
      for (CoreSnapshot::Waiter& w : lock.queue) {
        if (!in_.GetString(w.client, kAnyLength) || !Mode(w.mode) ||
            !in_.GetSignedVarint64(w.ttl)) {
          return Bad("waiter");
        }
      }
    }
    if (!Count(n)) return Bad("store count");
    s.store.clear();
    s.store.resize(n);
    for (CoreSnapshot::StoreLock& lock : s.store) {
      uint64_t values = 0;
      if (!in_.GetString(lock.lock, kAnyLength) ||
          !in_.GetVarint64(lock.high_water) || !Count(values)) {
        return Bad("store lock");
      }
      lock.values.resize(values);
      for (CoreSnapshot::StoreValue& v : lock.values) {
        if (!in_.GetString(v.key, kAnyLength) ||
            !in_.GetString(v.value, kAnyLength)) {
          return Bad("store value");
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status DecodeServer(ServerState& s) {
    uint64_t n = 0;
    if (!Count(n)) return Bad("session count");
    s.sessions.clear();
    s.sessions.resize(n);
    for (ServerState::Session& session : s.sessions) {
      if (!in_.GetString(session.session_id, kAnyLength) ||
          !in_.GetString(session.client, kAnyLength)) {
        return Bad("session");
      }
    }
    if (!Count(n)) return Bad("retry count");
    s.retries.clear();
    s.retries.resize(n);
    for (ServerState::Retry& retry : s.retries) {
      if (!in_.GetString(retry.client, kAnyLength) ||
          !in_.GetString(retry.request_id, kAnyLength) ||
          !in_.GetSignedVarint64(retry.answered_at) ||
          !in_.GetString(retry.entry, kAnyLength)) {
        return Bad("retry entry");
      }
    }
    s.labels.clear();
    if (version_ < 4) return absl::OkStatus();
    if (!Count(n)) return Bad("label count");
    s.labels.resize(n);
    for (ServerState::Label& label : s.labels) {
      if (!in_.GetString(label.client, kAnyLength) ||
          !in_.GetString(label.lock, kAnyLength) ||
          !in_.GetString(label.label, kAnyLength)) {
        return Bad("label");
      }
    }
    return absl::OkStatus();
  }

  absl::Status End() {
    if (!in_.empty()) return Bad("trailing bytes");
    return absl::OkStatus();
  }

  uint64_t offset() const { return payload_.size() - in_.remaining(); }

 private:
  // A count of entries that each take at least one byte: never more than
  // the bytes left, so a corrupt count cannot make us allocate wildly.
  bool Count(uint64_t& n) { return in_.GetVarint64(n) && n <= in_.remaining(); }

  bool Mode(LockMode& mode) {
    uint8_t b = 0;
    // Semaphores (2) from version 3 on.
    if (!in_.GetByte(b) || b > (version_ >= 3 ? 2 : 1)) return false;
    mode = *ModeOfByte(b);
    return true;
  }

  absl::Status Bad(absl::string_view what) {
    return absl::DataLossError(absl::StrCat("malformed snapshot payload (",
                                            what, ")"));
  }

  absl::string_view payload_;
  ByteReader in_;
  uint32_t version_;
};

size_t EstimateBytes(const CoreSnapshot& s) {
  size_t bytes = 32 + s.clients.size() * 24 + s.locks.size() * 24;
  for (const CoreSnapshot::Lock& lock : s.locks) {
    bytes += lock.name.size() + lock.holders.size() * 48 +
             lock.queue.size() * 32;
  }
  for (const CoreSnapshot::StoreLock& lock : s.store) {
    bytes += lock.lock.size() + 16;
    for (const CoreSnapshot::StoreValue& v : lock.values) {
      bytes += v.key.size() + v.value.size() + 8;
    }
  }
  return bytes;
}

}  // namespace

void EncodeSnapshotPayload(const CoreSnapshot& s, std::string& out,
                           uint32_t version) {
  out.reserve(out.size() + EstimateBytes(s));
  PutSignedVarint64(out, s.now);
  PutVarint64(out, s.last_age);
  PutVarint64(out, s.last_sequence);
  PutVarint64(out, s.clients.size());
  for (const CoreSnapshot::Client& c : s.clients) {
    PutLengthPrefixed(out, c.name);
    PutVarint64(out, c.age);
  }
  // Locks go out in name order: the core's Restore then inserts its
  // ordered indexes (active locks by name) sequentially, which makes
  // restoring a million locks about twice as fast as hash order. Sorting
  // happens here, on the snapshot thread, not under the core's lock. The
  // sort is stable so that the encoding is a function of the snapshot even
  // when names repeat (a decoded, not yet checked snapshot may have them):
  // encoding what a payload decodes to, twice, gives the same bytes.
  std::vector<const CoreSnapshot::Lock*> locks;
  locks.reserve(s.locks.size());
  for (const CoreSnapshot::Lock& lock : s.locks) locks.push_back(&lock);
  std::stable_sort(locks.begin(), locks.end(),
            [](const CoreSnapshot::Lock* a, const CoreSnapshot::Lock* b) {
              return a->name < b->name;
            });
  PutVarint64(out, locks.size());
  for (const CoreSnapshot::Lock* lock_ptr : locks) {
    const CoreSnapshot::Lock& lock = *lock_ptr;
    PutLengthPrefixed(out, lock.name);
    PutVarint64(out, lock.last_token);
    if (version >= 3) PutVarint64(out, lock.capacity);
    PutVarint64(out, lock.holders.size());
    for (const CoreSnapshot::Holder& h : lock.holders) {
      PutLengthPrefixed(out, h.client);
      out.push_back(static_cast<char>(ModeByte(h.mode)));
      PutVarint64(out, h.token);
      PutSignedVarint64(out, h.expires_at);
      PutSignedVarint64(out, h.ttl);
      PutVarint64(out, h.sequence);
    }
    PutVarint64(out, lock.queue.size());
    for (const CoreSnapshot::Waiter& w : lock.queue) {
      PutLengthPrefixed(out, w.client);
      out.push_back(static_cast<char>(ModeByte(w.mode)));
      PutSignedVarint64(out, w.ttl);
    }
  }
  PutVarint64(out, s.store.size());
  for (const CoreSnapshot::StoreLock& lock : s.store) {
    PutLengthPrefixed(out, lock.lock);
    PutVarint64(out, lock.high_water);
    PutVarint64(out, lock.values.size());
    for (const CoreSnapshot::StoreValue& v : lock.values) {
      PutLengthPrefixed(out, v.key);
      PutLengthPrefixed(out, v.value);
    }
  }
}

absl::Status DecodeSnapshotPayload(absl::string_view payload,
                                   CoreSnapshot& snapshot) {
  PayloadDecoder decoder(payload, kSnapshotFormatVersion);
  if (absl::Status s = decoder.DecodeCore(snapshot); !s.ok()) return s;
  return decoder.End();
}

namespace {

void EncodeServerState(const ServerState& s, std::string& out) {
  PutVarint64(out, s.sessions.size());
  for (const ServerState::Session& session : s.sessions) {
    PutLengthPrefixed(out, session.session_id);
    PutLengthPrefixed(out, session.client);
  }
  PutVarint64(out, s.retries.size());
  for (const ServerState::Retry& retry : s.retries) {
    PutLengthPrefixed(out, retry.client);
    PutLengthPrefixed(out, retry.request_id);
    PutSignedVarint64(out, retry.answered_at);
    PutLengthPrefixed(out, retry.entry);
  }
  PutVarint64(out, s.labels.size());
  for (const ServerState::Label& label : s.labels) {
    PutLengthPrefixed(out, label.client);
    PutLengthPrefixed(out, label.lock);
    PutLengthPrefixed(out, label.label);
  }
}

}  // namespace

std::vector<std::pair<LogPosition, std::string>> SnapshotFilesIn(
    const std::vector<std::string>& names) {
  std::vector<std::pair<LogPosition, std::string>> found;
  for (const std::string& name : names) {
    absl::string_view digits = name;
    LogPosition covered = 0;
    if (absl::ConsumePrefix(&digits, "snap-") &&
        absl::ConsumeSuffix(&digits, ".snap") && digits.size() == 20 &&
        absl::SimpleAtoi(digits, &covered)) {
      found.emplace_back(covered, name);
    }
  }
  std::sort(found.rbegin(), found.rend());
  return found;
}

std::string SnapshotFileName(LogPosition covered) {
  char name[64];
  std::snprintf(name, sizeof(name), "snap-%020" PRIu64 ".snap", covered);
  return name;
}

namespace {

// Deletes every snapshot in `dir` but the newest `keep` (0: none deleted).
absl::Status PruneSnapshots(const std::string& dir, size_t keep) {
  if (keep == 0) return absl::OkStatus();
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return names.status();
  const auto snapshots = SnapshotFilesIn(*names);
  absl::Status result;
  for (size_t i = keep; i < snapshots.size(); ++i) {
    result.Update(RemoveFile(dir + "/" + snapshots[i].second));
  }
  return result;
}

}  // namespace

absl::Status WriteSnapshotFileBytes(const std::string& dir,
                                    LogPosition covered,
                                    absl::string_view file,
                                    size_t keep_newest) {
  const std::string final_path = dir + "/" + SnapshotFileName(covered);
  const std::string temp_path = final_path + ".tmp";
  absl::StatusOr<std::unique_ptr<WritableFile>> out =
      OpenPosixWritableFile(temp_path, /*truncate=*/true);
  if (!out.ok()) return out.status();
  absl::Status status = (*out)->Append(file);
  if (status.ok()) status = (*out)->Sync();
  status.Update((*out)->Close());
  if (status.ok()) status = RenameDurably(dir, temp_path, final_path);
  if (!status.ok()) {
    RemoveFile(temp_path).IgnoreError();
    return status;
  }
  return PruneSnapshots(dir, keep_newest);
}

absl::StatusOr<SnapshotFileInfo> WriteSnapshotFile(const std::string& dir,
                                                   const CoreSnapshot& snapshot,
                                                   LogPosition covered,
                                                   const ServerState& server,
                                                   size_t keep_newest) {
  std::string file(kSnapshotHeaderBytes, '\0');
  EncodeSnapshotPayload(snapshot, file);
  EncodeServerState(server, file);
  const absl::string_view payload =
      absl::string_view(file).substr(kSnapshotHeaderBytes);
  const uint32_t payload_crc = Crc32c(payload);
  std::string header(kSnapshotMagic);
  PutFixed32(header, kSnapshotFormatVersion);
  PutFixed32(header, 0);
  PutFixed64(header, covered);
  PutFixed64(header, payload.size());
  PutFixed32(header, payload_crc);
  PutFixed32(header, Crc32c(header));
  file.replace(0, kSnapshotHeaderBytes, header);
  if (absl::Status s =
          WriteSnapshotFileBytes(dir, covered, file, keep_newest);
      !s.ok()) {
    return s;
  }
  return SnapshotFileInfo{covered, file.size(), payload_crc};
}

absl::StatusOr<SnapshotFileInfo> DecodeSnapshotFileBytes(
    absl::string_view data, absl::string_view path, CoreSnapshot* snapshot,
    ServerState* server) {
  if (data.size() < kSnapshotHeaderBytes ||
      data.substr(0, kSnapshotMagic.size()) != kSnapshotMagic) {
    return absl::DataLossError(absl::StrCat(
        path, " is not a leasekeeper snapshot (short file or bad magic at "
              "byte offset 0)"));
  }
  const char* h = data.data();
  const uint32_t version = DecodeFixed32(h + 8);
  if (version < kOldestSnapshotFormatVersion ||
      version > kSnapshotFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "snapshot ", path, " has format version ", version,
        "; this build reads versions ", kOldestSnapshotFormatVersion, " to ",
        kSnapshotFormatVersion));
  }
  if (Crc32c(absl::string_view(h, kSnapshotHeaderBytes - 4)) !=
      DecodeFixed32(h + kSnapshotHeaderBytes - 4)) {
    return absl::DataLossError(absl::StrCat(
        "corrupt snapshot header in ", path, " at byte offset 0"));
  }
  const LogPosition covered = DecodeFixed64(h + 16);
  const uint64_t payload_bytes = DecodeFixed64(h + 24);
  if (payload_bytes != data.size() - kSnapshotHeaderBytes) {
    return absl::DataLossError(absl::StrCat(
        "snapshot ", path, " is ", data.size(), " bytes; its header says ",
        kSnapshotHeaderBytes + payload_bytes));
  }
  const absl::string_view payload = data.substr(kSnapshotHeaderBytes);
  const uint32_t payload_crc = DecodeFixed32(h + 32);
  if (Crc32c(payload) != payload_crc) {
    return absl::DataLossError(absl::StrCat(
        "snapshot ", path, " fails its checksum (payload at byte offset ",
        kSnapshotHeaderBytes, ")"));
  }
  if (snapshot != nullptr) {
    PayloadDecoder decoder(payload, version);
    ServerState ignored;
    absl::Status s = decoder.DecodeCore(*snapshot);
    if (s.ok() && version >= 2) {
      s = decoder.DecodeServer(server != nullptr ? *server : ignored);
    } else if (s.ok() && server != nullptr) {
      *server = ServerState{};
    }
    if (s.ok()) s = decoder.End();
    if (!s.ok()) {
      return absl::DataLossError(absl::StrCat(
          s.message(), " in ", path, " at byte offset ",
          kSnapshotHeaderBytes + decoder.offset()));
    }
  }
  return SnapshotFileInfo{covered, data.size(), payload_crc};
}

absl::StatusOr<SnapshotFileInfo> ReadSnapshotFile(const std::string& path,
                                                  CoreSnapshot* snapshot,
                                                  ServerState* server) {
  absl::StatusOr<std::string> data = ReadWholeFile(path);
  if (!data.ok()) return data.status();
  return DecodeSnapshotFileBytes(*data, path, snapshot, server);
}

namespace {

// Whether the file at `path`, named for position `covered`, read as `info`
// may be used: OK; FailedPrecondition (a version this build does not read:
// stop looking); DataLoss otherwise (damaged, or its header names another
// position: try the next older), its description appended to *damaged
// unless null.
absl::Status JudgeSnapshot(const std::string& path, LogPosition covered,
                           const absl::StatusOr<SnapshotFileInfo>& info,
                           std::vector<std::string>* damaged) {
  if (info.ok() && info->covered == covered) return absl::OkStatus();
  if (!info.ok() && absl::IsFailedPrecondition(info.status())) {
    return info.status();
  }
  std::string what =
      info.ok() ? absl::StrCat(path, ": header names position ", info->covered)
                : std::string(info.status().message());
  if (damaged != nullptr) damaged->push_back(what);
  return absl::DataLossError(std::move(what));
}

}  // namespace

absl::StatusOr<std::optional<SnapshotFileBytes>> ReadNewestSnapshotBytes(
    const std::string& dir, std::vector<std::string>* damaged) {
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return names.status();
  for (const auto& [covered, name] : SnapshotFilesIn(*names)) {
    const std::string path = dir + "/" + name;
    absl::StatusOr<std::string> data = ReadWholeFile(path);
    if (absl::IsNotFound(data.status())) continue;  // pruned meanwhile
    if (!data.ok()) return data.status();
    absl::StatusOr<SnapshotFileInfo> info =
        DecodeSnapshotFileBytes(*data, path, nullptr, nullptr);
    const absl::Status judged = JudgeSnapshot(path, covered, info, damaged);
    if (judged.ok()) return SnapshotFileBytes{*info, *std::move(data)};
    if (absl::IsFailedPrecondition(judged)) return judged;
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<SnapshotFileInfo>> ReadNewestSnapshotFile(
    const std::string& dir, const std::vector<std::string>& names,
    CoreSnapshot& snapshot, ServerState& server,
    std::vector<std::string>* damaged) {
  for (const std::string& name : names) {
    if (absl::StartsWith(name, "snap-") && absl::EndsWith(name, ".tmp")) {
      // A snapshot write that a crash interrupted; never renamed, never used.
      if (absl::Status s = RemoveFile(dir + "/" + name); !s.ok()) return s;
    }
  }
  for (const auto& [covered, name] : SnapshotFilesIn(names)) {
    const std::string path = dir + "/" + name;
    absl::StatusOr<SnapshotFileInfo> info =
        ReadSnapshotFile(path, &snapshot, &server);
    const absl::Status judged = JudgeSnapshot(path, covered, info, damaged);
    if (judged.ok()) return *info;
    if (absl::IsFailedPrecondition(judged)) return judged;
    snapshot = CoreSnapshot{};
    server = ServerState{};
  }
  return std::nullopt;
}

}  // namespace leasekeeper::storage
