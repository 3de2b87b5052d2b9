// A job built outside the leasekeeper tree against an installed copy
// (tests/install/test_install.py builds it with CMake's find_package and
// with pkg-config): takes LOCK at SERVER, prints "acquired LOCK token N",
// releases it and prints "released LOCK".
// Exit codes: 0 done; 1 a call failed (the status on stderr); 2 usage.
#include <iostream>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/errors.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: lock_once SERVER LOCK\n";
    return 2;
  }
  namespace lk = leasekeeper::client;
  absl::StatusOr<std::unique_ptr<lk::Client>> client =
      lk::Client::Connect(argv[1]);
  if (!client.ok()) {
    std::cerr << "connect: " << client.status() << "\n";
    return 1;
  }
  absl::StatusOr<lk::Lease> lease =
      (*client)->Acquire(argv[2], absl::Seconds(30), absl::Seconds(10));
  if (!lease.ok()) {
    std::cerr << "acquire: " << lease.status();
    if (std::optional<lk::ErrorReason> reason =
            lk::ErrorReasonOf(lease.status())) {
      std::cerr << " (" << lk::ErrorReasonName(*reason) << ")";
    }
    std::cerr << "\n";
    return 1;
  }
  std::cout << "acquired " << argv[2] << " token " << lease->token()
            << std::endl;
  if (absl::Status released = lease->Release(); !released.ok()) {
    std::cerr << "release: " << released << "\n";
    return 1;
  }
  std::cout << "released " << argv[2] << std::endl;
  return 0;
}
