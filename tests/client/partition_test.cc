#include "client/partition.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace leasekeeper::client {
namespace {

// FNV-1a's published test vectors (Fowler, Noll and Vo's test suite).
TEST(PartitionTest, Fnv1aGivesThePublishedValues) {
  EXPECT_EQ(Fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(Fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(Fnv1a32("foobar"), 0xbf9cf968u);
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

// The vectors every client reproduces (Python checks the same file).
TEST(PartitionTest, EveryClientsVectorsAreReproduced) {
  std::ifstream file(LEASEKEEPER_PARTITION_VECTORS);
  ASSERT_TRUE(file.good()) << LEASEKEEPER_PARTITION_VECTORS;
  const nlohmann::json vectors = nlohmann::json::parse(file);
  ASSERT_FALSE(vectors["hashes"].empty());
  for (const nlohmann::json& v : vectors["hashes"]) {
    const std::string key = v["key"];
    uint64_t fnv64 = 0;
    ASSERT_TRUE(absl::SimpleAtoi(v["fnv1a64"].get<std::string>(), &fnv64));
    EXPECT_EQ(Fnv1a32(key), v["fnv1a32"].get<uint32_t>()) << key;
    EXPECT_EQ(Fnv1a64(key), fnv64) << key;
  }
  ASSERT_FALSE(vectors["partitions"].empty());
  for (const nlohmann::json& v : vectors["partitions"]) {
    const std::string key = v["key"];
    const uint32_t count = v["count"];
    EXPECT_EQ(PartitionOf(key, count), v["modulo"].get<uint32_t>())
        << key << " of " << count;
    EXPECT_EQ(ConsistentPartitionOf(key, count),
              v["consistent"].get<uint32_t>())
        << key << " of " << count;
  }
}

std::vector<std::string> Keys(int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(absl::StrCat("job/", i));
  return keys;
}

TEST(PartitionTest, BothSchemesSpreadKeysEvenly) {
  constexpr uint32_t kCount = 64;
  constexpr int kKeys = 64'000;
  std::vector<int> modulo(kCount), consistent(kCount);
  for (const std::string& key : Keys(kKeys)) {
    const uint32_t m = PartitionOf(key, kCount);
    const uint32_t c = ConsistentPartitionOf(key, kCount);
    ASSERT_LT(m, kCount);
    ASSERT_LT(c, kCount);
    ++modulo[m];
    ++consistent[c];
  }
  for (uint32_t p = 0; p < kCount; ++p) {
    EXPECT_NEAR(modulo[p], kKeys / kCount, 150) << p;
    EXPECT_NEAR(consistent[p], kKeys / kCount, 150) << p;
  }
}

TEST(PartitionTest, OnePartitionHoldsEveryKey) {
  for (const std::string& key : Keys(100)) {
    EXPECT_EQ(PartitionOf(key, 1), 0u);
    EXPECT_EQ(ConsistentPartitionOf(key, 1), 0u);
  }
}

// Growing from 10 to 11 partitions: the consistent scheme moves 1/11 of the
// keys, each to the new partition; the modulo scheme moves 10/11.
TEST(PartitionTest, GrowingMovesOnlyTheNewPartitionsShareWhenConsistent) {
  constexpr int kKeys = 100'000;
  int consistent_moved = 0;
  int modulo_moved = 0;
  for (const std::string& key : Keys(kKeys)) {
    const uint32_t before = ConsistentPartitionOf(key, 10);
    const uint32_t after = ConsistentPartitionOf(key, 11);
    if (before != after) {
      ++consistent_moved;
      EXPECT_EQ(after, 10u) << key;
    }
    modulo_moved += PartitionOf(key, 10) != PartitionOf(key, 11) ? 1 : 0;
  }
  EXPECT_NEAR(consistent_moved / double{kKeys}, 1.0 / 11, 0.005);
  EXPECT_NEAR(modulo_moved / double{kKeys}, 10.0 / 11, 0.005);
}

// Shrinking from 11 to 10 moves only the keys of the partition removed.
TEST(PartitionTest, ShrinkingMovesOnlyTheRemovedPartitionsKeys) {
  for (const std::string& key : Keys(20'000)) {
    const uint32_t before = ConsistentPartitionOf(key, 11);
    if (before != 10) {
      EXPECT_EQ(ConsistentPartitionOf(key, 10), before) << key;
    }
  }
}

TEST(PartitionTest, TheLargestCountIsTaken) {
  EXPECT_LT(PartitionOf("a", kMaxPartitionCount), kMaxPartitionCount);
  EXPECT_LT(ConsistentPartitionOf("a", kMaxPartitionCount),
            kMaxPartitionCount);
}

}  // namespace
}  // namespace leasekeeper::client
