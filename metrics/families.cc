#include "metrics/families.h"

#include <utility>

namespace leasekeeper::metrics {
namespace {

prometheus::ClientMetric WithLabels(const prometheus::Labels& labels) {
  prometheus::ClientMetric metric;
  for (const auto& [name, value] : labels) {
    metric.label.push_back({name, value});
  }
  return metric;
}

}  // namespace

prometheus::MetricFamily MakeFamily(prometheus::MetricType type,
                                    std::string name, std::string help) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

void AddValue(prometheus::MetricFamily& family, double value,
              const prometheus::Labels& labels) {
  prometheus::ClientMetric metric = WithLabels(labels);
  if (family.type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

void AddHistogram(prometheus::MetricFamily& family,
                  absl::Span<const double> bounds,
                  absl::Span<const uint64_t> counts, double sum,
                  const prometheus::Labels& labels) {
  prometheus::ClientMetric metric = WithLabels(labels);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size() && i < counts.size(); ++i) {
    cumulative += counts[i];
    metric.histogram.bucket.push_back(
        {.cumulative_count = cumulative, .upper_bound = bounds[i]});
  }
  if (counts.size() > bounds.size()) cumulative += counts[bounds.size()];
  // The serializer writes the +Inf bucket from the count.
  metric.histogram.sample_count = cumulative;
  metric.histogram.sample_sum = sum;
  family.metric.push_back(std::move(metric));
}

}  // namespace leasekeeper::metrics
