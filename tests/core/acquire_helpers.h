// Acquire helpers shared by the direct LockTable tests: take a lock that
// must not be refused, and check what the acquire answered.
#ifndef LEASEKEEPER_TESTS_CORE_ACQUIRE_HELPERS_H_
#define LEASEKEEPER_TESTS_CORE_ACQUIRE_HELPERS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/lock_table.h"
#include "core/types.h"
#include "gtest/gtest.h"

namespace leasekeeper {

// Acquire that fails the test when refused (an empty outcome then).
inline AcquireOutcome MustAcquire(LockTable& t, Tick now,
                                  const std::string& client,
                                  const std::string& lock, int64_t ttl,
                                  LockMode mode = LockMode::kExclusive,
                                  uint32_t capacity = 0) {
  absl::StatusOr<AcquireOutcome> out =
      t.Acquire(now, client, lock, ttl, mode, capacity);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : AcquireOutcome{};
}

inline void ExpectGranted(const AcquireOutcome& out, FencingToken token,
                          Tick expires_at) {
  EXPECT_EQ(out.kind, AcquireOutcome::Kind::kGranted);
  EXPECT_EQ(out.token, token);
  EXPECT_EQ(out.expires_at, expires_at);
}

inline void ExpectQueued(const AcquireOutcome& out, int64_t position) {
  EXPECT_EQ(out.kind, AcquireOutcome::Kind::kQueued);
  EXPECT_EQ(out.position, position);
}

}  // namespace leasekeeper

#endif  // LEASEKEEPER_TESTS_CORE_ACQUIRE_HELPERS_H_
