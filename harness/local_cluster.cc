#include "harness/local_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/etcd_client.h"
#include "harness/channel.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr char kEtcdPath[] = "/usr/bin/etcd";

// Why a harness step failed, for the caller's log (the caller decides what
// the failure means: a test asserts on the result, a benchmark gives up).
void Complain(const std::string& what) {
  std::fprintf(stderr, "local cluster: %s\n", what.c_str());
}

// True once 127.0.0.1:port accepts a TCP connection (before `deadline`).
bool WaitForPort(int port, steady_clock::time_point deadline) {
  while (steady_clock::now() < deadline) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool open = connect(fd, reinterpret_cast<sockaddr*>(&address),
                              sizeof(address)) == 0;
    close(fd);
    if (open) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

}  // namespace

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

TempDir::TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp",
                                     "/leasekeeper-cluster-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    Complain(absl::StrCat("mkdtemp ", pattern));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

// ---------------------------------------------------------------------------
// etcd

std::unique_ptr<EtcdCluster> EtcdCluster::Start(const std::string& dir,
                                                int size, EtcdServerTls tls) {
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster());
  cluster->dir_ = dir;
  cluster->tls_ = std::move(tls);
  std::vector<std::string> peers;
  for (int i = 0; i < size; ++i) {
    Member member;
    member.name = absl::StrCat("etcd", i);
    member.client_port = FreeLoopbackPort();
    member.peer_port = FreeLoopbackPort();
    member.data_dir = absl::StrCat(dir, "/", member.name);
    peers.push_back(absl::StrCat(member.name, "=http://127.0.0.1:",
                                 member.peer_port));
    cluster->members_.push_back(std::move(member));
  }
  cluster->initial_cluster_ = absl::StrJoin(peers, ",");
  for (Member& member : cluster->members_) {
    if (!cluster->Launch(member, /*existing=*/false)) return nullptr;
  }
  if (!cluster->WaitWritable(milliseconds(20'000))) {
    Complain("etcd did not become writable");
    return nullptr;
  }
  return cluster;
}

EtcdCluster::~EtcdCluster() = default;  // members SIGKILLed by ChildProcess

bool EtcdCluster::Launch(Member& member, bool existing) {
  const bool tls = !tls_.cert_file.empty();
  const std::string client = absl::StrCat(tls ? "https" : "http",
                                          "://127.0.0.1:", member.client_port);
  const std::string peer = absl::StrCat("http://127.0.0.1:", member.peer_port);
  std::vector<std::string> args = {
      "--name", member.name, "--data-dir", member.data_dir,
      "--listen-client-urls", client, "--advertise-client-urls", client,
      "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
      "--initial-cluster", initial_cluster_, "--initial-cluster-state",
      existing ? "existing" : "new", "--initial-cluster-token",
      "leasekeeper-test", "--heartbeat-interval", "50",
      "--election-timeout", "500", "--logger", "zap", "--log-level",
      "error"};
  if (tls) {
    args.insert(args.end(), {"--cert-file", tls_.cert_file, "--key-file",
                             tls_.key_file});
  }
  member.process = std::make_unique<ChildProcess>(kEtcdPath, args);
  if (!member.process->running()) {
    Complain(absl::StrCat("cannot start ", kEtcdPath));
    return false;
  }
  return true;
}

std::vector<std::string> EtcdCluster::endpoint_list() const {
  std::vector<std::string> out;
  for (const Member& member : members_) {
    out.push_back(absl::StrCat("127.0.0.1:", member.client_port));
  }
  return out;
}

std::string EtcdCluster::endpoints() const {
  return absl::StrJoin(endpoint_list(), ",");
}

bool EtcdCluster::running(int member) const {
  return members_[member].process != nullptr &&
         members_[member].process->running();
}

void EtcdCluster::Kill(int member) {
  members_[member].process->Signal(SIGKILL);
  members_[member].process->WaitExit(milliseconds(5000));
}

void EtcdCluster::Pause(int member) {
  members_[member].process->Signal(SIGSTOP);
}

void EtcdCluster::Resume(int member) {
  members_[member].process->Signal(SIGCONT);
}

bool EtcdCluster::Restart(int member) {
  return Launch(members_[member], /*existing=*/true);
}

bool EtcdCluster::WaitWritable(milliseconds timeout) const {
  const auto deadline = steady_clock::now() + timeout;
  for (int i = 0; i < size(); ++i) {
    if (!running(i)) continue;
    // A gRPC channel that first finds the port closed backs off for
    // seconds; connect only once the member listens.
    if (!WaitForPort(members_[i].client_port, deadline)) {
      Complain(absl::StrCat("etcd member ", i, " does not listen"));
      return false;
    }
    storage::EtcdClientOptions options;
    options.endpoints = {absl::StrCat("127.0.0.1:", members_[i].client_port)};
    options.ca_file = tls_.ca_file;
    absl::StatusOr<std::unique_ptr<storage::EtcdClient>> client =
        storage::EtcdClient::Connect(options);
    if (!client.ok()) return false;
    while (true) {
      etcdserverpb::PutRequest put;
      put.set_key("/leasekeeper-test/ready");
      put.set_value("1");
      absl::StatusOr<etcdserverpb::PutResponse> done = (*client)->Put(put);
      if (done.ok()) break;
      if (steady_clock::now() >= deadline) {
        Complain(absl::StrCat("etcd member ", i, ": ",
                              done.status().ToString()));
        return false;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// leasekeeperd

std::unique_ptr<LeasekeeperCluster> LeasekeeperCluster::Start(
    const std::string& dir, const std::string& etcd_endpoints, int nodes,
    std::vector<std::string> extra_args, std::string name,
    std::shared_ptr<grpc::ChannelCredentials> credentials) {
  std::unique_ptr<LeasekeeperCluster> cluster(new LeasekeeperCluster());
  cluster->name_ = std::move(name);
  cluster->etcd_endpoints_ = etcd_endpoints;
  cluster->extra_args_ = std::move(extra_args);
  cluster->credentials_ = std::move(credentials);
  for (int i = 0; i < nodes; ++i) {
    Node node;
    node.id = absl::StrCat("node", i);
    node.address = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
    node.data_dir = absl::StrCat(dir, "/", node.id);
    cluster->nodes_.push_back(std::move(node));
  }
  for (Node& node : cluster->nodes_) {
    if (!cluster->Launch(node)) return nullptr;
  }
  return cluster;
}

bool LeasekeeperCluster::Launch(Node& node) {
  std::vector<std::string> args = {
      "--listen=" + node.address,       "--advertise=" + node.address,
      "--cluster=" + name_,             "--etcd-endpoints=" + etcd_endpoints_,
      "--node-id=" + node.id,           "--data-dir=" + node.data_dir,
      "--log-level=warn"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  node.process = std::make_unique<ChildProcess>(LEASEKEEPERD_PATH, args);
  if (!node.process->running()) {
    Complain(absl::StrCat("cannot start leasekeeperd ", node.id));
    return false;
  }
  // It prints its address once it serves (as a follower at first).
  std::optional<std::string> line = node.process->ReadLine(milliseconds(20'000));
  if (!line.has_value() || line->find("listening on") == std::string::npos) {
    Complain(absl::StrCat("leasekeeperd ", node.id, " did not start"));
    return false;
  }
  return true;
}

bool LeasekeeperCluster::running(int node) const {
  return nodes_[node].process != nullptr && nodes_[node].process->running();
}

void LeasekeeperCluster::Kill(int node) {
  nodes_[node].process->Signal(SIGKILL);
  nodes_[node].process->WaitExit(milliseconds(5000));
}

void LeasekeeperCluster::Pause(int node) {
  nodes_[node].process->Signal(SIGSTOP);
}

void LeasekeeperCluster::Resume(int node) {
  nodes_[node].process->Signal(SIGCONT);
}

bool LeasekeeperCluster::Restart(int node, bool wipe) {
  if (running(node)) Kill(node);
  if (wipe) {
    std::error_code ignored;
    std::filesystem::remove_all(nodes_[node].data_dir, ignored);
  }
  return Launch(nodes_[node]);
}

std::optional<v1::ClusterStatusResponse> LeasekeeperCluster::Status(
    int node) const {
  if (!running(node)) return std::nullopt;
  auto stub =
      v1::LockService::NewStub(NewChannel(nodes_[node].address, credentials_));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(1000));
  v1::ClusterStatusResponse response;
  if (!stub->ClusterStatus(&context, v1::ClusterStatusRequest(), &response)
           .ok()) {
    return std::nullopt;
  }
  return response;
}

int LeasekeeperCluster::WaitForLeader(milliseconds timeout,
                                      int not_node) const {
  const auto deadline = steady_clock::now() + timeout;
  while (steady_clock::now() < deadline) {
    for (int i = 0; i < size(); ++i) {
      if (i == not_node) continue;
      std::optional<v1::ClusterStatusResponse> status = Status(i);
      if (status.has_value() && status->role() == v1::LEADER) return i;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return -1;
}

int LeasekeeperCluster::IndexOf(const std::string& address) const {
  for (int i = 0; i < size(); ++i) {
    if (nodes_[i].address == address) return i;
  }
  return -1;
}

std::string LeaderMetadata(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find("leasekeeper-leader");
  if (it == trailers.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace leasekeeper::testing
