#include "metrics/testing/exposition_parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace leasekeeper::metrics::testing {
namespace {

bool IsName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' ||
                    (allow_colon && c == ':') ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

bool ParseValue(absl::string_view text, double* value) {
  if (text == "+Inf" || text == "Inf") {
    *value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-Inf") {
    *value = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (absl::EqualsIgnoreCase(text, "NaN")) {  // as Prometheus reads it
    *value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  return absl::SimpleAtod(text, value) && std::isfinite(*value);
}

// The family a sample name belongs to: itself, or for histogram/summary
// series the name without _bucket/_sum/_count.
std::string FamilyOf(const std::string& name,
                     const std::map<std::string, FamilyInfo>& families) {
  if (families.count(name)) return name;
  for (absl::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (absl::EndsWith(name, suffix)) {
      std::string base = name.substr(0, name.size() - suffix.size());
      auto it = families.find(base);
      if (it != families.end() &&
          (it->second.type == "histogram" || it->second.type == "summary")) {
        return base;
      }
    }
  }
  return "";
}

absl::Status LineError(int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what));
}

// Parses `{a="x",b="y"}` at the start of `rest`; advances `rest`.
absl::Status ParseLabels(int line, absl::string_view& rest, LabelMap* labels) {
  rest.remove_prefix(1);  // '{'
  while (true) {
    if (rest.empty()) return LineError(line, "unterminated label set");
    if (rest.front() == '}') {
      rest.remove_prefix(1);
      return absl::OkStatus();
    }
    const size_t eq = rest.find('=');
    if (eq == absl::string_view::npos) {
      return LineError(line, "label without '='");
    }
    std::string name(rest.substr(0, eq));
    if (!IsName(name, /*allow_colon=*/false)) {
      return LineError(line, absl::StrCat("bad label name \"", name, "\""));
    }
    rest.remove_prefix(eq + 1);
    if (rest.empty() || rest.front() != '"') {
      return LineError(line, "label value must be quoted");
    }
    rest.remove_prefix(1);
    std::string value;
    bool closed = false;
    while (!rest.empty()) {
      const char c = rest.front();
      rest.remove_prefix(1);
      if (c == '"') {
        closed = true;
        break;
      }
      if (c == '\\') {
        if (rest.empty()) return LineError(line, "dangling escape");
        const char e = rest.front();
        rest.remove_prefix(1);
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else {
          return LineError(line, "bad escape in label value");
        }
        continue;
      }
      if (c == '\n') return LineError(line, "raw newline in label value");
      value += c;
    }
    if (!closed) return LineError(line, "unterminated label value");
    if (!labels->emplace(name, value).second) {
      return LineError(line, absl::StrCat("label \"", name, "\" repeated"));
    }
    if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  }
}

// A `# HELP` or `# TYPE` line into `families`; other comments are skipped.
// `typed_with_samples`: the families that already have samples.
absl::Status ParseComment(int line_number, absl::string_view line,
                          const std::set<std::string>& typed_with_samples,
                          std::map<std::string, FamilyInfo>& families) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(line, absl::MaxSplits(' ', 3));
  if (parts.size() < 3 || (parts[1] != "HELP" && parts[1] != "TYPE")) {
    return absl::OkStatus();  // a plain comment
  }
  std::string name(parts[2]);
  if (!IsName(name, /*allow_colon=*/true)) {
    return LineError(line_number,
                     absl::StrCat("bad metric name \"", name, "\""));
  }
  FamilyInfo& family = families[name];
  const std::string argument = parts.size() > 3 ? std::string(parts[3]) : "";
  if (parts[1] == "HELP") {
    if (!family.help.empty()) {
      return LineError(line_number, absl::StrCat("second HELP for ", name));
    }
    family.help = argument;
    return absl::OkStatus();
  }
  if (!family.type.empty()) {
    return LineError(line_number, absl::StrCat("second TYPE for ", name));
  }
  if (typed_with_samples.count(name)) {
    return LineError(line_number, absl::StrCat("TYPE after samples of ", name));
  }
  static const std::set<std::string> kTypes = {"counter", "gauge", "histogram",
                                               "summary", "untyped"};
  if (!kTypes.count(argument)) {
    return LineError(line_number,
                     absl::StrCat("unknown type \"", argument, "\""));
  }
  family.type = argument;
  return absl::OkStatus();
}

