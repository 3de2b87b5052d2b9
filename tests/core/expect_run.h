// ExpectRunGives: the shared assertion of the replay-level core tests.
#ifndef LEASEKEEPER_TESTS_CORE_EXPECT_RUN_H_
#define LEASEKEEPER_TESTS_CORE_EXPECT_RUN_H_

#include <string_view>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"

namespace leasekeeper {

// Runs `operations` on a fresh service and compares each result, in order,
// with `expected` (both JSON texts), as serialized JSON so that key order
// counts.
inline void ExpectRunGives(std::string_view operations,
                           std::string_view expected) {
  const nlohmann::json ops = nlohmann::json::parse(operations);
  const nlohmann::ordered_json want = nlohmann::ordered_json::parse(expected);
  const nlohmann::ordered_json got = RunOperations(ops);
  ASSERT_TRUE(got.is_array());
  ASSERT_EQ(got.size(), want.size()) << got.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].dump(), want[i].dump())
        << "result " << i << " of " << ops[i].dump();
  }
}

}  // namespace leasekeeper

#endif  // LEASEKEEPER_TESTS_CORE_EXPECT_RUN_H_
