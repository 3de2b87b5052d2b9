// leasekeeper-ctl's command line: the grammar, its parser and the usage
// text. Parsing is pure (the environment comes in as a parameter), so the
// tests check every rule without running the binary.
//
//   leasekeeper-ctl [GLOBAL FLAGS] COMMAND ARGS [FLAGS] [-- CMD ARGS...]
//
// Flags may come before or after the command and its positional arguments,
// as --name VALUE or --name=VALUE; everything after `--` belongs to `run`'s
// command. A flag a command does not take, a missing or extra argument, a
// bad duration or token is a usage error (exit code 2).
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_CTL_ARGUMENTS_H_
#define LEASEKEEPER_CLIENT_CTL_ARGUMENTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/types.h"

namespace leasekeeper::ctl {

// Exit codes (also in the usage text).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
// The lock is busy: `acquire` was not granted (no --wait, or the wait ran
// out), or `run --try` / `run --wait` could not get it.
inline constexpr int kExitBusy = 75;  // EX_TEMPFAIL

// Where the server is when neither --server nor LEASEKEEPER_SERVER says.
inline constexpr char kDefaultServer[] = "127.0.0.1:7233";

enum class Command {
  kHelp,
  kAcquire,
  kRenew,
  kRelease,
  kWrite,
  kRead,
  kInspect,
  kStatus,
  kLocks,
  kRun,
};

enum class OutputFormat { kTable, kJson };

struct Invocation {
  Command command = Command::kHelp;

  // Global flags.
  std::string server;  // --server, else LEASEKEEPER_SERVER, else default
  OutputFormat output = OutputFormat::kTable;  // -o / --output table|json
  absl::Duration timeout = absl::Seconds(10);  // --timeout: per call
  bool tls = false;                            // --tls
  std::string tls_ca_file;                     // --ca FILE (implies --tls)
  std::string tls_cert_file;                   // --cert FILE
  std::string tls_key_file;                    // --key FILE
  std::string tls_server_name;                 // --tls-server-name NAME

  // Positional arguments.
  std::string lock;
  std::string key;
  std::string value;
  std::string client_id;  // status CLIENT, or --client

  // Command flags.
  std::optional<absl::Duration> ttl;              // --ttl
  bool shared = false;                            // --shared
  std::optional<absl::Duration> wait;             // --wait
  bool try_only = false;                          // --try
  client::FencingToken token = 0;                 // --token
  std::string prefix;                             // --prefix
  std::string label;                              // --label
  absl::Duration kill_grace = absl::Seconds(10);  // --kill-grace
  std::vector<std::string> command_line;          // run: after --
};

// Parses the arguments after the program name. `server_from_environment` is
// the value of LEASEKEEPER_SERVER, if set.
// Outcomes: the invocation (kHelp for -h/--help/help or no arguments);
// INVALID_ARGUMENT with a one-line description of the problem.
absl::StatusOr<Invocation> ParseArguments(
    const std::vector<std::string>& args,
    const std::optional<std::string>& server_from_environment);

// The full usage text, ending with a newline.
const char* Usage();

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_ARGUMENTS_H_
