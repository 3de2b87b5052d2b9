// Writes the seed corpora of the storage fuzzers: a few valid inputs each,
// made with the real encoders so that they track the formats.
//
// Usage: fuzz_seeds DIR   (DIR is tests/fuzz/corpus; writes
// DIR/operation_codec/, DIR/log_recovery/, DIR/snapshot/ and
// DIR/peer_snapshot/, replacing files of the same names). The policy corpus
// is hand-written JSON; the lock_table and session corpora are inputs a
// fuzzer found (merged with -merge=1).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/state_machine.h"
#include "fuzz_files.h"
#include "storage/coding.h"
#include "storage/log.h"
#include "storage/operation_codec.h"
#include "storage/snapshot_file.h"

namespace {

using namespace leasekeeper;           // NOLINT: a small tool
using namespace leasekeeper::storage;  // NOLINT
using leasekeeper::fuzz::Die;
using leasekeeper::fuzz::MakeScratchDir;
using leasekeeper::fuzz::ReadWholeFile;
using leasekeeper::fuzz::WriteWholeFile;

std::vector<Operation> Operations() {
  std::vector<Operation> ops;
  auto add = [&](Tick at, auto body) {
    Operation op;
    op.at = at;
    op.body = body;
    ops.push_back(op);
  };
  add(1, op::Acquire{"alice", "jobs/1", 30, LockMode::kExclusive});
  add(2, op::Acquire{"bob", "jobs/1", 20, LockMode::kShared});
  add(3, op::Renew{"alice", "jobs/1", 40});
  add(4, op::Write{"jobs/1", "k", "v", 1});
  add(5, op::Write{"jobs/1", "k", "w", 1, true, true, "alice"});
  add(6, op::FencedRead{"jobs/1", "k", 1});
  add(7, op::Withdraw{"bob", "jobs/1"});
  add(8, op::Release{"alice", "jobs/1"});
  add(9, op::RenewAll{"bob"});
  add(10, op::ReleaseAll{"bob"});
  add(11, op::Advance{});
  add(12, op::Forget{"bob"});
  add(13, op::Delete{"jobs/1", "k", 1, "alice"});
  return ops;
}

void Put(const std::string& dir, const std::string& name,
         const std::string& bytes) {
  std::filesystem::create_directories(dir);
  WriteWholeFile(dir + "/" + name, bytes);
}

void OperationCodecSeeds(const std::string& dir) {
  int i = 0;
  for (const Operation& op : Operations()) {
    Put(dir, absl::StrCat("op_", i++, ".bin"), EncodeOperation(op));
  }
  std::string grace;
  EncodeRestartGrace(RestartGrace{12, 5}, grace);
  Put(dir, "restart_grace.bin", grace);
  const std::vector<ServerRecord> records = {
      {13, srec::SessionOpened{"s-1", "alice"}},
      {14, srec::SessionEnded{"s-1"}},
      {15, srec::RetryAnswered{"alice", "r-1", "entry"}},
      {16, srec::RetryForgotten{"alice", "r-1"}},
  };
  i = 0;
  for (const ServerRecord& record : records) {
    std::string out;
    EncodeServerRecord(record, out);
    Put(dir, absl::StrCat("server_record_", i++, ".bin"), out);
  }
}

void LogRecoverySeeds(const std::string& dir) {
  // Edits of the fuzzer's valid segment: none, a flipped payload byte, a
  // cut tail, zeros appended, each with and without truncate_at_corruption.
  const std::string none;
  const std::string flip = {0, 40, 0, 0x10};
  const std::string cut = {2, 60, 0, 0};
  const std::string zeros = {3, static_cast<char>(0xff), 0x7f, 0};
  int i = 0;
  for (const std::string& edits : {none, flip, cut, zeros}) {
    for (char flags : {0, 1}) {
      Put(dir, absl::StrCat("edits_", i++, ".bin"), std::string(1, flags) + edits);
    }
  }
  // A whole segment of two records (flags bit 1).
  const std::string scratch = MakeScratchDir("lk-fuzz-seeds");
  {
    LogOpenReport report;
    auto log = FileLog::Open(scratch, FileLogOptions{}, &report);
    if (!log.ok()) Die(log.status().ToString());
    const std::vector<Operation> ops = Operations();
    const std::vector<std::string> records = {EncodeOperation(ops[0]),
                                              EncodeOperation(ops[1])};
    if (!(*log)->Append(records).ok() || !(*log)->Sync().ok()) {
      Die("cannot write a segment");
    }
  }
  Put(dir, "raw_segment.bin",
      std::string(1, 2) +
          ReadWholeFile(scratch + "/" + FileLog::SegmentName(1)));
  std::filesystem::remove_all(scratch);
}

void SnapshotSeeds(const std::string& dir) {
  StateMachine machine;
  for (const Operation& op : Operations()) {
    if (op.at > 6) break;  // keep a holder, a value and a client
    machine.Apply(op).status().IgnoreError();
  }
  const CoreSnapshot snapshot = machine.Snapshot();
  std::string payload;
  EncodeSnapshotPayload(snapshot, payload);
  Put(dir, "core_payload.bin", std::string(1, 0) + payload);
  Put(dir, "empty_core_payload.bin", [] {
    std::string empty;
    EncodeSnapshotPayload(CoreSnapshot{}, empty);
    return std::string(1, 0) + empty;
  }());

  ServerState server;
  server.sessions.push_back({"s-1", "alice"});
  server.retries.push_back({"alice", "r-1", "entry", 3});
  const std::string scratch = MakeScratchDir("lk-fuzz-seeds");
  if (!WriteSnapshotFile(scratch, snapshot, 7, server).ok()) {
    Die("cannot write a snapshot");
  }
  const std::string file = ReadWholeFile(scratch + "/" + SnapshotFileName(7));
  std::filesystem::remove_all(scratch);
  Put(dir, "file_payload.bin",
      std::string(1, 1) + file.substr(kSnapshotHeaderBytes));
  Put(dir, "whole_file.bin", std::string(1, 2) + file);
}

// One chunk as peer_snapshot_fuzzer reads it: the header fields when
// `info` is given, an explicit offset when `offset` is.
std::string PeerChunk(const SnapshotFileInfo* info, const uint64_t* offset,
                      absl::string_view data) {
  std::string out(1, static_cast<char>((info != nullptr ? 1 : 0) |
                                       (offset != nullptr ? 2 : 0)));
  if (info != nullptr) {
    PutFixed64(out, info->covered);
    PutFixed64(out, info->bytes);
    PutFixed32(out, info->payload_crc32c);
  }
  if (offset != nullptr) PutFixed64(out, *offset);
  out.push_back(static_cast<char>(data.size() & 0xff));
  out.push_back(static_cast<char>(data.size() >> 8));
  out.append(data.data(), data.size());
  return out;
}

void PeerSnapshotSeeds(const std::string& dir) {
  StateMachine machine;
  for (const Operation& op : Operations()) {
    if (op.at > 6) break;
    machine.Apply(op).status().IgnoreError();
  }
  ServerState server;
  server.sessions.push_back({"s-1", "alice"});
  const std::string scratch = MakeScratchDir("lk-fuzz-seeds");
  absl::StatusOr<SnapshotFileInfo> info =
      WriteSnapshotFile(scratch, machine.Snapshot(), 7, server);
  if (!info.ok()) Die("cannot write a snapshot");
  const std::string file = ReadWholeFile(scratch + "/" + SnapshotFileName(7));
  std::filesystem::remove_all(scratch);
  const absl::string_view bytes = file;
  const std::string min_covered_1(1, 1);
  // The whole file in one chunk, and in three.
  Put(dir, "one_chunk.bin", min_covered_1 + PeerChunk(&*info, nullptr, bytes));
  const size_t third = bytes.size() / 3;
  const std::string three = PeerChunk(&*info, nullptr, bytes.substr(0, third)) +
                            PeerChunk(nullptr, nullptr, bytes.substr(third, third)) +
                            PeerChunk(nullptr, nullptr, bytes.substr(2 * third));
  Put(dir, "three_chunks.bin", min_covered_1 + three);
  // A snapshot older than the follower needs (FailedPrecondition).
  Put(dir, "too_old.bin", std::string(1, 8) + three);
  // A gap, and a transfer cut short (DataLoss).
  const uint64_t past = third + 1;
  Put(dir, "gap.bin",
      min_covered_1 + PeerChunk(&*info, nullptr, bytes.substr(0, third)) +
          PeerChunk(nullptr, &past, bytes.substr(past)));
  Put(dir, "cut_short.bin",
      min_covered_1 + PeerChunk(&*info, nullptr, bytes.substr(0, third)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  OperationCodecSeeds(dir + "/operation_codec");
  LogRecoverySeeds(dir + "/log_recovery");
  SnapshotSeeds(dir + "/snapshot");
  PeerSnapshotSeeds(dir + "/peer_snapshot");
  return 0;
}
