// Registry: the set of metrics a process exposes, and their rendering in the
// Prometheus text exposition format (version 0.0.4).
//
// Metrics are registered once, at startup, and never removed. Registration
// hands back a stable pointer; the hot path then touches only that metric's
// atomics, never the registry.
//
// Naming rules, enforced at registration (INVALID_ARGUMENT otherwise):
//  - a name matches [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in `_total`;
//    no other type ends in `_total`, `_bucket`, `_sum` or `_count`. Use base
//    units in the name: `_seconds`, `_bytes`.
//  - label names match [a-zA-Z_][a-zA-Z0-9_]*, do not start with `__`, and
//    `le` is reserved for histogram buckets.
//  - label VALUES are fixed at registration: there is deliberately no way to
//    create a series for a value only known at request time, so the number
//    of series is bounded by the code. Labels that would carry unbounded,
//    per-tenant data are refused by name (see kForbiddenLabelNames): lock
//    names and client ids are never labels.
//
// Families: several registrations may share a name (a family) if they agree
// on the type, the help text, the label names (in the same order) and, for
// histograms, the buckets; each must then have a distinct label set.
//
// Thread-safety: every method may be called from any thread. Registration
// and Render take an internal mutex; Render holds it only to copy the list of
// series, then reads the values (atomics, and callback gauges) without it,
// so a callback may take other locks (e.g. the server's core mutex) without
// a lock-order inversion with registration.
//
// Invariants:
//  1. Every registered metric's address is stable until the registry is
//     destroyed. REQUIRES: the registry outlives every user of its metrics.
//  2. Render emits each family once: `# HELP`, `# TYPE`, then its series in
//     registration order; families in the order of their first
//     registration.
#ifndef LEASEKEEPER_METRICS_REGISTRY_H_
#define LEASEKEEPER_METRICS_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "metrics/counter.h"
#include "metrics/gauge.h"
#include "metrics/histogram.h"

namespace leasekeeper::metrics {

// Label name/value pairs, rendered in this order.
using Labels = std::vector<std::pair<std::string, std::string>>;

// Label names refused at registration: they would carry lock names, client
// ids or other unbounded per-request data.
inline constexpr const char* kForbiddenLabelNames[] = {
    "lock",         "lock_name", "name",       "key",        "client",
    "client_id",    "session",   "session_id", "request_id", "holder",
    "holder_label", "identity",  "peer"};

// The Content-Type of Render's output.
inline constexpr char kExpositionContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

class Registry {
 public:
  Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  ~Registry();

  // Each Add* outcome: the metric; INVALID_ARGUMENT for a name, label or
  // bucket list that breaks the rules above, or one that disagrees with an
  // earlier registration of the same name; ALREADY_EXISTS if the name and
  // label set are already registered. Nothing is registered on error.
  // Cost: O(series registered) (startup only).
  absl::StatusOr<Counter*> AddCounter(absl::string_view name,
                                      absl::string_view help,
                                      Labels labels = {});
  absl::StatusOr<Gauge*> AddGauge(absl::string_view name,
                                  absl::string_view help, Labels labels = {});
  absl::StatusOr<Histogram*> AddHistogram(absl::string_view name,
                                          absl::string_view help,
                                          std::vector<double> bounds,
                                          Labels labels = {});

  // Callback metrics: the value is read at each Render, for quantities some
  // other component already keeps (the server's core counts, the durable
  // store's fsync statistics). `read` runs on the rendering thread with no
  // registry lock held; it must be thread-safe and quick, and must not log.
  // Outcomes as above, plus INVALID_ARGUMENT for an empty `read`.
  //
  // A gauge: any value.
  absl::Status AddCallbackGauge(absl::string_view name, absl::string_view help,
                                std::function<double()> read,
                                Labels labels = {});
  // A counter. REQUIRES: `read` never decreases between calls.
  absl::Status AddCallbackCounter(absl::string_view name,
                                  absl::string_view help,
                                  std::function<uint64_t()> read,
                                  Labels labels = {});
  // A histogram with the given bucket bounds. REQUIRES: `read` returns
  // bounds.size() + 1 cumulative counts (the last is +Inf); a snapshot of
  // another size renders no series. `count` is rendered as the +Inf count.
  absl::Status AddCallbackHistogram(absl::string_view name,
                                    absl::string_view help,
                                    std::vector<double> bounds,
                                    std::function<Histogram::Snapshot()> read,
                                    Labels labels = {});

  // The exposition text of every registered metric (Content-Type
  // kExpositionContentType). O(series + buckets).
  std::string Render() const;

 private:
  struct Family;
  struct Series;

  // Checks the rules, finds or creates the family, and adds an empty series
  // with `labels` to it for the caller to give its value or callback.
  absl::StatusOr<Series*> AddSeriesLocked(absl::string_view name,
                                          absl::string_view help, int type,
                                          Labels labels,
                                          const std::vector<double>* bounds)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Family>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_REGISTRY_H_
