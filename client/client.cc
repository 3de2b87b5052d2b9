#include "client/client.h"

#include <unistd.h>

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/internal/channel_set.h"
#include "client/internal/client_core.h"

namespace leasekeeper::client {
namespace {

std::string DefaultClientId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    absl::SNPrintF(host, sizeof(host), "unknown-host");
  }
  absl::BitGen random;
  return absl::StrFormat("%s/%d/%08x", host, static_cast<int>(getpid()),
                         absl::Uniform<uint32_t>(random));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Create(
    std::shared_ptr<grpc::Channel> channel, ClientOptions options) {
  if (channel == nullptr) {
    return absl::InvalidArgumentError("the channel must not be null");
  }
  return Start(internal::ChannelSet::Fixed(std::move(channel)),
               std::move(options));
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    absl::string_view target, const ChannelOptions& channel_options,
    ClientOptions options) {
  absl::StatusOr<std::shared_ptr<internal::ChannelSet>> channels =
      internal::ChannelSet::Connect(target, channel_options);
  if (!channels.ok()) return channels.status();
  return Start(*std::move(channels), std::move(options));
}

absl::StatusOr<std::unique_ptr<Client>> Client::Start(
    std::shared_ptr<internal::ChannelSet> channels, ClientOptions options) {
  if (options.client_id.empty()) options.client_id = DefaultClientId();
  if (options.client_id.size() > kMaxClientIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the client id is longer than ", kMaxClientIdBytes, " bytes"));
  }
  if (options.holder_label.size() > kMaxHolderLabelBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the holder label is longer than ", kMaxHolderLabelBytes, " bytes"));
  }
  if (options.call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the call timeout must be positive");
  }
  if (options.idle_keepalive_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "the idle keepalive interval must be positive");
  }
  auto core = std::make_shared<internal::ClientCore>(std::move(channels),
                                                     std::move(options));
  core->Start();
  return std::unique_ptr<Client>(new Client(std::move(core)));
}

Client::Client(std::shared_ptr<internal::ClientCore> core)
    : core_(std::move(core)) {}

Client::~Client() { core_->Shutdown(); }

const std::string& Client::client_id() const { return core_->client_id(); }

absl::StatusOr<Lease> Client::Acquire(absl::string_view lock,
                                      absl::Duration ttl, absl::Duration wait,
                                      const AcquireOptions& options) {
  absl::StatusOr<std::shared_ptr<internal::LeaseState>> state =
      core_->Acquire(lock, ttl, wait, options, /*try_only=*/false);
  if (!state.ok()) return state.status();
  return Lease(core_, *std::move(state));
}

absl::StatusOr<Lease> Client::AcquireSemaphore(absl::string_view lock,
                                               uint32_t n, absl::Duration ttl,
                                               absl::Duration wait,
                                               AcquireOptions options) {
  if (n < 1 || n > kMaxSemaphoreCapacity) {
    return absl::InvalidArgumentError(
        absl::StrCat("semaphore capacity ", n, " outside 1..",
                     kMaxSemaphoreCapacity));
  }
  options.mode = LockMode::kSemaphore;
  options.capacity = n;
  return Acquire(lock, ttl, wait, options);
}

absl::StatusOr<std::optional<Lease>> Client::TryAcquire(
    absl::string_view lock, absl::Duration ttl, const AcquireOptions& options) {
  absl::StatusOr<std::shared_ptr<internal::LeaseState>> state =
      core_->Acquire(lock, ttl, absl::ZeroDuration(), options,
                     /*try_only=*/true);
  if (!state.ok()) return state.status();
  if (*state == nullptr) return std::optional<Lease>();
  return std::optional<Lease>(Lease(core_, *std::move(state)));
}

absl::Status Client::Write(const Lease& lease, absl::string_view key,
                           absl::string_view value) {
  return core_->Write(*lease.state_, key, value);
}

absl::StatusOr<std::optional<std::string>> Client::Read(absl::string_view lock,
                                                        absl::string_view key) {
  return core_->Read(lock, key);
}

absl::StatusOr<bool> Client::Delete(const Lease& lease, absl::string_view key) {
  return core_->Delete(*lease.state_, key);
}

absl::StatusOr<KeysPage> Client::ListKeys(absl::string_view lock,
                                          absl::string_view after,
                                          int32_t limit) {
  return core_->ListKeys(lock, after, limit);
}

const RpcClient& Client::rpc() const { return core_->rpc(); }

void Client::PauseRenewalsForTesting(bool paused) {
  core_->PauseRenewalsForTesting(paused);
}

void Client::SuspendSessionForTesting(absl::Duration duration) {
  core_->SuspendSessionForTesting(duration);
}

}  // namespace leasekeeper::client
