#include "cluster/etcd_health_reporter.h"

#include <algorithm>

namespace leasekeeper::storage {

void EtcdHealthReporter::Record(Clock::time_point now,
                                const std::string& error) {
  if (error.empty()) {
    if (trouble_since_.has_value() && warned_) {
      recovered_after_ =
          std::chrono::duration_cast<Duration>(now - *trouble_since_);
    }
    trouble_since_.reset();
    warned_ = false;
    return;
  }
  last_error_ = error;
  if (trouble_since_.has_value()) return;
  trouble_since_ = now;
  next_warning_ = now + options_.warn_after;
  repeat_ = options_.first_repeat;
}

std::optional<EtcdHealthReporter::Notice> EtcdHealthReporter::Poll(
    Clock::time_point now) {
  if (recovered_after_.has_value()) {
    Notice notice{.kind = Notice::Kind::kRecovered,
                  .failing_for = *recovered_after_,
                  .error = {}};
    recovered_after_.reset();
    return notice;
  }
  if (!trouble_since_.has_value() || now < next_warning_) return std::nullopt;
  warned_ = true;
  next_warning_ = now + repeat_;
  repeat_ = std::min(repeat_ * 2, options_.max_repeat);
  return Notice{.kind = Notice::Kind::kTrouble,
                .failing_for =
                    std::chrono::duration_cast<Duration>(now - *trouble_since_),
                .error = last_error_};
}

}  // namespace leasekeeper::storage
