// A process that contends for a lock with RunAsLeader and leads until it is
// killed, for the crash-failover tests.
//
//   client_leader_helper SERVER LOCK TTL_MS CLIENT_ID
//
// Prints "LEADING <token>" when a term starts and "TERM_ENDED <reason>" when
// one ends, one line each, flushed.
#include <cstdio>
#include <cstdlib>
#include <stop_token>
#include <string>

#include "absl/strings/numbers.h"
#include "client/client.h"
#include "client/leader_election.h"

int main(int argc, char** argv) {
  using namespace leasekeeper::client;
  int64_t ttl_ms = 0;
  if (argc != 5 || !absl::SimpleAtoi(argv[3], &ttl_ms)) {
    std::fprintf(stderr, "usage: %s SERVER LOCK TTL_MS CLIENT_ID\n", argv[0]);
    return 2;
  }
  ClientOptions options;
  options.client_id = argv[4];
  options.holder_label = "leader_helper";
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(argv[1], {}, options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(client.status().message()).c_str());
    return 1;
  }
  LeaderOptions leader;
  leader.on_term_start = [](const Lease& lease) {
    std::printf("LEADING %llu\n",
                static_cast<unsigned long long>(lease.token()));
    std::fflush(stdout);
  };
  leader.on_term_end = [](const Lease&, TermEnd end) {
    std::printf("TERM_ENDED %s\n", std::string(TermEndName(end)).c_str());
    std::fflush(stdout);
  };
  std::stop_source never;
  absl::Status status = RunAsLeader(
      **client, argv[2], absl::Milliseconds(ttl_ms),
      [](Lease&, std::stop_token term) {
        while (!term.stop_requested()) absl::SleepFor(absl::Milliseconds(10));
        return absl::OkStatus();
      },
      never.get_token(), leader);
  std::fprintf(stderr, "RunAsLeader returned %s\n", status.ToString().c_str());
  return status.ok() ? 0 : 1;
}
