#include "metrics/registry.h"

#include <charconv>
#include <cmath>
#include <utility>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::metrics {
namespace {

enum Type { kCounter = 0, kGauge = 1, kHistogram = 2 };

const char* TypeName(int type) {
  switch (type) {
    case kCounter:
      return "counter";
    case kGauge:
      return "gauge";
    default:
      return "histogram";
  }
}

bool IsNameChar(char c, bool first, bool allow_colon) {
  if (absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_') {
    return true;
  }
  if (allow_colon && c == ':') return true;
  return !first && absl::ascii_isdigit(static_cast<unsigned char>(c));
}

bool IsValidName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, allow_colon)) return false;
  }
  return true;
}

absl::Status CheckMetricName(absl::string_view name, int type) {
  if (!IsValidName(name, /*allow_colon=*/true)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric name \"", name, "\" must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
  }
  const bool ends_total = absl::EndsWith(name, "_total");
  if (type == kCounter && !ends_total) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter \"", name, "\" must end in _total"));
  }
  if (type != kCounter) {
    for (absl::string_view suffix : {"_total", "_bucket", "_sum", "_count"}) {
      if (absl::EndsWith(name, suffix)) {
        return absl::InvalidArgumentError(
            absl::StrCat(TypeName(type), " \"", name, "\" must not end in ",
                         suffix, " (reserved for counters and histograms)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLabels(absl::string_view metric, const Labels& labels,
                         int type) {
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i].first;
    if (!IsValidName(label, /*allow_colon=*/false) ||
        absl::StartsWith(label, "__")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label \"", label, "\" of \"", metric,
          "\" must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __"));
    }
    if (type == kHistogram && label == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("label \"le\" of \"", metric,
                       "\" is reserved for histogram buckets"));
    }
    for (const char* forbidden : kForbiddenLabelNames) {
      if (label == forbidden) {
        return absl::InvalidArgumentError(
            absl::StrCat("label \"", label, "\" of \"", metric,
                         "\" would carry unbounded per-request values; lock "
                         "names and client ids are never labels"));
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].first == label) {
        return absl::InvalidArgumentError(absl::StrCat(
            "label \"", label, "\" of \"", metric, "\" given twice"));
      }
    }
  }
  return absl::OkStatus();
}

// Shortest text that reads back as the same double; Prometheus spellings for
// the special values.
std::string FormatDouble(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (error != std::errc()) return absl::StrCat(value);
  return std::string(buffer, end);
}

void AppendEscaped(std::string& out, absl::string_view text,
                   bool escape_quote) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        if (escape_quote) {
          out += "\\\"";
        } else {
          out += c;
        }
        break;
      default:
        out += c;
    }
  }
}

// Appends `{a="x",b="y"}` (plus an optional extra label, for `le`), or
// nothing when there are no labels.
void AppendLabels(std::string& out, const Labels& labels,
                  const std::pair<const char*, std::string>* extra) {
  if (labels.empty() && extra == nullptr) return;
  out += '{';
  bool first = true;
  auto append = [&](absl::string_view name, absl::string_view value) {
    if (!first) out += ',';
    first = false;
    out.append(name.data(), name.size());
    out += "=\"";
    AppendEscaped(out, value, /*escape_quote=*/true);
    out += '"';
  };
  for (const auto& [name, value] : labels) append(name, value);
  if (extra != nullptr) append(extra->first, extra->second);
  out += '}';
}

}  // namespace

struct Registry::Series {
  Labels labels;
  // Exactly one of these is set.
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
  std::function<double()> gauge_callback;
  std::function<uint64_t()> counter_callback;
  std::function<Histogram::Snapshot()> histogram_callback;
};

struct Registry::Family {
  std::string name;
  std::string help;
  int type = kCounter;
  std::vector<std::string> label_names;
  std::vector<double> bounds;  // histograms only
  std::vector<std::unique_ptr<Series>> series;
};

Registry::Registry() = default;
Registry::~Registry() = default;

absl::StatusOr<Registry::Series*> Registry::AddSeriesLocked(
    absl::string_view name, absl::string_view help, int type, Labels labels,
    const std::vector<double>* bounds) {
  if (absl::Status status = CheckMetricName(name, type); !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckLabels(name, labels, type); !status.ok()) {
    return status;
  }
  std::vector<std::string> label_names;
  label_names.reserve(labels.size());
  for (const auto& label : labels) label_names.push_back(label.first);

  Family* found = nullptr;
  for (const std::unique_ptr<Family>& family : families_) {
    if (family->name != name) continue;
    if (family->type != type || family->help != help ||
        family->label_names != label_names ||
        (bounds != nullptr && family->bounds != *bounds)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric \"", name,
          "\" registered again with a different type, help, label names or "
          "buckets"));
    }
    for (const std::unique_ptr<Series>& series : family->series) {
      if (series->labels == labels) {
        return absl::AlreadyExistsError(absl::StrCat(
            "metric \"", name, "\" with these labels is already registered"));
      }
    }
    found = family.get();
    break;
  }
  if (found == nullptr) {
    auto family = std::make_unique<Family>();
    family->name = std::string(name);
    family->help = std::string(help);
    family->type = type;
    family->label_names = std::move(label_names);
    if (bounds != nullptr) family->bounds = *bounds;
    families_.push_back(std::move(family));
    found = families_.back().get();
  }
  auto series = std::make_unique<Series>();
  series->labels = std::move(labels);
  found->series.push_back(std::move(series));
  return found->series.back().get();
}

