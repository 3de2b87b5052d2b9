#include "client/ctl/duration_flag.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::ctl {

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag,
                                                 absl::string_view text,
                                                 absl::Duration min,
                                                 absl::Duration max) {
  absl::Duration duration;
  const std::string lowered = absl::AsciiStrToLower(text);
  if (text.empty() || lowered == "inf" || lowered == "-inf" ||
      !absl::ParseDuration(text, &duration)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": invalid duration \"", text,
                     "\" (use e.g. 500ms, 30s, 5m, 1h)"));
  }
  if (duration < min || duration > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": ", text, " is outside ", FormatDurationForHumans(min), "..",
        FormatDurationForHumans(max)));
  }
  return duration;
}

std::string FormatDurationForHumans(absl::Duration duration) {
  if (duration == absl::InfiniteDuration()) return "forever";
  // Whole milliseconds are all the server deals in.
  return absl::FormatDuration(absl::Trunc(duration, absl::Milliseconds(1)));
}

}  // namespace leasekeeper::ctl
