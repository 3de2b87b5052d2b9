#include "client/ctl/arguments.h"

#include <algorithm>
#include <initializer_list>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/ctl/duration_flag.h"

namespace leasekeeper::ctl {
namespace {

struct FlagSpec {
  absl::string_view name;
  bool takes_value;
  // Commands that take it; empty: every command (a global flag).
  std::initializer_list<Command> commands;
};

constexpr Command kAcquire = Command::kAcquire;
constexpr Command kRenew = Command::kRenew;
constexpr Command kRelease = Command::kRelease;
constexpr Command kWrite = Command::kWrite;
constexpr Command kLocks = Command::kLocks;
constexpr Command kRun = Command::kRun;

const FlagSpec kFlags[] = {
    {"server", true, {}},
    {"output", true, {}},
    {"timeout", true, {}},
    {"tls", false, {}},
    {"ca", true, {}},
    {"cert", true, {}},
    {"key", true, {}},
    {"tls-server-name", true, {}},
    {"help", false, {}},
    {"client", true, {kAcquire, kRenew, kRelease, kRun, kWrite}},
    {"ttl", true, {kAcquire, kRenew, kRun}},
    {"shared", false, {kAcquire, kRun}},
    {"wait", true, {kAcquire, kRun}},
    {"try", false, {kRun}},
    {"token", true, {kWrite}},
    {"prefix", true, {kLocks}},
    {"label", true, {kAcquire, kRun}},
    {"kill-grace", true, {kRun}},
};

const FlagSpec* FindFlag(absl::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

struct CommandSpec {
  absl::string_view name;
  Command command;
  size_t positionals;  // exact count
  absl::string_view synopsis;
};

const CommandSpec kCommands[] = {
    {"acquire", Command::kAcquire, 1,
     "acquire LOCK --client ID --ttl DUR [--shared] [--wait DUR]"},
    {"renew", Command::kRenew, 1, "renew LOCK --client ID --ttl DUR"},
    {"release", Command::kRelease, 1, "release LOCK --client ID"},
    {"write", Command::kWrite, 3, "write LOCK KEY VALUE --token N"},
    {"read", Command::kRead, 2, "read LOCK KEY"},
    {"inspect", Command::kInspect, 1, "inspect LOCK"},
    {"status", Command::kStatus, 1, "status CLIENT"},
    {"locks", Command::kLocks, 0, "locks [--prefix P]"},
    {"run", Command::kRun, 1,
     "run LOCK [--ttl DUR] [--shared] [--wait DUR] [--try] -- CMD [ARGS...]"},
    {"help", Command::kHelp, 0, "help"},
};

absl::Status Usage(absl::string_view problem) {
  return absl::InvalidArgumentError(problem);
}

}  // namespace

const char* Usage() {
  return R"(usage: leasekeeper-ctl [GLOBAL FLAGS] COMMAND ARGS [FLAGS]

Talks to leasekeeperd, the lock service.

Commands:
  acquire LOCK --client ID --ttl DUR [--shared] [--wait DUR] [--label TEXT]
      Takes LOCK for client ID with a lease of DUR and exits; the lease is
      not renewed (use renew). Without --wait a busy lock is not waited for
      (nothing is left queued): exit 75. With --wait, waits up to DUR.
  renew LOCK --client ID --ttl DUR
      Sets ID's lease on LOCK to last DUR from now; keeps the token.
  release LOCK --client ID
      Releases ID's lease on LOCK, or withdraws ID's wait for it.
  write LOCK KEY VALUE --token N [--client ID]
      Writes VALUE under (LOCK, KEY) in the fenced store, if ID (default
      $LEASEKEEPER_CLIENT_ID, which run sets) holds a live lease on LOCK
      with token N ("not holder" if not) and N is at least the highest
      token the store accepted for LOCK ("stale token" if not).
  read LOCK KEY
      Prints the last accepted value (exit 1 if nothing was ever written).
  inspect LOCK
      A lock's holders and queue.
  status CLIENT
      A client's age, session, leases and the lock it waits for.
  locks [--prefix P]
      Locks that have a holder or a waiter, by name.
  run LOCK [--ttl DUR] [--shared] [--wait DUR | --try] [--client ID]
           [--label TEXT] [--kill-grace DUR] -- CMD [ARGS...]
      Waits for LOCK (forever, up to --wait, or not at all with --try), runs
      CMD with LEASEKEEPER_LOCK, LEASEKEEPER_FENCING_TOKEN, LEASEKEEPER_SERVER
      and LEASEKEEPER_CLIENT_ID in its environment, renews the lease while
      CMD runs (ttl default 30s) and releases it when CMD exits; exits with
      CMD's exit status (128+N if CMD was killed by signal N). If the lease
      is lost, sends CMD's process group SIGTERM, then SIGKILL after
      --kill-grace (default 10s), and exits 1 with the reason on stderr.
      SIGINT, SIGTERM and SIGHUP are passed on to CMD. If leasekeeper-ctl
      itself dies, CMD is killed (it would run without the lock) and the
      server frees the lock after its session grace.

Global flags:
  --server ADDR        host:port of leasekeeperd (default: $LEASEKEEPER_SERVER,
                       else 127.0.0.1:7233)
  -o, --output FORMAT  table (default, for people) or json (for scripts)
  --timeout DUR        deadline of each call (default 10s)
  --tls                use TLS (system roots unless --ca)
  --ca FILE            PEM root certificates (implies --tls)
  --cert FILE, --key FILE
                       PEM client certificate and key (imply --tls)
  --tls-server-name NAME
                       expected name in the server's certificate
  -h, --help           this text

Durations: 500ms, 30s, 5m, 1h, 1m30s. Flags take --name VALUE or
--name=VALUE, before or after the arguments.

Exit codes:
  0   success
  1   error (the server refused, could not be reached, the lease was lost)
  2   usage: bad arguments (the problem is printed with this text)
  75  lock busy: acquire not granted, run --try or run --wait not granted
  N   run: the command's own exit status
)";
}

absl::StatusOr<Invocation> ParseArguments(
    const std::vector<std::string>& args,
    const std::optional<std::string>& server_from_environment) {
  std::vector<std::string> positionals;
  std::map<std::string, std::string> values;  // flag name -> value
  std::vector<std::string> after_double_dash;
  bool saw_double_dash = false;

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      saw_double_dash = true;
      after_double_dash.assign(args.begin() + static_cast<long>(i) + 1,
                               args.end());
      break;
    }
    std::string name;
    std::optional<std::string> inline_value;
    if (absl::StartsWith(arg, "--")) {
      name = arg.substr(2);
      const size_t equals = name.find('=');
      if (equals != std::string::npos) {
        inline_value = name.substr(equals + 1);
        name = name.substr(0, equals);
      }
    } else if (arg == "-o") {
      name = "output";
    } else if (arg == "-h") {
      name = "help";
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Usage(absl::StrCat("unknown flag ", arg));
    } else {
      positionals.push_back(arg);
      continue;
    }
    const FlagSpec* flag = FindFlag(name);
    if (flag == nullptr) return Usage(absl::StrCat("unknown flag --", name));
    std::string value;
    if (flag->takes_value) {
      if (inline_value.has_value()) {
        value = *inline_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Usage(absl::StrCat("--", name, " needs a value"));
      }
    } else if (inline_value.has_value()) {
      return Usage(absl::StrCat("--", name, " takes no value"));
    }
    if (values.contains(name)) {
      return Usage(absl::StrCat("--", name, " given twice"));
    }
    values[name] = value;
  }

  Invocation invocation;
  if (values.contains("help") || positionals.empty()) {
    invocation.command = Command::kHelp;
    return invocation;
  }

  const CommandSpec* command = nullptr;
  for (const CommandSpec& spec : kCommands) {
    if (spec.name == positionals[0]) command = &spec;
  }
  if (command == nullptr) {
    return Usage(absl::StrCat("unknown command \"", positionals[0], "\""));
  }
  invocation.command = command->command;
  positionals.erase(positionals.begin());
  if (command->command == Command::kHelp) return invocation;

  // `--` separates run's command; for the others it only ends the flags.
  if (command->command == Command::kRun) {
    if (!saw_double_dash || after_double_dash.empty()) {
      return Usage("run needs a command after --");
    }
    invocation.command_line = std::move(after_double_dash);
  } else {
    positionals.insert(positionals.end(), after_double_dash.begin(),
                       after_double_dash.end());
  }
  if (positionals.size() != command->positionals) {
    return Usage(absl::StrCat(
        positionals.size() < command->positionals ? "missing" : "unexpected",
        " arguments; usage: leasekeeper-ctl ", command->synopsis));
  }
  for (const std::string& positional : positionals) {
    if (positional.empty()) return Usage("arguments must not be empty");
  }

  for (const auto& [name, value] : values) {
    const FlagSpec* flag = FindFlag(name);
    const bool global = flag->commands.size() == 0;
    if (!global && std::find(flag->commands.begin(), flag->commands.end(),
                             command->command) == flag->commands.end()) {
      return Usage(absl::StrCat(command->name, " does not take --", name));
    }
  }

  switch (command->command) {
    case Command::kStatus:
      invocation.client_id = positionals[0];
      break;
    case Command::kWrite:
      invocation.value = positionals[2];
      [[fallthrough]];
    case Command::kRead:
      invocation.key = positionals[1];
      [[fallthrough]];
    default:
      if (!positionals.empty()) invocation.lock = positionals[0];
      break;
  }

  // Global flags.
  if (auto it = values.find("server"); it != values.end()) {
    if (it->second.empty()) return Usage("--server must not be empty");
    invocation.server = it->second;
  } else if (server_from_environment.has_value() &&
             !server_from_environment->empty()) {
    invocation.server = *server_from_environment;
  } else {
    invocation.server = kDefaultServer;
  }
  if (auto it = values.find("output"); it != values.end()) {
    if (it->second == "json") {
      invocation.output = OutputFormat::kJson;
    } else if (it->second == "table") {
      invocation.output = OutputFormat::kTable;
    } else {
      return Usage(absl::StrCat("--output must be table or json, not \"",
                                it->second, "\""));
    }
  }
  if (auto it = values.find("timeout"); it != values.end()) {
    absl::StatusOr<absl::Duration> timeout = ParseDurationFlag(
        "--timeout", it->second, absl::Milliseconds(1), absl::Hours(24));
    if (!timeout.ok()) return timeout.status();
    invocation.timeout = *timeout;
  }
  invocation.tls = values.contains("tls");
  if (auto it = values.find("ca"); it != values.end()) {
    invocation.tls_ca_file = it->second;
    invocation.tls = true;
  }
  if (auto it = values.find("cert"); it != values.end()) {
    invocation.tls_cert_file = it->second;
    invocation.tls = true;
  }
  if (auto it = values.find("key"); it != values.end()) {
    invocation.tls_key_file = it->second;
    invocation.tls = true;
  }
  if (invocation.tls_cert_file.empty() != invocation.tls_key_file.empty()) {
    return Usage("--cert and --key go together");
  }
  if (auto it = values.find("tls-server-name"); it != values.end()) {
    invocation.tls_server_name = it->second;
    invocation.tls = true;
  }

  // Command flags.
  if (auto it = values.find("client"); it != values.end()) {
    if (it->second.empty()) return Usage("--client must not be empty");
    invocation.client_id = it->second;
  }
  if (auto it = values.find("ttl"); it != values.end()) {
    absl::StatusOr<absl::Duration> ttl = ParseDurationFlag(
        "--ttl", it->second, client::kMinTtl, client::kMaxTtl);
    if (!ttl.ok()) return ttl.status();
    invocation.ttl = *ttl;
  }
  invocation.shared = values.contains("shared");
  if (auto it = values.find("wait"); it != values.end()) {
    absl::StatusOr<absl::Duration> wait = ParseDurationFlag(
        "--wait", it->second, absl::ZeroDuration(), client::kMaxServerWait);
    if (!wait.ok()) return wait.status();
    invocation.wait = *wait;
  }
  invocation.try_only = values.contains("try");
  if (invocation.try_only && invocation.wait.has_value()) {
    return Usage("--try and --wait exclude each other");
  }
  if (auto it = values.find("token"); it != values.end()) {
    uint64_t token = 0;
    if (!absl::SimpleAtoi(it->second, &token) || token < 1) {
      return Usage(absl::StrCat("--token must be a whole number >= 1, not \"",
                                it->second, "\""));
    }
    invocation.token = token;
  }
  if (auto it = values.find("prefix"); it != values.end()) {
    invocation.prefix = it->second;
  }
  if (auto it = values.find("label"); it != values.end()) {
    if (it->second.size() > client::kMaxHolderLabelBytes) {
      return Usage(absl::StrCat("--label is longer than ",
                                client::kMaxHolderLabelBytes, " bytes"));
    }
    invocation.label = it->second;
  }
  if (auto it = values.find("kill-grace"); it != values.end()) {
    absl::StatusOr<absl::Duration> grace = ParseDurationFlag(
        "--kill-grace", it->second, absl::ZeroDuration(), absl::Hours(1));
    if (!grace.ok()) return grace.status();
    invocation.kill_grace = *grace;
  }

  // Required flags.
  switch (command->command) {
    case Command::kAcquire:
    case Command::kRenew:
      if (!invocation.ttl.has_value()) {
        return Usage(absl::StrCat(command->name, " needs --ttl"));
      }
      [[fallthrough]];
    case Command::kRelease:
      if (invocation.client_id.empty()) {
        return Usage(absl::StrCat(command->name, " needs --client"));
      }
      break;
    case Command::kWrite:
      if (invocation.token == 0) return Usage("write needs --token");
      break;
    case Command::kRun:
      if (!invocation.ttl.has_value()) invocation.ttl = absl::Seconds(30);
      break;
    default:
      break;
  }
  return invocation;
}

}  // namespace leasekeeper::ctl
