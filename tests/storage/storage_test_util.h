// Helpers shared by the storage tests: temporary data dirs, random
// operation streams, and a canonical text form of a core's whole state so
// that two machines can be compared field by field with a readable diff.
#ifndef LEASEKEEPER_TESTS_STORAGE_STORAGE_TEST_UTIL_H_
#define LEASEKEEPER_TESTS_STORAGE_STORAGE_TEST_UTIL_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/snapshot.h"
#include "core/state_machine.h"
#include "gtest/gtest.h"
#include "storage/file.h"

namespace leasekeeper::storage::testing {

// A fresh empty directory under TEST_TMPDIR (or /tmp), removed at the end.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp",
                                       "/leasekeeper-storage-XXXXXX");
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The entries of `dir` whose names start with `prefix` (files of any
// kind, so "snap-" also counts an interrupted write's .tmp).
inline size_t CountFiles(const std::string& dir, const std::string& prefix) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

// Every field of the snapshot, one line per item, in a canonical order
// (the core exports hash maps in no particular order).
inline std::string CanonicalState(CoreSnapshot s) {
  auto mode = [](LockMode m) {
    return m == LockMode::kSemaphore ? "N" : m == LockMode::kShared ? "S" : "X";
  };
  std::sort(s.locks.begin(), s.locks.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::sort(s.clients.begin(), s.clients.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::sort(s.store.begin(), s.store.end(),
            [](const auto& a, const auto& b) { return a.lock < b.lock; });
  std::string out = absl::StrCat("now ", s.now, " last_age ", s.last_age,
                                 " last_sequence ", s.last_sequence, "\n");
  for (const auto& c : s.clients) {
    absl::StrAppend(&out, "client ", c.name, " age ", c.age, "\n");
  }
  for (const auto& l : s.locks) {
    absl::StrAppend(&out, "lock ", l.name, " last_token ", l.last_token,
                    " capacity ", l.capacity, "\n");
    for (const auto& h : l.holders) {
      absl::StrAppend(&out, "  holder ", h.client, " ", mode(h.mode), " token ",
                      h.token, " expires ", h.expires_at, " ttl ", h.ttl,
                      " seq ", h.sequence, "\n");
    }
    for (const auto& w : l.queue) {
      absl::StrAppend(&out, "  waiter ", w.client, " ", mode(w.mode), " ttl ",
                      w.ttl, "\n");
    }
  }
  for (auto& l : s.store) {
    std::sort(l.values.begin(), l.values.end(),
              [](const auto& a, const auto& b) { return a.key < b.key; });
    absl::StrAppend(&out, "store ", l.lock, " high_water ", l.high_water, "\n");
    for (const auto& v : l.values) {
      absl::StrAppend(&out, "  ", v.key, " = ", v.value, "\n");
    }
  }
  return out;
}

inline std::string CanonicalState(const StateMachine& machine) {
  return CanonicalState(machine.Snapshot());
}

// A random but valid-looking operation stream over a few clients and locks,
// dense enough to produce queues, shared holders, semaphores, lapses, hand-overs,
// deadlock aborts, stale writes, deletes and contract errors. Ticks never decrease.
class OperationGenerator {
 public:
  explicit OperationGenerator(uint32_t seed, int clients = 8, int locks = 5)
      : rng_(seed), clients_(clients), locks_(locks) {}

  Operation Next() {
    at_ += Pick(0, 3);
    Operation op;
    op.at = at_;
    const std::string client = absl::StrCat("c", Pick(0, clients_ - 1));
    const std::string lock = absl::StrCat("L", Pick(0, locks_ - 1));
    switch (Pick(0, 14)) {
      case 0:
      case 1:
      case 2:
        op.body = op::Acquire{client, lock, Pick(1, 30),
                              Pick(0, 2) == 0 ? LockMode::kShared
                                              : LockMode::kExclusive};
        break;
      case 3:
        op.body = op::Acquire{client, lock, Pick(1, 30), LockMode::kSemaphore,
                              static_cast<uint32_t>(Pick(1, 3))};
        break;
      case 4:
        op.body = op::Renew{client, lock, Pick(1, 30)};
        break;
      case 5:
      case 6:
        op.body = op::Release{client, lock};
        break;
      case 7:
        op.body = op::Withdraw{client, lock};
        break;
      case 8:
        op.body = op::ReleaseAll{client};
        break;
      case 9:
        op.body = op::RenewAll{client};
        break;
      case 10:
        op.body = op::Write{lock, absl::StrCat("k", Pick(0, 3)),
                            absl::StrCat("v", Pick(0, 1000)),
                            static_cast<FencingToken>(Pick(1, 12))};
        break;
      case 11:  // the daemon's checked write
        op.body = op::Write{.lock = lock,
                            .key = absl::StrCat("k", Pick(0, 3)),
                            .value = absl::StrCat("v", Pick(0, 1000)),
                            .token = static_cast<FencingToken>(Pick(1, 12)),
                            .refuse_unissued = true,
                            .require_held = Pick(0, 1) == 0,
                            .client = client};
        break;
      case 13:
        op.body = op::Forget{client};
        break;
      case 12: {  // the store alone: a fenced read, or a delete
        std::string key = absl::StrCat("k", Pick(0, 3));
        const auto token = static_cast<FencingToken>(Pick(1, 12));
        if (token % 2 == 0) {
          op.body = op::FencedRead{lock, std::move(key), token};
        } else {
          op.body = op::Delete{lock, std::move(key), token, client};
        }
        break;
      }
      default:
        op.body = op::Advance{};
        break;
    }
    if (Pick(0, 200) == 0) {  // an invalid ttl now and then
      if (auto* a = std::get_if<op::Acquire>(&op.body)) a->ttl = 0;
    }
    return op;
  }

  std::vector<Operation> Take(size_t n) {
    std::vector<Operation> ops;
    ops.reserve(n);
    for (size_t i = 0; i < n; ++i) ops.push_back(Next());
    return ops;
  }

 private:
  int64_t Pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  std::mt19937 rng_;
  int clients_;
  int locks_;
  Tick at_ = 0;
};

// Shared between a test and the files it makes fail: after `writes_ok`
// successful Appends (or `syncs_ok` Syncs) every later one fails, as a
// dying disk (EIO: Unavailable) or, with `out_of_space`, a full one (ENOSPC:
// ResourceExhausted, after writing half) would; after
// `preallocations_ok` Preallocates every later one finds the disk full (or,
// without `preallocations_find_no_space`, a file-size limit: EFBIG).
// The test may change the plan while a store's flusher writes (atomics).
struct FaultPlan {
  std::atomic<int> writes_ok = 1 << 30;
  std::atomic<int> syncs_ok = 1 << 30;
  std::atomic<int> preallocations_ok = 1 << 30;
  std::atomic<bool> preallocations_find_no_space = true;
  std::atomic<bool> out_of_space = false;
  std::atomic<int> writes = 0;
  std::atomic<int> syncs = 0;
  std::atomic<int> preallocations = 0;
};

class FaultyFile final : public WritableFile {
 public:
  FaultyFile(std::unique_ptr<WritableFile> file,
             std::shared_ptr<FaultPlan> plan)
      : file_(std::move(file)), plan_(std::move(plan)) {}
  absl::Status Append(absl::string_view data) override {
    if (plan_->writes++ >= plan_->writes_ok) {
      // A short write first, as a disk filling up mid-write does.
      file_->Append(data.substr(0, data.size() / 2)).IgnoreError();
      if (plan_->out_of_space) {
        return absl::ResourceExhaustedError(
            "write to " + path() + " failed: No space left on device");
      }
      return absl::UnavailableError("write to " + path() +
                                    " failed: Input/output error");
    }
    return file_->Append(data);
  }
  absl::Status RewindTo(uint64_t offset) override {
    return file_->RewindTo(offset);
  }
  absl::Status Sync() override {
    if (plan_->syncs++ >= plan_->syncs_ok) {
      return absl::UnavailableError("fsync of " + path() +
                                    " failed: Input/output error");
    }
    return file_->Sync();
  }
  absl::Status Preallocate(uint64_t size) override {
    if (plan_->preallocations++ >= plan_->preallocations_ok) {
      if (!plan_->preallocations_find_no_space) {
        return absl::UnavailableError("write to " + path() +
                                      " failed: File too large");
      }
      return absl::ResourceExhaustedError(
          "write to " + path() + " failed: No space left on device");
    }
    return file_->Preallocate(size);
  }
  absl::Status Close() override { return file_->Close(); }
  const std::string& path() const override { return file_->path(); }

 private:
  std::unique_ptr<WritableFile> file_;
  std::shared_ptr<FaultPlan> plan_;
};

inline WritableFileFactory FaultyFactory(std::shared_ptr<FaultPlan> plan) {
  return [plan](const std::string& path, bool truncate)
             -> absl::StatusOr<std::unique_ptr<WritableFile>> {
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        OpenPosixWritableFile(path, truncate);
    if (!file.ok()) return file.status();
    return std::unique_ptr<WritableFile>(
        new FaultyFile(*std::move(file), plan));
  };
}

// Reads and rewrites whole files, for tests that damage them.
inline std::string Slurp(const std::string& path) {
  absl::StatusOr<std::string> data = ReadWholeFile(path);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? *data : std::string();
}

inline void Spit(const std::string& path, const std::string& data) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file =
      OpenPosixWritableFile(path, /*truncate=*/true);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Append(data).ok());
  ASSERT_TRUE((*file)->Close().ok());
}

}  // namespace leasekeeper::storage::testing

#endif  // LEASEKEEPER_TESTS_STORAGE_STORAGE_TEST_UTIL_H_
