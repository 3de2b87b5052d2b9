// fault_worker: one client process of the fault-injection suite. It does
// fenced read-modify-write cycles under exclusive locks through the client
// library and records every step in a history file (JSON lines), for
// tests/fault/checker.py:
//
//   acquire(lock) -> token;  read(lock, key) -> n;  write(lock, key, n + 1)
//   with the lease (holder-checked, fenced by the token);  release.
//
// Each step is one "invoke" line before the call and one completion line
// after it: "ok" (the server's yes, with what it said), "fail" (the
// server's definite no: nothing happened) or "info" (unknown: the call may
// or may not have taken effect, e.g. UNAVAILABLE after it was sent). Times
// are CLOCK_MONOTONIC nanoseconds, which every process on the machine
// shares, so the checker can order steps of different processes in real
// time. A process killed in the middle of a step leaves an invoke without a
// completion, which the checker reads as "info".
//
//   fault_worker --servers=A[,B...] --process=NAME --locks=L1,L2
//                --key=counter --duration=20s --ttl=2s --history=FILE
//
// Exit status: 0 after the duration; 2 for bad arguments or an unwritable
// history. Failed calls are recorded, never fatal.
#include <time.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/errors.h"
#include "nlohmann/json.hpp"

namespace {

using ::leasekeeper::client::Client;
using ::leasekeeper::client::ClientOptions;
using ::leasekeeper::client::Lease;
using Json = nlohmann::json;

int64_t MonotonicNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

struct Flags {
  std::string servers;
  std::string process;
  std::vector<std::string> locks;
  std::string key = "counter";
  absl::Duration duration = absl::Seconds(20);
  absl::Duration ttl = absl::Seconds(2);
  std::string history;
};

std::optional<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    if (!absl::StartsWith(arg, "--") || eq == absl::string_view::npos) {
      std::cerr << "fault_worker: expected --name=value, got " << arg << "\n";
      return std::nullopt;
    }
    const absl::string_view name = arg.substr(2, eq - 2);
    const std::string value(arg.substr(eq + 1));
    bool ok = true;
    if (name == "servers") {
      flags.servers = value;
    } else if (name == "process") {
      flags.process = value;
    } else if (name == "locks") {
      flags.locks = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (name == "key") {
      flags.key = value;
    } else if (name == "duration") {
      ok = absl::ParseDuration(value, &flags.duration);
    } else if (name == "ttl") {
      ok = absl::ParseDuration(value, &flags.ttl);
    } else if (name == "history") {
      flags.history = value;
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "fault_worker: bad flag " << arg << "\n";
      return std::nullopt;
    }
  }
  if (flags.servers.empty() || flags.process.empty() || flags.locks.empty() ||
      flags.history.empty()) {
    std::cerr << "fault_worker: --servers, --process, --locks and --history "
                 "are required\n";
    return std::nullopt;
  }
  return flags;
}

// Appends history lines; each is flushed at once, so a SIGKILL loses at
// most the line being written.
class History {
 public:
  History(std::string process, std::ofstream out)
      : process_(std::move(process)), out_(std::move(out)) {}

  void Record(const std::string& op, const std::string& type,
              const std::string& lock, Json fields = Json::object()) {
    fields["process"] = process_;
    fields["op"] = op;
    fields["type"] = type;
    fields["lock"] = lock;
    fields["time"] = MonotonicNanos();
    out_ << fields.dump() << "\n";
    out_.flush();
  }

  // The completion of a call that failed with `status`: "fail" when the
  // server definitely did nothing, "info" when it may have.
  void RecordFailure(const std::string& op, const std::string& lock,
                     const absl::Status& status, Json fields = Json::object()) {
    fields["error"] = std::string(absl::StatusCodeToString(status.code()));
    const auto reason = leasekeeper::client::ErrorReasonOf(status);
    if (reason.has_value()) {
      fields["reason"] = std::string(leasekeeper::client::ErrorReasonName(*reason));
    }
    fields["message"] = std::string(status.message());
    Record(op, Definite(status) ? "fail" : "info", lock, std::move(fields));
  }

 private:
  // The server's refusals change nothing; so does a call refused before it
  // was sent (FAILED_PRECONDITION from the library for an ended lease).
  static bool Definite(const absl::Status& status) {
    switch (status.code()) {
      case absl::StatusCode::kFailedPrecondition:
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kAborted:
      case absl::StatusCode::kResourceExhausted:
      case absl::StatusCode::kPermissionDenied:
        return true;
      default:
        // NOT_LEADER refused too, but the library follows it; what comes
        // back as UNAVAILABLE may have been sent somewhere and applied.
        return false;
    }
  }

  const std::string process_;
  std::ofstream out_;
};

void Cycle(Client& client, History& history, const Flags& flags,
           const std::string& lock) {
  history.Record("acquire", "invoke", lock);
  absl::StatusOr<Lease> lease =
      client.Acquire(lock, flags.ttl, /*wait=*/flags.ttl * 3);
  if (!lease.ok()) {
    history.RecordFailure("acquire", lock, lease.status());
    return;
  }
  const uint64_t token = lease->token();
  history.Record("acquire", "ok", lock, Json{{"token", token}});

  history.Record("read", "invoke", lock, Json{{"token", token}});
  absl::StatusOr<std::optional<std::string>> read =
      client.Read(lock, flags.key);
  int64_t value = 0;
  if (!read.ok()) {
    history.RecordFailure("read", lock, read.status(), Json{{"token", token}});
  } else if (read->has_value() && !absl::SimpleAtoi(**read, &value)) {
    history.Record("read", "info", lock,
                   Json{{"token", token}, {"message", "not a number"}});
  } else {
    history.Record("read", "ok", lock, Json{{"token", token}, {"value", value}});
    const int64_t next = value + 1;
    history.Record("write", "invoke", lock,
                   Json{{"token", token}, {"value", next}});
    absl::Status written = client.Write(*lease, flags.key, absl::StrCat(next));
    if (written.ok()) {
      history.Record("write", "ok", lock,
                     Json{{"token", token}, {"value", next}});
    } else {
      history.RecordFailure("write", lock, written,
                            Json{{"token", token}, {"value", next}});
    }
  }

  history.Record("release", "invoke", lock, Json{{"token", token}});
  absl::Status released = lease->Release();
  if (released.ok()) {
    history.Record("release", "ok", lock, Json{{"token", token}});
  } else {
    history.RecordFailure("release", lock, released, Json{{"token", token}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Flags> flags = ParseFlags(argc, argv);
  if (!flags.has_value()) return 2;
  std::ofstream out(flags->history, std::ios::app);
  if (!out) {
    std::cerr << "fault_worker: cannot write " << flags->history << "\n";
    return 2;
  }
  History history(flags->process, std::move(out));
  ClientOptions options;
  options.client_id = flags->process;
  options.call_timeout = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(flags->servers, {}, options);
  if (!client.ok()) {
    std::cerr << "fault_worker: " << client.status() << "\n";
    return 2;
  }
  absl::BitGen random;
  const int64_t end = MonotonicNanos() + absl::ToInt64Nanoseconds(flags->duration);
  while (MonotonicNanos() < end) {
    const std::string& lock =
        flags->locks[absl::Uniform<size_t>(random, 0, flags->locks.size())];
    Cycle(**client, history, *flags, lock);
    absl::SleepFor(absl::Milliseconds(absl::Uniform(random, 0, 20)));
  }
  return 0;
}