absl::StatusOr<Counter*> Registry::AddCounter(absl::string_view name,
                                              absl::string_view help,
                                              Labels labels) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> series =
      AddSeriesLocked(name, help, kCounter, std::move(labels), nullptr);
  if (!series.ok()) return series.status();
  (*series)->counter = std::make_unique<Counter>();
  return (*series)->counter.get();
}

absl::StatusOr<Gauge*> Registry::AddGauge(absl::string_view name,
                                          absl::string_view help,
                                          Labels labels) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> series =
      AddSeriesLocked(name, help, kGauge, std::move(labels), nullptr);
  if (!series.ok()) return series.status();
  (*series)->gauge = std::make_unique<Gauge>();
  return (*series)->gauge.get();
}

absl::Status Registry::AddCallbackGauge(absl::string_view name,
                                        absl::string_view help,
                                        std::function<double()> read,
                                        Labels labels) {
  if (!read) return absl::InvalidArgumentError("callback gauge needs a reader");
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> series =
      AddSeriesLocked(name, help, kGauge, std::move(labels), nullptr);
  if (!series.ok()) return series.status();
  (*series)->gauge_callback = std::move(read);
  return absl::OkStatus();
}

absl::Status Registry::AddCallbackCounter(absl::string_view name,
                                          absl::string_view help,
                                          std::function<uint64_t()> read,
                                          Labels labels) {
  if (!read) {
    return absl::InvalidArgumentError("callback counter needs a reader");
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> series =
      AddSeriesLocked(name, help, kCounter, std::move(labels), nullptr);
  if (!series.ok()) return series.status();
  (*series)->counter_callback = std::move(read);
  return absl::OkStatus();
}

absl::Status Registry::AddCallbackHistogram(
    absl::string_view name, absl::string_view help, std::vector<double> bounds,
    std::function<Histogram::Snapshot()> read, Labels labels) {
  if (!read) {
    return absl::InvalidArgumentError("callback histogram needs a reader");
  }
  // Validates the bounds the same way as a histogram of our own.
  if (absl::StatusOr<std::unique_ptr<Histogram>> check =
          Histogram::Create(bounds);
      !check.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric \"", name, "\": ", check.status().message()));
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> series =
      AddSeriesLocked(name, help, kHistogram, std::move(labels), &bounds);
  if (!series.ok()) return series.status();
  (*series)->histogram_callback = std::move(read);
  return absl::OkStatus();
}

absl::StatusOr<Histogram*> Registry::AddHistogram(absl::string_view name,
                                                  absl::string_view help,
                                                  std::vector<double> bounds,
                                                  Labels labels) {
  absl::StatusOr<std::unique_ptr<Histogram>> histogram =
      Histogram::Create(bounds);
  if (!histogram.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric \"", name, "\": ", histogram.status().message()));
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Series*> series =
      AddSeriesLocked(name, help, kHistogram, std::move(labels), &bounds);
  if (!series.ok()) return series.status();
  (*series)->histogram = std::move(*histogram);
  return (*series)->histogram.get();
}

std::string Registry::Render() const {
  // Copy the (stable) pointers under the lock; read values without it.
  std::vector<std::pair<const Family*, std::vector<const Series*>>> snapshot;
  {
    absl::MutexLock lock(&mu_);
    snapshot.reserve(families_.size());
    for (const std::unique_ptr<Family>& family : families_) {
      std::vector<const Series*> series;
      series.reserve(family->series.size());
      for (const auto& one : family->series) series.push_back(one.get());
      snapshot.emplace_back(family.get(), std::move(series));
    }
  }

  std::string out;
  for (const auto& [family, all_series] : snapshot) {
    out += "# HELP ";
    out += family->name;
    out += ' ';
    AppendEscaped(out, family->help, /*escape_quote=*/false);
    out += "\n# TYPE ";
    out += family->name;
    out += ' ';
    out += TypeName(family->type);
    out += '\n';
    for (const Series* series : all_series) {
      if (family->type != kHistogram) {
        out += family->name;
        AppendLabels(out, series->labels, nullptr);
        out += ' ';
        if (series->counter) {
          absl::StrAppend(&out, series->counter->Value());
        } else if (series->gauge) {
          absl::StrAppend(&out, series->gauge->Value());
        } else if (series->counter_callback) {
          absl::StrAppend(&out, series->counter_callback());
        } else {
          out += FormatDouble(series->gauge_callback());
        }
        out += '\n';
        continue;
      }
      const Histogram::Snapshot histogram = series->histogram
                                                ? series->histogram->Read()
                                                : series->histogram_callback();
      const std::vector<double>& bounds = family->bounds;
      if (histogram.cumulative.size() != bounds.size() + 1) continue;
      for (size_t i = 0; i <= bounds.size(); ++i) {
        const std::pair<const char*, std::string> le(
            "le", i < bounds.size() ? FormatDouble(bounds[i]) : "+Inf");
        out += family->name;
        out += "_bucket";
        AppendLabels(out, series->labels, &le);
        absl::StrAppend(&out, " ", histogram.cumulative[i], "\n");
      }
      out += family->name;
      out += "_sum";
      AppendLabels(out, series->labels, nullptr);
      absl::StrAppend(&out, " ", FormatDouble(histogram.sum), "\n");
      out += family->name;
      out += "_count";
      AppendLabels(out, series->labels, nullptr);
      absl::StrAppend(&out, " ", histogram.cumulative.back(), "\n");
    }
  }
  return out;
}

}  // namespace leasekeeper::metrics
