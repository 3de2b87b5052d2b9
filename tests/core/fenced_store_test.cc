// FencedStore's byte and key accounting (the running totals the server's
// --max-store-bytes and metrics read) against a recount.
#include "core/fenced_store.h"

#include <algorithm>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace leasekeeper {
namespace {

size_t Recount(const FencedStore& store) {
  CoreSnapshot snapshot;
  store.ExportTo(snapshot);
  size_t bytes = 0;
  for (const CoreSnapshot::StoreLock& lock : snapshot.store) {
    bytes += lock.lock.size();
    for (const CoreSnapshot::StoreValue& value : lock.values) {
      bytes += value.key.size() + value.value.size();
    }
  }
  return bytes;
}

TEST(FencedStoreBytes, RunningTotalIsTheSumOfNamesKeysAndValues) {
  FencedStore store;
  EXPECT_EQ(store.bytes(), 0u);
  ASSERT_TRUE(store.Write("lock", "key", "value", 1).ok());
  EXPECT_EQ(store.bytes(), 4u + 3u + 5u);
  ASSERT_TRUE(store.Write("lock", "key", "v", 1).ok());  // replaced
  EXPECT_EQ(store.bytes(), 4u + 3u + 1u);
  ASSERT_TRUE(store.Fence("other", 3).ok());  // a lock without values
  EXPECT_EQ(store.bytes(), 4u + 3u + 1u + 5u);
  ASSERT_FALSE(store.Write("lock", "key", "stale", 0).ok());
  EXPECT_EQ(store.bytes(), 13u) << "a refused write changes nothing";
}

TEST(FencedStoreBytes, BytesAfterWritePredictsTheWrite) {
  std::mt19937 rng(7);
  FencedStore store;
  for (int i = 0; i < 2000; ++i) {
    const std::string lock = absl::StrCat("L", rng() % 5);
    const std::string key = absl::StrCat("k", rng() % 7);
    const std::string value(1 + rng() % 40, 'v');
    const size_t predicted = store.BytesAfterWrite(lock, key, value);
    const bool had_key = store.Contains(lock, key);
    const size_t keys = store.KeyCount(lock);
    if (rng() % 9 == 0) {
      (void)store.Fence(lock, store.HighWater(lock) + 1);
      continue;
    }
    const FencingToken token = std::max<FencingToken>(1, store.HighWater(lock));
    ASSERT_TRUE(store.Write(lock, key, value, token).ok());
    EXPECT_EQ(store.bytes(), predicted);
    EXPECT_EQ(store.KeyCount(lock), had_key ? keys : keys + 1);
    ASSERT_EQ(store.bytes(), Recount(store));
  }
  CoreSnapshot snapshot;
  store.ExportTo(snapshot);
  FencedStore restored;
  restored.ImportFrom(snapshot);
  EXPECT_EQ(restored.bytes(), store.bytes());
}

TEST(FencedStoreBytes, DeletesFreeWhatTheirWritesTook) {
  std::mt19937 rng(11);
  FencedStore store;
  for (int i = 0; i < 2000; ++i) {
    const std::string lock = absl::StrCat("L", rng() % 3);
    const std::string key = absl::StrCat("k", rng() % 5);
    const FencingToken token = std::max<FencingToken>(1, store.HighWater(lock));
    const bool had_key = store.Contains(lock, key);
    const size_t keys = store.KeyCount(lock);
    const size_t total_keys = store.key_count();
    if (rng() % 2 == 0) {
      absl::StatusOr<bool> existed = store.Delete(lock, key, token);
      ASSERT_TRUE(existed.ok()) << existed.status();
      EXPECT_EQ(*existed, had_key);
      EXPECT_FALSE(store.Contains(lock, key));
      EXPECT_EQ(store.KeyCount(lock), had_key ? keys - 1 : keys);
      EXPECT_EQ(store.key_count(), had_key ? total_keys - 1 : total_keys);
    } else {
      ASSERT_TRUE(store.Write(lock, key, std::string(1 + rng() % 9, 'v'),
                              token).ok());
      EXPECT_EQ(store.key_count(), had_key ? total_keys : total_keys + 1);
    }
    ASSERT_EQ(store.bytes(), Recount(store));
  }
}

TEST(FencedStoreBytes, RefusedDeleteChangesNothing) {
  FencedStore store;
  ASSERT_TRUE(store.Write("L", "k", "v", 5).ok());
  EXPECT_FALSE(store.Delete("L", "k", 4).ok());
  EXPECT_FALSE(store.Delete("L", "", 5).ok());
  EXPECT_FALSE(store.Delete("", "k", 5).ok());
  EXPECT_EQ(store.Read("L", "k"), "v");
  EXPECT_EQ(store.bytes(), 3u);
  EXPECT_EQ(store.key_count(), 1u);
  EXPECT_EQ(store.HighWater("L"), 5u);
}

}  // namespace
}  // namespace leasekeeper
