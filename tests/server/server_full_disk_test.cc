// A real full disk under the real leasekeeperd: the data dir lives on a
// small tmpfs that the test mounts (it needs CAP_SYS_ADMIN; without it the
// tests are skipped with a message) and fills with a file, then frees.
// The rules: mutations are refused at once with UNAVAILABLE naming the
// data dir, reads and inspection go on, health is NOT_SERVING, nothing
// acknowledged is lost, and once space is freed the daemon serves again by
// itself.
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using grpc::health::v1::HealthCheckResponse;
using std::chrono::milliseconds;

// A tmpfs of `megabytes` mounted on a fresh directory, unmounted with this
// object; Fill() takes all its free space with one file, Free() gives it back.
class SmallDisk {
 public:
  explicit SmallDisk(int megabytes) {
    char name[] = "/tmp/lk-small-disk-XXXXXX";
    if (::mkdtemp(name) == nullptr) {
      error_ = std::strerror(errno);
      return;
    }
    path_ = name;
    const std::string options = absl::StrCat("size=", megabytes, "m");
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      error_ = absl::StrCat("mount tmpfs on ", path_, ": ",
                            std::strerror(errno));
      return;
    }
    mounted_ = true;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  std::string data_dir() const { return path_ + "/data"; }

  // Writes a filler file until the filesystem refuses more.
  void Fill() {
    std::ofstream filler(path_ + "/filler", std::ios::binary);
    const std::string block(64 * 1024, 'f');
    while (filler.write(block.data(), block.size())) {
    }
  }
  void Free() { std::filesystem::remove(path_ + "/filler"); }

 private:
  std::string path_;
  std::string error_;
  bool mounted_ = false;
};

Daemon StartOnDisk(const SmallDisk& disk, std::vector<std::string> extra) {
  extra.push_back("--data-dir=" + disk.data_dir());
  extra.push_back("--log-level=warn");
  return StartDaemon(extra);
}

// Writes 512 KiB values under `token` (so the preallocated log segment
// fills and the next one finds no room) until `stop` is set, keeping the
// keys acknowledged; the writes the full disk refuses are tried again.
class Writer {
 public:
  Writer(const std::string& address, uint64_t token)
      : thread_([this, address, token] { Run(address, token); }) {}
  ~Writer() { Stop(); }
  // Stops after the write in flight; returns the keys acknowledged.
  std::vector<std::string> Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return acknowledged_;
  }

 private:
  void Run(const std::string& address, uint64_t token) {
    TestClient client(address);
    const std::string value(512 * 1024, 'v');
    for (int i = 0; !stop_; ++i) {
      const std::string key = absl::StrCat("k", i);
      if (client.Write("L", key, value, token).ok()) {
        acknowledged_.push_back(key);
      } else {
        std::this_thread::sleep_for(milliseconds(20));
      }
    }
  }

  std::atomic<bool> stop_ = false;
  std::vector<std::string> acknowledged_;
  std::thread thread_;
};

