#include "grpc_loop.h"

#include <grpcpp/alarm.h>

#include <utility>

namespace leasekeeper::bench {
namespace {

struct Tag {
  absl::AnyInvocable<void(bool)> fn;
};

}  // namespace

GrpcLoop::GrpcLoop() : thread_([this] { Run(); }) {}

GrpcLoop::~GrpcLoop() {
  cq_.Shutdown();
  thread_.join();
}

void* GrpcLoop::NewTag(absl::AnyInvocable<void(bool ok)> fn) {
  return new Tag{std::move(fn)};
}

void GrpcLoop::After(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  auto* alarm = new grpc::Alarm;
  gpr_timespec deadline = gpr_time_add(
      gpr_now(GPR_CLOCK_MONOTONIC),
      gpr_time_from_nanos(absl::ToInt64Nanoseconds(delay), GPR_TIMESPAN));
  alarm->Set(&cq_, deadline, NewTag([alarm, fn = std::move(fn)](bool) mutable {
    delete alarm;
    fn();
  }));
}

void GrpcLoop::Run() {
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) {
    std::unique_ptr<Tag> owned(static_cast<Tag*>(tag));
    owned->fn(ok);
  }
}

}  // namespace leasekeeper::bench
