// Metric families built from values read when /metrics is scraped, for
// collectors (prometheus::Collectable) that expose numbers another
// component already keeps: the server's core counters, the durable store's
// fsync statistics, the process's /proc entries. Nothing is stored between
// scrapes; each Collect builds its families afresh with these helpers.
//
// Metrics updated on a request's path (per-RPC counts and latencies) are
// prometheus-cpp's own Counter and Histogram objects instead.
//
// Thread-safety: pure functions over values the caller owns.
#ifndef LEASEKEEPER_METRICS_FAMILIES_H_
#define LEASEKEEPER_METRICS_FAMILIES_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "prometheus/labels.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace leasekeeper::metrics {

// An empty family. REQUIRES: `name` and `help` follow Prometheus' rules
// (counters end in _total; base units in the name).
prometheus::MetricFamily MakeFamily(prometheus::MetricType type,
                                    std::string name, std::string help);

// Appends one counter or gauge series (by the family's type) with `value`.
// REQUIRES: the family is a counter or a gauge; no other series of it has
// the same labels.
void AddValue(prometheus::MetricFamily& family, double value,
              const prometheus::Labels& labels = {});

// Appends one histogram series from per-bucket (not cumulative) counts:
// counts[i] observations fell at or below bounds[i] and above the bound
// before it; counts[bounds.size()] above the last bound (+Inf). The count
// is their total. REQUIRES: the family is a histogram; bounds strictly
// increasing; counts.size() == bounds.size() + 1.
void AddHistogram(prometheus::MetricFamily& family,
                  absl::Span<const double> bounds,
                  absl::Span<const uint64_t> counts, double sum,
                  const prometheus::Labels& labels = {});

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_FAMILIES_H_
