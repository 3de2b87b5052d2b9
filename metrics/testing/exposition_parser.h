// Exposition: a strict parser for the Prometheus text exposition format
// (0.0.4), for tests that scrape /metrics and check values.
//
// Strict means it refuses what Prometheus would refuse or what our renderer
// must never produce: a sample before its family's `# TYPE`, a family typed
// twice, a malformed name, label or value, a duplicate series, and a
// histogram whose buckets are not cumulative or whose +Inf bucket differs
// from its _count.
//
// Thread-safety: a plain value.
#ifndef LEASEKEEPER_METRICS_TESTING_EXPOSITION_PARSER_H_
#define LEASEKEEPER_METRICS_TESTING_EXPOSITION_PARSER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leasekeeper::metrics::testing {

using LabelMap = std::map<std::string, std::string>;

struct Sample {
  std::string name;  // as written, e.g. "x_bucket"
  LabelMap labels;
  double value = 0;
};

struct FamilyInfo {
  std::string type;  // counter | gauge | histogram | summary | untyped
  std::string help;
};

class Exposition {
 public:
  // Outcomes: the parsed text; INVALID_ARGUMENT naming the line number and
  // the problem.
  static absl::StatusOr<Exposition> Parse(absl::string_view text);

  // The value of the series with exactly these labels, or nullopt.
  std::optional<double> Value(absl::string_view name,
                              const LabelMap& labels = {}) const;

  // The `le`-keyed cumulative bucket counts of a histogram series (labels
  // without `le`), in ascending bound order with +Inf last.
  std::vector<std::pair<double, double>> Buckets(
      absl::string_view name, const LabelMap& labels = {}) const;

  const std::vector<Sample>& samples() const { return samples_; }
  const std::map<std::string, FamilyInfo>& families() const {
    return families_;
  }

 private:
  // Parse's last step: every histogram's buckets end in +Inf, are
  // cumulative and agree with _count, and it has a _sum.
  absl::Status CheckHistograms() const;

  std::vector<Sample> samples_;
  std::map<std::string, FamilyInfo> families_;
};

}  // namespace leasekeeper::metrics::testing

#endif  // LEASEKEEPER_METRICS_TESTING_EXPOSITION_PARSER_H_
