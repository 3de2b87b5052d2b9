#include "client/ctl/duration_flag.h"

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::ctl {

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view text,
                                                 DurationRange range) {
  absl::Duration duration;
  const std::string lowered = absl::AsciiStrToLower(text);
  if (text.empty() || lowered == "inf" || lowered == "-inf" ||
      !absl::ParseDuration(text, &duration)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid duration \"", text, "\" (use e.g. 500ms, 30s, 5m, 1h)"));
  }
  if (duration < range.min || duration > range.max) {
    return absl::InvalidArgumentError(
        absl::StrCat(text, " is outside ", FormatDurationForHumans(range.min),
                     "..", FormatDurationForHumans(range.max)));
  }
  return duration;
}

namespace {

template <typename Target>
CLI::Option* AddDuration(CLI::App& app, const std::string& names,
                         Target* target, DurationRange range,
                         const std::string& description) {
  CLI::Option* option = app.add_option_function<std::string>(
      names, [](const std::string&) {}, description);
  option->type_name("DUR");
  // A validator's message becomes CLI11's "--flag: message".
  option->check(CLI::Validator(
      [target, range](std::string& text) -> std::string {
        absl::StatusOr<absl::Duration> duration =
            ParseDurationFlag(text, range);
        if (!duration.ok()) return std::string(duration.status().message());
        *target = *duration;
        return "";
      },
      ""));
  return option;
}

}  // namespace

CLI::Option* AddDurationFlag(CLI::App& app, const std::string& names,
                             absl::Duration* target, DurationRange range,
                             const std::string& description) {
  return AddDuration(app, names, target, range, description);
}

CLI::Option* AddDurationFlag(CLI::App& app, const std::string& names,
                             std::optional<absl::Duration>* target,
                             DurationRange range,
                             const std::string& description) {
  return AddDuration(app, names, target, range, description);
}

std::string FormatDurationForHumans(absl::Duration duration) {
  if (duration == absl::InfiniteDuration()) return "forever";
  // Whole milliseconds are all the server deals in.
  return absl::FormatDuration(absl::Trunc(duration, absl::Milliseconds(1)));
}

}  // namespace leasekeeper::ctl
