// leasekeeper-ctl's command line: one CLI11 subcommand per command, each
// with its own usage, flags and help, and the global flags that every
// command takes:
//
//   leasekeeper-ctl [GLOBAL FLAGS] COMMAND ARGS [FLAGS] [-- CMD ARGS...]
//
// Thread-safety: ParseArguments reads the environment (getenv) and is
// otherwise pure; do not call it while another thread changes the
// environment.
#ifndef LEASEKEEPER_CLIENT_CTL_ARGUMENTS_H_
#define LEASEKEEPER_CLIENT_CTL_ARGUMENTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/types.h"

namespace leasekeeper::ctl {

// Exit codes (also in the help text).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
// The lock is busy: `acquire` was not granted (no --wait, or the wait ran
// out), or `run --try` / `run --wait` could not get it.
inline constexpr int kExitBusy = 75;  // EX_TEMPFAIL

// Where the server is when neither --server nor LEASEKEEPER_SERVER says.
inline constexpr char kDefaultServer[] = "127.0.0.1:7233";

enum class Command {
  kAcquire,
  kRenew,
  kRelease,
  kWrite,
  kRead,
  kDelete,
  kKeys,
  kInspect,
  kStatus,
  kLocks,
  kRun,
  kForceRelease,
  kVersion,
  kHealth,
  kClusterStatus,  // cluster status
  kWatch,
  kPartitionOf,  // partition-of KEY: asks no server
};

enum class OutputFormat { kTable, kJson };

struct Invocation {
  Command command = Command::kInspect;

  // Global flags.
  // --server: host:port, several separated by commas (a cluster's nodes;
  // the leader is found and followed), or a name with several addresses;
  // checked by client/channel.h's ParseEndpoints while parsing.
  std::string server = kDefaultServer;
  OutputFormat output = OutputFormat::kTable;  // -o / --output table|json
  absl::Duration timeout = absl::Seconds(10);  // --timeout: per call
  bool tls = false;             // --tls, or implied by the next four
  std::string tls_ca_file;      // --ca FILE
  std::string tls_cert_file;    // --cert FILE (with --key)
  std::string tls_key_file;     // --key FILE (with --cert)
  std::string tls_server_name;  // --tls-server-name NAME

  // Positional arguments.
  std::string lock;
  std::string key;
  std::string value;
  std::string client_id;  // status CLIENT, or --client

  // Command flags.
  std::optional<absl::Duration> ttl;              // --ttl (run: 30s)
  bool shared = false;                            // --shared
  uint32_t semaphore = 0;  // --semaphore N: a permit of N (0: not one)
  std::optional<absl::Duration> wait;             // --wait
  bool try_only = false;                          // --try
  client::FencingToken token = 0;                 // --token
  std::string prefix;                             // --prefix
  std::string after;  // keys --after: list the keys after this one
  int32_t limit = 0;  // keys --limit: at most this many (0: the server's 100)
  bool watch_prefix = false;                      // watch --prefix given
  int64_t count = 0;  // watch --count: stop after N events (0: never)
  std::string label;                              // --label
  std::string holder;                             // force-release --holder
  std::string reason;                             // force-release --reason
  std::string service;                            // health --service
  uint32_t partitions = 0;      // partition-of --count N
  bool consistent = false;      // partition-of --consistent
  absl::Duration kill_grace = absl::Seconds(10);  // --kill-grace
  std::vector<std::string> command_line;          // run: after --
};

// What the command line asks for.
struct ParsedArguments {
  enum class Action {
    kExecute,     // run `invocation`
    kPrintText,   // print `text` on stdout, exit 0
    kUsageError,  // print `text` on stderr, exit kExitUsage
  };
  Action action = Action::kPrintText;
  Invocation invocation;
  // kPrintText: the help, version or completion script asked for.
  // kUsageError: the problem, named after the command, and where to read
  // that command's usage, as output.h's FormatUsageError puts it in the
  // output format the arguments ask for (-o json: one JSON object).
  std::string text;
};

// Parses the arguments after the program name. Rules (the tests check
// each):
//  1. Global flags may come before or after the command; a command's own
//     flags come after it. Flags take --name VALUE or --name=VALUE.
//  2. Every global flag, and --client, falls back to an environment
//     variable when not given (LEASEKEEPER_SERVER, LEASEKEEPER_OUTPUT,
//     LEASEKEEPER_TIMEOUT, LEASEKEEPER_TLS, LEASEKEEPER_CA, LEASEKEEPER_CERT,
//     LEASEKEEPER_KEY, LEASEKEEPER_TLS_SERVER_NAME, LEASEKEEPER_CLIENT); an
//     empty variable counts as unset. A flag on the command line wins.
//  3. Durations take absl::ParseDuration's syntax (duration_flag.h).
//  4. `COMMAND --help` (or `help COMMAND`) prints that command's usage and
//     flags; `--help` or no arguments at all print the overview;
//     `--version` this binary's version; `completion bash|zsh` the shell
//     completion script (completion.h): kPrintText. -h/--help is obeyed
//     even when something else is wrong (a bad LEASEKEEPER_* variable).
//  5. A flag a command does not take, a missing or extra argument, a bad
//     duration, token, format or --server address (client/channel.h's
//     ParseEndpoints) is a usage error (kUsageError; exit code 2).
//  6. For `run`, everything after `--` is the command to run.
//  7. `watch` takes exactly one of LOCK and --prefix P.
ParsedArguments ParseArguments(const std::vector<std::string>& args);

// The overview help (what `leasekeeper-ctl --help` prints).
std::string OverviewHelp();

// "leasekeeper-ctl VERSION (commit C, gRPC G)": what `--version` prints,
// without the newline.
std::string VersionLine();

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_ARGUMENTS_H_
