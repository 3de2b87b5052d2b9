// leasekeeper-ctl's durations: 500ms, 30s, 5m; nothing negative, infinite or
// without a unit.
#include "client/ctl/duration_flag.h"

#include "gtest/gtest.h"

namespace leasekeeper::ctl {
namespace {

absl::StatusOr<absl::Duration> Parse(absl::string_view text) {
  return ParseDurationFlag("--ttl", text, absl::ZeroDuration(),
                           absl::Hours(24));
}

TEST(DurationFlagTest, AcceptsTheUnitsTheIssueNames) {
  struct Case {
    const char* text;
    absl::Duration want;
  } cases[] = {
      {"500ms", absl::Milliseconds(500)}, {"30s", absl::Seconds(30)},
      {"5m", absl::Minutes(5)},           {"1h", absl::Hours(1)},
      {"1m30s", absl::Seconds(90)},       {"1.5s", absl::Milliseconds(1500)},
      {"0", absl::ZeroDuration()},        {"0s", absl::ZeroDuration()},
  };
  for (const Case& c : cases) {
    absl::StatusOr<absl::Duration> got = Parse(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(DurationFlagTest, RefusesWhatIsNotADuration) {
  for (const char* text : {"", "30", "abc", "5 m", "inf", "-inf", "s", "1x"}) {
    absl::StatusOr<absl::Duration> got = Parse(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find("--ttl"), absl::string_view::npos);
    EXPECT_NE(got.status().message().find("500ms"), absl::string_view::npos)
        << "the message shows the syntax";
  }
}

TEST(DurationFlagTest, RefusesNegativeAndOutOfRange) {
  EXPECT_FALSE(Parse("-1s").ok());
  EXPECT_FALSE(Parse("25h").ok());
  EXPECT_FALSE(
      ParseDurationFlag("--ttl", "0s", absl::Milliseconds(1), absl::Hours(24))
          .ok());
  EXPECT_TRUE(Parse("24h").ok());
}

TEST(DurationFlagTest, FormatsForPeople) {
  EXPECT_EQ(FormatDurationForHumans(absl::Milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDurationForHumans(absl::Seconds(90)), "1m30s");
  EXPECT_EQ(FormatDurationForHumans(absl::Microseconds(1500)), "1ms");
  EXPECT_EQ(FormatDurationForHumans(absl::InfiniteDuration()), "forever");
}

}  // namespace
}  // namespace leasekeeper::ctl