TEST(FullDiskTest, MutationsAreRefusedAtOnceReadsGoOnAndServiceResumesByItself) {
  SmallDisk disk(24);
  if (!disk.mounted()) GTEST_SKIP() << "no tmpfs to fill: " << disk.error();
  Daemon daemon = StartOnDisk(disk, {"--snapshot-every=0"});
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  const uint64_t token =
      client.Acquire("writer", "L", 600'000).response.granted().token();
  ASSERT_EQ(token, 1u);
  ASSERT_TRUE(client.Write("L", "first", "before the disk filled", token).ok());
  disk.Fill();
  Writer writer(daemon.address, token);

  // Health turns NOT_SERVING once the disk is full (asked without a
  // mutation, which would wait if it went in just before).
  const auto filling = std::chrono::steady_clock::now();
  while (HealthOf(daemon.address, "") != HealthCheckResponse::NOT_SERVING &&
         std::chrono::steady_clock::now() - filling < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  // A new mutation is refused before it is applied, with the reason.
  const Result<pb::AcquireResponse> refused =
      client.Acquire("other", "M", 60'000);
  ASSERT_EQ(refused.code(), grpc::StatusCode::UNAVAILABLE)
      << "the disk never filled: " << refused.status.error_message();
  EXPECT_NE(refused.status.error_message().find("is full"), std::string::npos)
      << refused.status.error_message();
  EXPECT_NE(refused.status.error_message().find(disk.data_dir()),
            std::string::npos)
      << refused.status.error_message();
  EXPECT_EQ(HealthOf(daemon.address, ""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(HealthOf(daemon.address, "leasekeeper.v1.LockService"),
            HealthCheckResponse::NOT_SERVING);
  // Reads and inspection go on: the log refused new work while it still
  // had room for what it had taken, so no record waits for space.
  const auto reading = std::chrono::steady_clock::now();
  const Result<pb::InspectResponse> inspected = client.Inspect("L");
  ASSERT_TRUE(inspected.ok()) << inspected.status.error_message();
  EXPECT_EQ(inspected.response.holders_size(), 1);
  const Result<pb::ReadResponse> during = client.Read("L", "first");
  ASSERT_TRUE(during.ok()) << during.status.error_message();
  EXPECT_TRUE(during.response.found());
  EXPECT_LT(std::chrono::steady_clock::now() - reading,
            std::chrono::seconds(1));

  // Once there is room again mutations are served without a restart.
  disk.Free();
  const std::vector<std::string> acknowledged = writer.Stop();
  const auto start = std::chrono::steady_clock::now();
  Result<pb::AcquireResponse> after = client.Acquire("other", "M", 60'000);
  while (!after.ok() &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(milliseconds(50));
    after = client.Acquire("other", "M", 60'000);
  }
  ASSERT_TRUE(after.ok()) << after.status.error_message();
  EXPECT_TRUE(after.response.has_granted());
  EXPECT_EQ(HealthOf(daemon.address, ""), HealthCheckResponse::SERVING);
  const Result<pb::ReadResponse> read = client.Read("L", "first");
  ASSERT_TRUE(read.ok()) << read.status.error_message();
  EXPECT_TRUE(read.response.found());

  // Nothing acknowledged is lost: kill and restart on the same disk.
  daemon.process->Signal(SIGKILL);
  ASSERT_TRUE(daemon.process->WaitExit(milliseconds(5'000)).has_value());
  Daemon again = StartOnDisk(disk, {"--snapshot-every=0"});
  ASSERT_FALSE(again.address.empty());
  TestClient reader(again.address);
  ASSERT_FALSE(acknowledged.empty());
  for (const std::string& key : acknowledged) {
    const Result<pb::ReadResponse> back = reader.Read("L", key);
    ASSERT_TRUE(back.ok()) << back.status.error_message();
    EXPECT_TRUE(back.response.found()) << key << " lost";
  }
  EXPECT_TRUE(reader.Read("L", "first").response.found());
  EXPECT_EQ(reader.Inspect("M").response.holders_size(), 1);
}

bool HasSnapshot(const std::string& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "snap-") && absl::EndsWith(name, ".snap")) {
      return true;
    }
  }
  return false;
}

// The log has room (its segment is preallocated) but a snapshot has none:
// mutations go on, the snapshot is tried again later, nothing is lost.
TEST(FullDiskTest, ASnapshotWithNoRoomIsRetriedAndLosesNothing) {
  SmallDisk disk(24);
  if (!disk.mounted()) GTEST_SKIP() << "no tmpfs to fill: " << disk.error();
  Daemon daemon = StartOnDisk(disk, {"--snapshot-every=4"});
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  disk.Fill();
  int granted = 0;
  for (int i = 0; i < 12; ++i) {
    const Result<pb::AcquireResponse> r =
        client.Acquire(absl::StrCat("c", i), absl::StrCat("L", i), 600'000);
    ASSERT_TRUE(r.ok()) << r.status.error_message();
    granted += r.response.has_granted() ? 1 : 0;
  }
  EXPECT_EQ(granted, 12);
  EXPECT_FALSE(HasSnapshot(disk.data_dir()));
  EXPECT_EQ(HealthOf(daemon.address, ""), HealthCheckResponse::SERVING);

  disk.Free();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 12; !HasSnapshot(disk.data_dir()) &&
                   std::chrono::steady_clock::now() - start <
                       std::chrono::seconds(5);
       ++i) {
    ASSERT_TRUE(
        client.Acquire(absl::StrCat("c", i), absl::StrCat("L", i), 600'000)
            .ok());
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(HasSnapshot(disk.data_dir()));

  daemon.process->Signal(SIGKILL);
  ASSERT_TRUE(daemon.process->WaitExit(milliseconds(5'000)).has_value());
  Daemon again = StartOnDisk(disk, {"--snapshot-every=4"});
  ASSERT_FALSE(again.address.empty());
  TestClient reader(again.address);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(reader.Inspect(absl::StrCat("L", i)).response.holders_size(), 1)
        << "L" << i;
  }
}

}  // namespace
}  // namespace leasekeeper::testing
