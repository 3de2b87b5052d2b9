#include "server/owner_effects.h"

namespace leasekeeper::server {

void OwnerEffects::Perform(const absl::Status& durable) {
  if (!durable.ok()) {
    for (auto& [call, reply] : completions) reply = AcquireCallAnswer{durable};
    notices.clear();
  }
  for (auto& [call, reply] : completions) call->Complete(std::move(reply));
  for (auto& [sink, notice] : notices) sink->Notify(notice);
  for (auto& [sink, status] : stream_ends) sink->End(status);
  for (const LogRecord& record : logs) WriteLog(record);
  // Last, as when the gRPC layer sent it after the effects.
  if (answer) std::move(answer)(durable);
}

}  // namespace leasekeeper::server
