// Durations on leasekeeper-ctl's command line: "500ms", "30s", "5m", "1h",
// "1m30s", "1.5s" (absl::ParseDuration's syntax; a unit is required except
// for "0"). Negative and infinite durations are refused, and each flag has
// its own range.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_CTL_DURATION_FLAG_H_
#define LEASEKEEPER_CLIENT_CTL_DURATION_FLAG_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace leasekeeper::ctl {

// The durations a flag accepts: [min, max].
struct DurationRange {
  absl::Duration min;
  absl::Duration max;
};

// Parses `text` as a duration within `range`.
// Outcomes: the duration; INVALID_ARGUMENT saying what is wrong with `text`
// (the accepted syntax, or the range), without the flag's name.
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view text,
                                                 DurationRange range);

// Adds the option `names` (CLI11 syntax, e.g. "--ttl") taking a duration in
// `range` to `app`. When it is given, *target is set while CLI11 parses; a
// bad value is a CLI11 validation error "--ttl: <problem>", i.e. a usage
// error. REQUIRES: target outlives the parse.
CLI::Option* AddDurationFlag(CLI::App& app, const std::string& names,
                             absl::Duration* target, DurationRange range,
                             const std::string& description);
// As above, for a flag without a default: *target stays nullopt unless
// given.
CLI::Option* AddDurationFlag(CLI::App& app, const std::string& names,
                             std::optional<absl::Duration>* target,
                             DurationRange range,
                             const std::string& description);

// A short rendering for people: "500ms", "30s", "2m5s", "1h", "1.5s".
std::string FormatDurationForHumans(absl::Duration duration);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_DURATION_FLAG_H_
