#include "cluster/etcd_client.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("no etcd endpoints (--etcd-endpoints)");
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--etcd-cert and --etcd-key go together");
  }
  if (!options.cert_file.empty() && options.ca_file.empty()) {
    return absl::InvalidArgumentError("--etcd-cert needs --etcd-ca");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.ca_file.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    absl::StatusOr<std::string> ca = ReadPem(options.ca_file, "--etcd-ca");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
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
  // "ipv4:a,b,c" is one channel over every member; pick_first sticks to
  // one and moves on when it fails. A name (not an address) goes through
  // DNS as usual, one endpoint at a time.
  bool all_addresses = true;
  for (const std::string& endpoint : options.endpoints) {
    if (endpoint.empty() || !(std::isdigit(endpoint.front()) != 0)) {
      all_addresses = false;
    }
  }
  const std::string target =
      all_addresses ? absl::StrCat("ipv4:", absl::StrJoin(options.endpoints, ","))
                    : options.endpoints.front();
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
  return std::unique_ptr<EtcdClient>(new EtcdClient(
      grpc::CreateCustomChannel(target, credentials, args),
      options.call_timeout));
}

EtcdClient::EtcdClient(std::shared_ptr<grpc::Channel> channel,
                       std::chrono::milliseconds call_timeout)
    : call_timeout_(call_timeout),
      channel_(std::move(channel)),
      kv_(etcdserverpb::KV::NewStub(channel_)),
      lease_(etcdserverpb::Lease::NewStub(channel_)),
      watch_(etcdserverpb::Watch::NewStub(channel_)) {}

void EtcdClient::SetDeadline(grpc::ClientContext& context,
                             std::chrono::milliseconds timeout) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       (timeout.count() > 0 ? timeout : call_timeout_));
  // A member that is down is skipped by the channel, not waited for.
  context.set_wait_for_ready(false);
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
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  etcdserverpb::TxnResponse response;
  grpc::Status status = kv_->Txn(&context, request, &response);
  if (!status.ok()) return FromEtcdStatus(status, "Txn");
  return response;
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, call_timeout_);
  etcdserverpb::RangeResponse response;
  grpc::Status status = kv_->Range(&context, request, &response);
  if (!status.ok()) return FromEtcdStatus(status, "Range");
  return response;
}

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(
    const etcdserverpb::PutRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, call_timeout_);
  etcdserverpb::PutResponse response;
  grpc::Status status = kv_->Put(&context, request, &response);
  if (!status.ok()) return FromEtcdStatus(status, "Put");
  return response;
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context, call_timeout_);
  etcdserverpb::DeleteRangeResponse response;
  grpc::Status status = kv_->DeleteRange(&context, request, &response);
  if (!status.ok()) return FromEtcdStatus(status, "DeleteRange");
  return response;
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(
    int64_t ttl_seconds) {
  grpc::ClientContext context;
  SetDeadline(context, call_timeout_);
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse response;
  grpc::Status status = lease_->LeaseGrant(&context, request, &response);
  if (!status.ok()) return FromEtcdStatus(status, "LeaseGrant");
  if (!response.error().empty()) {
    return absl::UnavailableError(
        absl::StrCat("etcd LeaseGrant: ", response.error()));
  }
  return response;
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease_id) {
  grpc::ClientContext context;
  SetDeadline(context, call_timeout_);
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseRevokeResponse response;
  return FromEtcdStatus(lease_->LeaseRevoke(&context, request, &response),
                        "LeaseRevoke");
}

}  // namespace leasekeeper::storage
