#include "cluster/etcd_client.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cluster/etcd_endpoints.h"

namespace leasekeeper::storage {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path,
                                    const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", flag, " file ", path));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

std::string PrefixRangeEnd(const std::string& prefix) {
  std::string end = prefix;
  // The first key after every key with the prefix: the last byte that is
  // not 0xff, plus one, with what follows it cut.
  while (!end.empty()) {
    unsigned char& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // etcd: every key from `prefix` on
}

absl::Status FromEtcdStatus(const grpc::Status& status, const char* what) {
  if (status.ok()) return absl::OkStatus();
  const std::string message =
      absl::StrCat("etcd ", what, ": ", status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return absl::UnavailableError(message);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::FailedPreconditionError(message);
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(message);
    case grpc::StatusCode::OUT_OF_RANGE:
      return absl::OutOfRangeError(message);
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::PermissionDeniedError(message);
    default:
      return absl::UnavailableError(message);
  }
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(
    const EtcdClientOptions& options) {
  absl::StatusOr<EtcdEndpoints> endpoints =
      ParseEtcdEndpoints(options.endpoints);
  if (!endpoints.ok()) return endpoints.status();
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError("--etcd-cert and --etcd-key go together");
  }
  if (!options.cert_file.empty() && options.ca_file.empty()) {
    return absl::InvalidArgumentError("--etcd-cert needs --etcd-ca");
  }
  if (endpoints->scheme == EtcdEndpoints::Scheme::kHttp &&
      !options.ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--etcd-ca with http:// etcd endpoints: use https:// for TLS");
  }
  const bool tls = endpoints->scheme == EtcdEndpoints::Scheme::kHttps ||
                   !options.ca_file.empty();
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!tls) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    // No CA (https:// alone): gRPC's default roots.
    grpc::SslCredentialsOptions ssl;
    if (!options.ca_file.empty()) {
      absl::StatusOr<std::string> ca = ReadPem(options.ca_file, "--etcd-ca");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
    }
    if (!options.cert_file.empty()) {
      absl::StatusOr<std::string> cert =
          ReadPem(options.cert_file, "--etcd-cert");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadPem(options.key_file, "--etcd-key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  // Fast reconnects: a member that comes back should be used again within
  // a lease's time, not after gRPC's default backoff of up to two minutes.
  // (Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: it is also the connect
  // timeout, and a loaded machine needs more than a few hundred ms.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  // Pings find a member that hangs (paused, partitioned). etcd answers
  // pings more often than its --grpc-keepalive-min-time (5 s) with
  // GOAWAY, so no more often than that.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2'000);
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(16 << 20);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const std::string& target : ChannelTargets(*endpoints)) {
    channels.push_back(grpc::CreateCustomChannel(target, credentials, args));
  }
  return std::unique_ptr<EtcdClient>(
      new EtcdClient(std::move(channels), options.call_timeout));
}

EtcdClient::EtcdClient(std::vector<std::shared_ptr<grpc::Channel>> channels,
                       std::chrono::milliseconds call_timeout)
    : call_timeout_(call_timeout),
      last_success_(std::chrono::steady_clock::now()) {
  for (std::shared_ptr<grpc::Channel>& channel : channels) {
    Target target;
    target.kv = etcdserverpb::KV::NewStub(channel);
    target.lease = etcdserverpb::Lease::NewStub(channel);
    target.watch = etcdserverpb::Watch::NewStub(channel);
    target.channel = std::move(channel);
    targets_.push_back(std::move(target));
  }
}

void EtcdClient::SetDeadline(grpc::ClientContext& context,
                             std::chrono::milliseconds timeout) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       (timeout.count() > 0 ? timeout : call_timeout_));
  // A member that is down is skipped by the channel, not waited for.
  context.set_wait_for_ready(false);
}

void EtcdClient::Count(Method method, const std::string& error, bool reached) {
  const auto now = std::chrono::steady_clock::now();
  absl::MutexLock lock(&mu_);
  reporter_.Record(now, reached ? std::string() : error);
  if (reached) {
    last_success_ = now;
    ever_succeeded_ = true;
  }
  if (!error.empty()) {
    ++errors_[method];
    last_error_ = error;
  }
}

