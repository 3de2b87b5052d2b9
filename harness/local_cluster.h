// A local cluster for tests and benchmarks: a real etcd cluster and real
// leasekeeperd nodes, each a child process on free 127.0.0.1 ports, with
// their data dirs in one temporary directory removed at the end. Everything
// is stopped by PID (harness/child_process.h). A step that fails says why on
// stderr and returns null or false; the caller decides what that means.
//
// etcd runs with --heartbeat-interval 50 --election-timeout 500, so the
// 1 s leases of leasekeeper's election are kept as asked (etcd raises a TTL
// below 1.5 x its election timeout) and an etcd leader change takes about
// half a second.
//
// Thread-safety: a harness belongs to the test's thread.
#ifndef LEASEKEEPER_HARNESS_LOCAL_CLUSTER_H_
#define LEASEKEEPER_HARNESS_LOCAL_CLUSTER_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "harness/child_process.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace leasekeeper::testing {

// A port that was free on 127.0.0.1 a moment ago (bound to 0, closed).
int FreeLoopbackPort();

// A directory under $TEST_TMPDIR (or /tmp), removed with this object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// TLS for etcd's clients (PEM files); empty: plaintext.
struct EtcdServerTls {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;  // the CA that signed cert_file, for the harness
};

class EtcdCluster {
 public:
  // Starts `size` members under `dir` and waits (up to 20 s) until the
  // cluster takes a write. Null if it does not. With `tls`, each member
  // serves its clients over TLS (https://) with that certificate.
  static std::unique_ptr<EtcdCluster> Start(const std::string& dir,
                                            int size = 3,
                                            EtcdServerTls tls = {});
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  // "127.0.0.1:a,127.0.0.1:b,...", for --etcd-endpoints.
  std::string endpoints() const;
  std::vector<std::string> endpoint_list() const;

  void Kill(int member);  // SIGKILL
  void Pause(int member);   // SIGSTOP
  void Resume(int member);  // SIGCONT
  // Starts a killed member again on its data dir and ports.
  bool Restart(int member);
  bool running(int member) const;

  // True once a write through every running member's endpoint succeeds
  // within `timeout`.
  bool WaitWritable(std::chrono::milliseconds timeout) const;

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    std::string data_dir;
    std::unique_ptr<ChildProcess> process;
  };
  EtcdCluster() = default;
  bool Launch(Member& member, bool existing);

  std::string dir_;
  std::string initial_cluster_;
  EtcdServerTls tls_;
  std::vector<Member> members_;
};

class LeasekeeperCluster {
 public:
  // Starts `nodes` leasekeeperd nodes of cluster `name` against `etcd`
  // (its endpoints), each with its own data dir under `dir`, listening and
  // advertising 127.0.0.1:<free port>, with `extra_args`. The harness's
  // own calls (Status, WaitForLeader) use `credentials` (null: plaintext),
  // which must match the nodes' TLS flags in `extra_args`. Null if one
  // does not start.
  static std::unique_ptr<LeasekeeperCluster> Start(
      const std::string& dir, const std::string& etcd_endpoints, int nodes = 3,
      std::vector<std::string> extra_args = {}, std::string name = "test",
      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);
  LeasekeeperCluster(const LeasekeeperCluster&) = delete;
  LeasekeeperCluster& operator=(const LeasekeeperCluster&) = delete;

  int size() const { return static_cast<int>(nodes_.size()); }
  const std::string& address(int node) const { return nodes_[node].address; }
  const std::string& data_dir(int node) const { return nodes_[node].data_dir; }
  const std::string& node_id(int node) const { return nodes_[node].id; }
  ChildProcess* process(int node) { return nodes_[node].process.get(); }
  bool running(int node) const;

  void Kill(int node);    // SIGKILL
  void Pause(int node);   // SIGSTOP
  void Resume(int node);  // SIGCONT
  // Starts a node that is not running again on its address; `wipe`: with
  // an empty data dir.
  bool Restart(int node, bool wipe = false);

  // The node's ClusterStatus, or nullopt if it does not answer within 1 s.
  std::optional<v1::ClusterStatusResponse> Status(int node) const;
  // The node that reports itself LEADER (and that every other answering
  // node names), waiting up to `timeout`; -1 if none. `not_node`: a node
  // that must not be it (-1: any).
  int WaitForLeader(std::chrono::milliseconds timeout, int not_node = -1) const;
  // The index of the node advertising `address`, or -1.
  int IndexOf(const std::string& address) const;

 private:
  struct Node {
    std::string id;
    std::string address;
    std::string data_dir;
    std::unique_ptr<ChildProcess> process;
  };
  LeasekeeperCluster() = default;
  bool Launch(Node& node);

  std::string name_;
  std::string etcd_endpoints_;
  std::vector<std::string> extra_args_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::vector<Node> nodes_;
};

// The leasekeeper-leader trailing metadata of a finished call ("" if none).
std::string LeaderMetadata(const grpc::ClientContext& context);

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_HARNESS_LOCAL_CLUSTER_H_
