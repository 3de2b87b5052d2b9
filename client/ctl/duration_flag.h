// Durations on leasekeeper-ctl's command line: "500ms", "30s", "5m", "1h",
// "1m30s", "1.5s" (absl::ParseDuration's syntax; a unit is required except
// for "0"). Negative and infinite durations are refused.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_CTL_DURATION_FLAG_H_
#define LEASEKEEPER_CLIENT_CTL_DURATION_FLAG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leasekeeper::ctl {

// Parses `text` as a duration within [min, max].
// Outcomes: the duration; INVALID_ARGUMENT naming `flag` and the accepted
// syntax or range.
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag,
                                                 absl::string_view text,
                                                 absl::Duration min,
                                                 absl::Duration max);

// A short rendering for people: "500ms", "30s", "2m5s", "1h", "1.5s".
std::string FormatDurationForHumans(absl::Duration duration);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_DURATION_FLAG_H_