// A sample line: its name, labels and value (an optional timestamp after
// the value is read past).
absl::StatusOr<Sample> ParseSample(int line_number, absl::string_view line) {
  Sample sample;
  size_t name_end = 0;
  while (name_end < line.size() && line[name_end] != '{' &&
         line[name_end] != ' ') {
    ++name_end;
  }
  sample.name = std::string(line.substr(0, name_end));
  if (!IsName(sample.name, /*allow_colon=*/true)) {
    return LineError(line_number,
                     absl::StrCat("bad metric name \"", sample.name, "\""));
  }
  absl::string_view rest = line.substr(name_end);
  if (!rest.empty() && rest.front() == '{') {
    if (absl::Status status = ParseLabels(line_number, rest, &sample.labels);
        !status.ok()) {
      return status;
    }
  }
  if (rest.empty() || rest.front() != ' ') {
    return LineError(line_number, "missing value");
  }
  rest.remove_prefix(1);
  std::vector<absl::string_view> fields = absl::StrSplit(rest, ' ');
  if (fields.empty() || fields.size() > 2 ||
      !ParseValue(fields[0], &sample.value)) {
    return LineError(line_number, absl::StrCat("bad value \"", rest, "\""));
  }
  return sample;
}

}  // namespace

absl::StatusOr<Exposition> Exposition::Parse(absl::string_view text) {
  Exposition out;
  std::set<std::string> typed_with_samples;
  std::set<std::pair<std::string, LabelMap>> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (absl::Status status = ParseComment(line_number, line,
                                             typed_with_samples, out.families_);
          !status.ok()) {
        return status;
      }
      continue;
    }
    absl::StatusOr<Sample> sample = ParseSample(line_number, line);
    if (!sample.ok()) return sample.status();
    const std::string family = FamilyOf(sample->name, out.families_);
    if (family.empty() || out.families_[family].type.empty()) {
      return LineError(
          line_number,
          absl::StrCat("sample ", sample->name, " before its family's # TYPE"));
    }
    typed_with_samples.insert(family);
    if (!seen.emplace(sample->name, sample->labels).second) {
      return LineError(line_number,
                       absl::StrCat("duplicate series of ", sample->name));
    }
    out.samples_.push_back(*std::move(sample));
  }
  if (absl::Status status = out.CheckHistograms(); !status.ok()) return status;
  return out;
}

absl::Status Exposition::CheckHistograms() const {
  for (const auto& [name, family] : families_) {
    if (family.type != "histogram") continue;
    for (const Sample& sample : samples_) {
      if (sample.name != name + "_count") continue;
      const std::vector<std::pair<double, double>> buckets =
          Buckets(name, sample.labels);
      if (buckets.empty() || !std::isinf(buckets.back().first)) {
        return absl::InvalidArgumentError(
            absl::StrCat("histogram ", name, " lacks a +Inf bucket"));
      }
      for (size_t i = 1; i < buckets.size(); ++i) {
        if (buckets[i].second < buckets[i - 1].second) {
          return absl::InvalidArgumentError(
              absl::StrCat("histogram ", name, " buckets not cumulative"));
        }
      }
      if (buckets.back().second != sample.value) {
        return absl::InvalidArgumentError(
            absl::StrCat("histogram ", name, " +Inf bucket != _count"));
      }
      if (!Value(name + "_sum", sample.labels).has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("histogram ", name, " lacks _sum"));
      }
    }
  }
  return absl::OkStatus();
}

std::optional<double> Exposition::Value(absl::string_view name,
                                        const LabelMap& labels) const {
  for (const Sample& sample : samples_) {
    if (sample.name == name && sample.labels == labels) return sample.value;
  }
  return std::nullopt;
}

std::vector<std::pair<double, double>> Exposition::Buckets(
    absl::string_view name, const LabelMap& labels) const {
  std::vector<std::pair<double, double>> buckets;
  const std::string bucket_name = absl::StrCat(name, "_bucket");
  for (const Sample& sample : samples_) {
    if (sample.name != bucket_name) continue;
    LabelMap rest = sample.labels;
    auto le = rest.find("le");
    if (le == rest.end()) continue;
    double bound = 0;
    if (!ParseValue(le->second, &bound)) continue;
    rest.erase(le);
    if (rest != labels) continue;
    buckets.emplace_back(bound, sample.value);
  }
  std::sort(buckets.begin(), buckets.end());
  return buckets;
}

}  // namespace leasekeeper::metrics::testing
