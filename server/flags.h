// Command-line flags of leasekeeperd.
//
// One table (flags.cc) defines every flag once: its group, name, value,
// description and where it goes in DaemonOptions; both the parser and the
// --help text are made from it, and --help prints each flag's default as
// read from a default DaemonOptions, so help and behaviour cannot disagree.
//
// Syntax: --name=value or --name value; dashes or underscores in names; a
// boolean flag alone means true. Durations are Go-style: "2s", "500ms",
// "1m30s", "0", never negative and a whole number of milliseconds.
// Addresses are host:port with a port in [0, 65535] (0: a free port),
// checked as client/host_port.h says.
//
// Why a parser of our own rather than Abseil flags: Abseil flag names are C
// identifiers, so every documented flag (--data-dir, --log-level, ...) would
// change its spelling; Abseil 20220623 (Debian 12) exits the process on a
// bad value instead of returning a status; and its --help groups flags by
// the source file that defines them. See the commit that made this table.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_SERVER_FLAGS_H_
#define LEASEKEEPER_SERVER_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/server_config.h"

namespace leasekeeper::server {

struct DaemonOptions {
  ServerConfig config;
  std::string log_level = "info";
  bool help = false;
};

// Outcomes: the options; INVALID_ARGUMENT naming the flag for an unknown
// flag, a missing or malformed value, a value out of range, or flags that
// need each other (--tls-cert/--tls-key, --client-ca, --policy,
// --max-request-bytes below --max-value-bytes + 64 KiB).
absl::StatusOr<DaemonOptions> ParseDaemonFlags(int argc,
                                               const char* const* argv);

// The --help text: every flag under its group, with its default.
std::string DaemonUsage();

// OK if `address` is host:port with a port in [0, 65535]; otherwise
// INVALID_ARGUMENT with the reason (client/host_port.h: the clients check
// their server addresses by the same rules).
absl::Status CheckListenAddress(absl::string_view address);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_FLAGS_H_
