// leasekeeper-ctl's durations: 500ms, 30s, 5m; nothing negative, infinite or
// without a unit; each flag's range; and how a flag made with
// AddDurationFlag reports a bad value.
#include "client/ctl/duration_flag.h"

#include "CLI/CLI.hpp"
#include "gtest/gtest.h"

namespace leasekeeper::ctl {
namespace {

constexpr DurationRange kUpToADay{absl::ZeroDuration(), absl::Hours(24)};

TEST(DurationFlagTest, AcceptsTheDocumentedSyntax) {
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
    absl::StatusOr<absl::Duration> got = ParseDurationFlag(c.text, kUpToADay);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(DurationFlagTest, RefusesWhatIsNotADurationShowingTheSyntax) {
  for (const char* text : {"", "30", "abc", "5 m", "inf", "-inf", "s", "1x"}) {
    absl::StatusOr<absl::Duration> got = ParseDurationFlag(text, kUpToADay);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find("500ms"), absl::string_view::npos)
        << "the message shows the syntax";
  }
}

TEST(DurationFlagTest, RefusesNegativeAndOutOfRange) {
  EXPECT_FALSE(ParseDurationFlag("-1s", kUpToADay).ok());
  EXPECT_FALSE(ParseDurationFlag("25h", kUpToADay).ok());
  EXPECT_FALSE(
      ParseDurationFlag("0s", {absl::Milliseconds(1), absl::Hours(24)}).ok());
  EXPECT_TRUE(ParseDurationFlag("24h", kUpToADay).ok());
}

TEST(DurationFlagTest, AFlagSetsItsTargetOrFailsNamingItself) {
  CLI::App app;
  std::optional<absl::Duration> ttl;
  absl::Duration grace = absl::Seconds(10);
  AddDurationFlag(app, "--ttl", &ttl, kUpToADay, "");
  AddDurationFlag(app, "--grace", &grace, kUpToADay, "");
  app.parse(std::vector<std::string>{"1m30s", "--ttl"});  // reversed
  EXPECT_EQ(ttl, absl::Seconds(90));
  EXPECT_EQ(grace, absl::Seconds(10)) << "untouched when not given";

  CLI::App bad;
  AddDurationFlag(bad, "--ttl", &ttl, kUpToADay, "");
  try {
    bad.parse(std::vector<std::string>{"30", "--ttl"});
    ADD_FAILURE() << "accepted --ttl 30";
  } catch (const CLI::ValidationError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--ttl: invalid duration \"30\" (use e.g. 500ms, 30s, 5m, 1h)");
  }
}

TEST(DurationFlagTest, FormatsForPeople) {
  EXPECT_EQ(FormatDurationForHumans(absl::Milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDurationForHumans(absl::Seconds(90)), "1m30s");
  EXPECT_EQ(FormatDurationForHumans(absl::Microseconds(1500)), "1ms");
  EXPECT_EQ(FormatDurationForHumans(absl::InfiniteDuration()), "forever");
}

}  // namespace
}  // namespace leasekeeper::ctl