template <typename Response, typename Invoke>
absl::StatusOr<Response> EtcdClient::Call(Method method,
                                          std::chrono::milliseconds timeout,
                                          Invoke invoke) {
  const char* name = EtcdCallStats::kMethods[method];
  const size_t in_use = current_.load();
  Target& target = targets_[in_use % targets_.size()];
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  Response response;
  const grpc::Status status = invoke(target, &context, &response);
  if (status.ok()) {
    Count(method, "", /*reached=*/true);
    return response;
  }
  // etcd's answers about the data (a lease or key it does not have, a
  // compacted revision) say that it works.
  const bool answered =
      status.error_code() == grpc::StatusCode::NOT_FOUND ||
      status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
      status.error_code() == grpc::StatusCode::OUT_OF_RANGE;
  Count(method,
        absl::StrCat("etcd ", name, ": ",
                     absl::StatusCodeToString(
                         static_cast<absl::StatusCode>(status.error_code())),
                     ": ", status.error_message()),
        answered);
  const bool unreachable =
      status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  if (unreachable && targets_.size() > 1) {
    // To the next endpoint, unless another call moved on already.
    size_t expected = in_use;
    current_.compare_exchange_strong(expected, in_use + 1);
  }
  return FromEtcdStatus(status, name);
}

EtcdCallStats EtcdClient::call_stats() const {
  EtcdCallStats stats;
  absl::MutexLock lock(&mu_);
  stats.reachable = ever_succeeded_ && !reporter_.in_trouble();
  stats.errors_by_method = errors_;
  stats.since_last_success = std::chrono::steady_clock::now() - last_success_;
  if (reporter_.in_trouble()) stats.trouble = last_error_;
  return stats;
}

std::optional<EtcdHealthReporter::Notice> EtcdClient::PollHealth() {
  const auto now = std::chrono::steady_clock::now();
  absl::MutexLock lock(&mu_);
  return reporter_.Poll(now);
}

void CompareCreateRevision(etcdserverpb::TxnRequest& txn,
                           const std::string& key, int64_t create_revision) {
  etcdserverpb::Compare* compare = txn.add_compare();
  compare->set_key(key);
  compare->set_target(etcdserverpb::Compare::CREATE);
  compare->set_result(etcdserverpb::Compare::EQUAL);
  compare->set_create_revision(create_revision);
}

absl::StatusOr<PutIfAbsentResult> PutIfAbsent(EtcdClient& client,
                                              const std::string& key,
                                              const std::string& value,
                                              int64_t lease_id) {
  etcdserverpb::TxnRequest txn;
  CompareCreateRevision(txn, key, 0);  // absent
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  put->set_lease(lease_id);
  txn.add_failure()->mutable_request_range()->set_key(key);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client.Txn(txn);
  if (!response.ok()) return response.status();
  PutIfAbsentResult result;
  if (response->succeeded()) {
    result.created = true;
    // The put is the transaction's only write.
    result.revision = response->header().revision();
    return result;
  }
  const etcdserverpb::RangeResponse& current =
      response->responses(0).response_range();
  if (current.kvs_size() == 1) result.existing = current.kvs(0);
  return result;
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(
    const etcdserverpb::TxnRequest& request,
    std::chrono::milliseconds timeout) {
  return Call<etcdserverpb::TxnResponse>(
      kTxn, timeout,
      [&](Target& target, grpc::ClientContext* context,
          etcdserverpb::TxnResponse* response) {
        return target.kv->Txn(context, request, response);
      });
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request) {
  return Call<etcdserverpb::RangeResponse>(
      kRange, call_timeout_,
      [&](Target& target, grpc::ClientContext* context,
          etcdserverpb::RangeResponse* response) {
        return target.kv->Range(context, request, response);
      });
}

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(
    const etcdserverpb::PutRequest& request) {
  return Call<etcdserverpb::PutResponse>(
      kPut, call_timeout_,
      [&](Target& target, grpc::ClientContext* context,
          etcdserverpb::PutResponse* response) {
        return target.kv->Put(context, request, response);
      });
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& request) {
  return Call<etcdserverpb::DeleteRangeResponse>(
      kDeleteRange, call_timeout_,
      [&](Target& target, grpc::ClientContext* context,
          etcdserverpb::DeleteRangeResponse* response) {
        return target.kv->DeleteRange(context, request, response);
      });
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(
    int64_t ttl_seconds) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> response =
      Call<etcdserverpb::LeaseGrantResponse>(
          kLeaseGrant, call_timeout_,
          [&](Target& target, grpc::ClientContext* context,
              etcdserverpb::LeaseGrantResponse* answer) {
            return target.lease->LeaseGrant(context, request, answer);
          });
  if (response.ok() && !response->error().empty()) {
    const std::string error =
        absl::StrCat("etcd LeaseGrant: ", response->error());
    Count(kLeaseGrant, error, /*reached=*/false);
    return absl::UnavailableError(error);
  }
  return response;
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease_id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id);
  return Call<etcdserverpb::LeaseRevokeResponse>(
             kLeaseRevoke, call_timeout_,
             [&](Target& target, grpc::ClientContext* context,
                 etcdserverpb::LeaseRevokeResponse* response) {
               return target.lease->LeaseRevoke(context, request, response);
             })
      .status();
}

}  // namespace leasekeeper::storage
