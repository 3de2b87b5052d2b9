#include "client/ctl/arguments.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/channel.h"
#include "client/ctl/completion.h"
#include "client/ctl/duration_flag.h"
#include "client/ctl/output.h"
#include "client/partition.h"
#include "grpcpp/grpcpp.h"
#include "version/version.h"

namespace leasekeeper::ctl {
namespace {

constexpr char kProgram[] = "leasekeeper-ctl";
constexpr char kGlobalGroup[] = "Global flags";

constexpr char kOverviewFooter[] =
    R"(Global flags go before or after the command; each falls back to its
environment variable (shown as Env) when not given.
`leasekeeper-ctl COMMAND --help` shows a command's own flags.

Durations: 500ms, 30s, 5m, 1h, 1m30s.

Exit codes:
  0   success
  1   error (the server refused, could not be reached, the lease was lost)
  2   usage: bad arguments (the problem is printed, with where to read
      the command's usage)
  75  lock busy: acquire not granted, run --try or run --wait not granted
  N   run: the command's own exit status)";

constexpr char kCommandFooter[] =
    "Global flags (--server, -o, --timeout, --tls, --ca, --cert, --key,\n"
    "--tls-server-name) also apply: see leasekeeper-ctl --help.";

// CLI11's formatter, but the overview lists each command with the first
// line of its description only.
class CtlFormatter final : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& description = sub->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             description.substr(0, description.find('\n')),
                             column_width_);
    return out.str();
  }
};

// A validator: a value that must not be empty.
CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "must not be empty" : "";
      },
      "");
}

// A validator: a server address list, checked by the client library's
// rules (client/channel.h, ParseEndpoints).
CLI::Validator ServerAddresses() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        absl::StatusOr<std::vector<std::string>> endpoints =
            client::ParseEndpoints(text);
        return endpoints.ok() ? "" : std::string(endpoints.status().message());
      },
      "");
}

// The output format a command line asks for, read without CLI11 so that a
// usage error, which may stop CLI11 before it reads -o, is still told in
// it: the last -o/--output before any `--`, else $LEASEKEEPER_OUTPUT.
OutputFormat AskedOutput(const std::vector<std::string>& args) {
  std::string asked;
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    absl::string_view arg = args[i];
    if ((arg == "-o" || arg == "--output") && i + 1 < args.size()) {
      asked = args[++i];
    } else if (absl::ConsumePrefix(&arg, "--output=") ||
               (absl::ConsumePrefix(&arg, "-o") && !arg.empty())) {
      asked = std::string(arg);
    }
  }
  if (asked.empty()) {
    const char* env = std::getenv("LEASEKEEPER_OUTPUT");
    if (env != nullptr) asked = env;
  }
  return asked == "json" ? OutputFormat::kJson : OutputFormat::kTable;
}

// True if -h or --help comes before any `--`.
bool AsksForHelp(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") return false;
    if (arg == "-h" || arg == "--help") return true;
  }
  return false;
}

// CLI11 says "The following arguments were not expected: b a" (its own,
// reversed order); this names the first unknown flag and the flags
// `command` (when known) does take, else the first extra argument.
std::string ExtrasProblem(const std::vector<std::string>& extras,
                          const CLI::App* command) {
  for (const std::string& extra : extras) {
    if (extra.size() < 2 || extra[0] != '-') continue;
    std::string problem =
        absl::StrCat("unknown flag ", extra.substr(0, extra.find('=')));
    if (command == nullptr) return problem;
    std::vector<std::string> flags;
    for (const CLI::Option* option : command->get_options()) {
      if (option->nonpositional() && option != command->get_help_ptr()) {
        flags.push_back(option->get_name());
      }
    }
    if (flags.empty()) {
      absl::StrAppend(&problem, " (", command->get_name(),
                      " takes only the global flags)");
    } else {
      absl::StrAppend(&problem, " (", command->get_name(), " takes ",
                      absl::StrJoin(flags, ", "), " and the global flags)");
    }
    return problem;
  }
  if (extras.empty()) return "unexpected arguments";
  return absl::StrCat("unexpected argument \"", extras[0], "\"");
}

// A validator: a value of at most `limit` bytes (the server's limit).
CLI::Validator AtMostBytes(size_t limit) {
  return CLI::Validator(
      [limit](std::string& text) -> std::string {
        if (text.size() <= limit) return "";
        return absl::StrCat("longer than ", limit, " bytes");
      },
      "");
}

// A validator: a whole number >= 1 that fits T; stored in *out (when not
// null) as soon as it is checked.
template <typename T>
CLI::Validator WholeNumberAtLeastOne(T* out = nullptr) {
  return CLI::Validator(
      [out](std::string& text) -> std::string {
        T number = 0;
        if (!absl::SimpleAtoi(text, &number) || number < 1) {
          return absl::StrCat("must be a whole number >= 1, not \"", text,
                              "\"");
        }
        if (out != nullptr) *out = number;
        return "";
      },
      "");
}

// The command line: one CLI11 app per command, bound to an Invocation.
class CommandTree {
 public:
  explicit CommandTree(Invocation* in) : in_(in) {
    app_.name(kProgram);
    app_.description("Talks to leasekeeperd, the lock service.");
    app_.footer(kOverviewFooter);
    app_.fallthrough();  // global flags after the command, too
    app_.require_subcommand(0, 1);
    app_.formatter(MakeFormatter());
    app_.set_help_flag("-h,--help", "This help (or a command's, after it)")
        ->group(kGlobalGroup);
    app_.option_defaults()->group("Flags");  // the commands' own
    AddGlobalFlags();
    app_.set_version_flag("--version", VersionLine(),
                          "This binary's version, commit and gRPC version")
        ->group(kGlobalGroup);
    AddAcquire();
    AddRenew();
    AddRelease();
    AddWrite();
    AddRead();
    AddDelete();
    AddKeys();
    AddInspect();
    AddStatus();
    AddLocks();
    AddWatch();
    AddRun();
    AddForceRelease();
    AddVersion();
    AddHealth();
    AddCluster();
    AddPartitionOf();
    completion_ = app_.add_subcommand("completion", "Shell completion script");
    completion_->group("Commands");
    completion_->description(
        "Shell completion script\n"
        "Load it with: source <(leasekeeper-ctl completion bash)");
    completion_->add_option("SHELL", completion_shell_, "bash or zsh")
        ->type_name("")
        ->required()
        ->check(CLI::IsMember({"bash", "zsh"}));
    help_ = app_.add_subcommand("help", "A command's usage and flags");
    help_->group("Commands");
    help_->add_option("COMMAND", help_topic_, "The command")->type_name("");
  }

  CommandTree(const CommandTree&) = delete;
  CommandTree& operator=(const CommandTree&) = delete;

  ParsedArguments Parse(const std::vector<std::string>& args) {
    ParsedArguments parsed;
    if (args.empty()) {
      parsed.text = app_.help();
      return parsed;
    }
    output_ = AskedOutput(args);
    // CLI11 takes the arguments in reverse order.
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app_.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      parsed.text = app_.help();
      return parsed;
    } catch (const CLI::CallForVersion&) {
      parsed.text = VersionLine() + "\n";
      return parsed;
    } catch (const CLI::ParseError& error) {
      // Help asked for is given even if something else is wrong (a bad
      // LEASEKEEPER_* variable), so the hint of a usage error always works.
      if (AsksForHelp(args)) {
        CLI::App* parsing = Parsing();
        parsed.text = parsing == nullptr ? Overview() : parsing->help(kProgram);
        return parsed;
      }
      if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
        return UsageError(ExtrasProblem(app_.remaining(true), Parsing()));
      }
      return UsageError(error.what());
    }
    if (help_->parsed()) return Help();
    if (completion_->parsed()) {
      parsed.text = completion_shell_ == "bash" ? BashCompletion(app_)
                                                : ZshCompletion(app_);
      return parsed;
    }
    CLI::App* selected = Selected();
    if (selected == nullptr) {
      parsed.text = app_.help();
      return parsed;
    }
    if (std::string problem = Finish(args); !problem.empty()) {
      return UsageError(problem);
    }
    parsed.action = ParsedArguments::Action::kExecute;
    parsed.invocation = *in_;
    return parsed;
  }

  // Not app_.help(): that shows the help of the command parsed last.
  std::string Overview() const {
    return app_.get_formatter()->make_help(&app_, kProgram,
                                           CLI::AppFormatMode::Normal);
  }

 private:
  static std::shared_ptr<CLI::Formatter> MakeFormatter() {
    auto formatter = std::make_shared<CtlFormatter>();
    formatter->column_width(28);
    formatter->label("Usage", "usage");
    formatter->label("OPTIONS", "FLAGS");
    formatter->label("SUBCOMMAND", "COMMAND");
    formatter->label("SUBCOMMANDS", "COMMANDS");
    formatter->label("Subcommands", "Commands");
    formatter->label("Positionals", "Arguments");
    return formatter;
  }

  void AddGlobalFlags() {
    app_.add_option("--server", in_->server,
                    "host:port of leasekeeperd; a cluster: a,b,c")
        ->envname("LEASEKEEPER_SERVER")
        ->type_name("ADDR")
        ->default_str(kDefaultServer)
        ->check(NonEmpty())
        ->check(ServerAddresses())
        ->group(kGlobalGroup);
    app_.add_option_function<std::string>(
            "-o,--output", [](const std::string&) {},
            "table (for people) or json (for scripts)")
        ->envname("LEASEKEEPER_OUTPUT")
        ->type_name("FORMAT")
        ->default_str("table")
        ->check(CLI::Validator(
            [this](std::string& text) -> std::string {
              if (text == "table") {
                in_->output = OutputFormat::kTable;
              } else if (text == "json") {
                in_->output = OutputFormat::kJson;
              } else {
                return absl::StrCat("must be table or json, not \"", text,
                                    "\"");
              }
              return "";
            },
            ""))
        ->group(kGlobalGroup);
    AddDurationFlag(app_, "--timeout", &in_->timeout,
                    {absl::Milliseconds(1), absl::Hours(24)},
                    "Deadline of each call")
        ->envname("LEASEKEEPER_TIMEOUT")
        ->default_str("10s")
        ->group(kGlobalGroup);
    app_.add_flag("--tls", in_->tls, "Use TLS (system roots unless --ca)")
        ->envname("LEASEKEEPER_TLS")
        ->group(kGlobalGroup);
    app_.add_option("--ca", in_->tls_ca_file,
                    "PEM root certificates (implies --tls)")
        ->envname("LEASEKEEPER_CA")
        ->type_name("FILE")
        ->group(kGlobalGroup);
    CLI::Option* cert =
        app_.add_option("--cert", in_->tls_cert_file,
                        "PEM client certificate (implies --tls)")
            ->envname("LEASEKEEPER_CERT")
            ->type_name("FILE")
            ->group(kGlobalGroup);
    CLI::Option* key = app_.add_option("--key", in_->tls_key_file,
                                       "PEM client key (implies --tls)")
                           ->envname("LEASEKEEPER_KEY")
                           ->type_name("FILE")
                           ->group(kGlobalGroup);
    cert->needs(key);
    key->needs(cert);
    app_.add_option("--tls-server-name", in_->tls_server_name,
                    "Expected name in the server's certificate")
        ->envname("LEASEKEEPER_TLS_SERVER_NAME")
        ->type_name("NAME")
        ->group(kGlobalGroup);
  }

  CLI::App* AddCommand(Command command, const std::string& name,
                       const std::string& summary,
                       const std::string& description) {
    CLI::App* sub = app_.add_subcommand(name, summary);
    sub->group("Commands");
    sub->get_help_ptr()->group("Flags");
    // The summary is what the overview lists; the help shows both.
    sub->description(absl::StrCat(summary, "\n", description));
    sub->footer(kCommandFooter);
    commands_.push_back(CommandEntry{sub, command, ""});
    return sub;
  }

  // A required, non-empty positional argument.
  static void AddArgument(CLI::App* sub, const std::string& name,
                          std::string* target, const std::string& help) {
    sub->add_option(name, *target, help)
        ->type_name("")
        ->required()
        ->check(NonEmpty());
  }

  void AddLock(CLI::App* sub) {
    AddArgument(sub, "LOCK", &in_->lock, "The lock's name");
  }

  // Each command's --client has its own storage: CLI11 applies
  // LEASEKEEPER_CLIENT to every command's --client, parsed or not, and a
  // shared target would take the variable over the flag.
  void AddClient(CLI::App* sub, bool required, const std::string& help) {
    CLI::Option* option =
        sub->add_option("--client", commands_.back().client_flag, help)
            ->envname("LEASEKEEPER_CLIENT")
            ->type_name("ID")
            ->check(NonEmpty());
    if (required) option->required();
  }

  void AddLabel(CLI::App* sub) {
    sub->add_option("--label", in_->label,
                    "Shown next to the lease by inspect, status and locks")
        ->type_name("TEXT")
        ->check(AtMostBytes(client::kMaxHolderLabelBytes));
  }

  void AddTtl(CLI::App* sub, const std::string& help) {
    AddDurationFlag(*sub, "--ttl", &in_->ttl,
                    {client::kMinTtl, client::kMaxTtl}, help);
  }

  // --semaphore N: one of N permits of a counting semaphore, N in
  // 1..65535; not with --shared.
  void AddSemaphore(CLI::App* sub, CLI::Option* shared) {
    CLI::Option* semaphore =
        sub->add_option("--semaphore", in_->semaphore,
                        "Take one of N permits of a counting semaphore "
                        "(N in 1..65535; the first holder sets N)")
            ->type_name("N")
            ->check(CLI::Range(uint32_t{1}, client::kMaxSemaphoreCapacity));
    semaphore->excludes(shared);
    shared->excludes(semaphore);
  }

  void AddAcquire() {
    CLI::App* sub = AddCommand(
        Command::kAcquire, "acquire", "Take a lock for a client and exit",
        "The lease is not renewed (use renew). Without --wait a busy lock is\n"
        "not waited for (nothing is left queued): exit 75. With --wait,\n"
        "waits up to DUR.");
    AddLock(sub);
    AddClient(sub, true, "The client that takes the lock");
    AddTtl(sub, "Length of the lease");
    sub->get_option("--ttl")->required();
    CLI::Option* shared = sub->add_flag("--shared", in_->shared,
                                        "Take it shared (default exclusive)");
    AddSemaphore(sub, shared);
    AddDurationFlag(*sub, "--wait", &in_->wait,
                    {absl::ZeroDuration(), client::kMaxServerWait},
                    "Wait up to this long for a busy lock");
    AddLabel(sub);
  }

  void AddRenew() {
    CLI::App* sub =
        AddCommand(Command::kRenew, "renew", "Extend a client's lease",
                   "The lease lasts --ttl from now; it keeps its token.");
    AddLock(sub);
    AddClient(sub, true, "The client that holds the lock");
    AddTtl(sub, "New length of the lease, from now");
    sub->get_option("--ttl")->required();
  }

  void AddRelease() {
    CLI::App* sub = AddCommand(Command::kRelease, "release",
                               "End a client's lease, or its wait",
                               "The lock passes on to the next in line.");
    AddLock(sub);
    AddClient(sub, true, "The client that holds or waits for the lock");
  }

  void AddWrite() {
    CLI::App* sub = AddCommand(
        Command::kWrite, "write", "Write to the fenced store",
        "Writes VALUE under (LOCK, KEY) if the client (--client, else\n"
        "$LEASEKEEPER_CLIENT_ID, which run sets) holds a live lease on LOCK\n"
        "with token --token (\"not holder\" if not) and the token is at least\n"
        "the highest the store accepted for LOCK (\"stale token\" if not).\n"
        "A VALUE starting with '-' goes after --.");
    AddLock(sub);
    AddArgument(sub, "KEY", &in_->key, "The key");
    AddArgument(sub, "VALUE", &in_->value, "The value");
    AddClient(sub, false, "The lease holder that writes");
    AddToken(sub,
             "The writer's fencing token (e.g. $LEASEKEEPER_FENCING_TOKEN)");
  }

  void AddRead() {
    CLI::App* sub =
        AddCommand(Command::kRead, "read", "Read from the fenced store",
                   "Prints the last accepted value (exit 1 if nothing was ever "
                   "written).");
    AddLock(sub);
    AddArgument(sub, "KEY", &in_->key, "The key");
  }

  // --token N, required: the caller's fencing token.
  void AddToken(CLI::App* sub, const std::string& help) {
    sub->add_option_function<std::string>("--token", [](const std::string&) {},
                                          help)
        ->type_name("N")
        ->required()
        ->check(WholeNumberAtLeastOne(&in_->token));
  }

  void AddDelete() {
    CLI::App* sub = AddCommand(
        Command::kDelete, "delete", "Delete a key from the fenced store",
        "Deletes (LOCK, KEY) with write's checks: the client (--client, else\n"
        "$LEASEKEEPER_CLIENT_ID, which run sets) must hold a live lease on\n"
        "LOCK with token --token (\"not holder\" if not), and the token must\n"
        "be at least the highest the store accepted for LOCK (\"stale token\"\n"
        "if not). A key that has no value is not an error: it says so (exit\n"
        "0). The delete frees the key's room under the store's limits.");
    AddLock(sub);
    AddArgument(sub, "KEY", &in_->key, "The key");
    AddClient(sub, false, "The lease holder that deletes");
    AddToken(sub,
             "The deleter's fencing token (e.g. $LEASEKEEPER_FENCING_TOKEN)");
  }

  void AddKeys() {
    CLI::App* sub = AddCommand(
        Command::kKeys, "keys", "A lock's keys in the fenced store",
        "Prints LOCK's keys in byte order, one a line: one page of them,\n"
        "after --after (default: from the first). When more follow, says\n"
        "so on stderr with the --after that lists them (in JSON: next_after).");
    AddLock(sub);
    sub->add_option("--after", in_->after,
                    "List the keys after this one (it need not exist)")
        ->type_name("KEY");
    sub->add_option("--limit", in_->limit,
                    "At most N keys (default 100, at most 1000)")
        ->type_name("N")
        ->check(CLI::Range(1, 1000));
  }

  void AddInspect() {
    CLI::App* sub = AddCommand(Command::kInspect, "inspect",
                               "A lock's holders and queue", "");
    AddLock(sub);
  }

  void AddStatus() {
    CLI::App* sub =
        AddCommand(Command::kStatus, "status", "A client's leases and wait",
                   "Its age, session, leases and the lock it waits for.");
    AddArgument(sub, "CLIENT", &in_->client_id, "The client id");
  }

  void AddLocks() {
    CLI::App* sub =
        AddCommand(Command::kLocks, "locks", "Locks in use, by name",
                   "Locks that have a holder or a waiter.");
    sub->add_option("--prefix", in_->prefix, "Only locks starting with P")
        ->type_name("P");
  }

  void AddWatch() {
    CLI::App* sub = AddCommand(
        Command::kWatch, "watch", "Follow a lock's changes as they happen",
        "Prints LOCK's (or every --prefix P lock's) holders and queue, then\n"
        "one line per change: granted, queued, released, lapsed, withdrawn,\n"
        "forced-release, deadlock-abort, each with the server's time and\n"
        "sequence number. With -o json, one JSON object per line. Runs until\n"
        "interrupted, --count changes, or the server ends the stream (exit\n"
        "1; \"watch fell behind\" if this reader was too slow).");
    sub->add_option("LOCK", in_->lock, "The lock's name")
        ->type_name("")
        ->check(NonEmpty());
    watch_prefix_ =
        sub->add_option("--prefix", in_->prefix,
                        "Every lock whose name starts with P (\"\": all)")
            ->type_name("P");
    sub->add_option("--count", in_->count,
                    "Exit after N changes (default: never)")
        ->type_name("N")
        ->check(WholeNumberAtLeastOne<int64_t>());
  }

  void AddRun() {
    CLI::App* sub = AddCommand(
        Command::kRun, "run", "Run a command under a lock",
        "Waits for LOCK (forever, up to --wait, or not at all with --try),\n"
        "runs CMD with LEASEKEEPER_LOCK, LEASEKEEPER_FENCING_TOKEN,\n"
        "LEASEKEEPER_SERVER and LEASEKEEPER_CLIENT_ID in its environment,\n"
        "renews the lease while CMD runs and releases it when CMD exits;\n"
        "exits with CMD's exit status (128+N if CMD was killed by signal N).\n"
        "CMD runs in a process group of its own, which is stopped (SIGTERM,\n"
        "then SIGKILL after --kill-grace) when the lease is lost (then exits\n"
        "1 with the reason on stderr), when CMD exits leaving processes\n"
        "behind (the lock is held until they are gone), and when\n"
        "leasekeeper-ctl itself dies, even by SIGKILL (a supervisor process\n"
        "does it; the server frees the lock after its session grace).\n"
        "SIGINT, SIGTERM and SIGHUP are passed on to CMD's group.");
    AddLock(sub);
    sub->add_option("CMD", in_->command_line,
                    "The command and its arguments, after --")
        ->type_name("");
    AddTtl(sub, "Length of the lease, renewed while CMD runs (default 30s)");
    CLI::Option* shared = sub->add_flag("--shared", in_->shared,
                                        "Take it shared (default exclusive)");
    AddSemaphore(sub, shared);
    CLI::Option* wait = AddDurationFlag(
        *sub, "--wait", &in_->wait,
        {absl::ZeroDuration(), client::kMaxServerWait},
        "Wait up to this long, then exit 75 (default: forever)");
    CLI::Option* try_only = sub->add_flag(
        "--try", in_->try_only, "Do not wait: exit 75 if the lock is busy");
    try_only->excludes(wait);
    wait->excludes(try_only);
    AddClient(sub, false, "The client id (default <host>/<pid>/<random>)");
    AddLabel(sub);
    AddDurationFlag(*sub, "--kill-grace", &in_->kill_grace,
                    {absl::ZeroDuration(), absl::Hours(1)},
                    "SIGTERM to SIGKILL when CMD's group is stopped "
                    "(default 10s)");
  }

  void AddForceRelease() {
    CLI::App* sub = AddCommand(
        Command::kForceRelease, "force-release",
        "End a stuck lease (admins only)",
        "Ends --holder's lease on LOCK, or every holder's. The holder is not\n"
        "told: its next renew fails with \"not holder\". The server logs who\n"
        "did it and --reason. Under mutual TLS only an identity the policy\n"
        "marks admin may.");
    AddLock(sub);
    sub->add_option("--holder", in_->holder,
                    "The holder whose lease ends (default: every holder)")
        ->type_name("ID")
        ->check(NonEmpty());
    sub->add_option("--reason", in_->reason,
                    "Why, for the server's audit log (e.g. a ticket)")
        ->type_name("TEXT")
        ->required()
        ->check(NonEmpty())
        ->check(AtMostBytes(client::kMaxHolderLabelBytes));
  }

  void AddVersion() {
    AddCommand(Command::kVersion, "version",
               "This binary's version and the server's",
               "Prints leasekeeper-ctl's version, commit and gRPC version,\n"
               "then the server's and its uptime (exit 1 if the server\n"
               "cannot be asked; --version asks no server).");
  }

  void AddHealth() {
    CLI::App* sub = AddCommand(
        Command::kHealth, "health", "Ask the server's health service",
        "Asks grpc.health.v1.Health/Check, as the kubelet's probes do, and\n"
        "prints SERVING, NOT_SERVING or UNKNOWN: exit 0 only for SERVING.\n"
        "Of several --server nodes, asks each (a line each) and exits 0 if\n"
        "any serves.\n"
        "Needs no client certificate on a --health-listen port, so it is\n"
        "the Docker image's HEALTHCHECK.");
    sub->add_option("--service", in_->service,
                    "The service to ask about (default \"\": the server)")
        ->type_name("NAME");
  }

  void AddCluster() {
    CLI::App* sub = AddCommand(
        Command::kClusterStatus, "cluster", "A cluster's members and leader",
        "`cluster status`: asks the node --server names first (any member\n"
        "answers) for its cluster: the members with their roles, applied log\n"
        "positions and lag behind the leader, the leader and its epoch. A\n"
        "daemon without --cluster says it is a single node.");
    sub->add_option("ACTION", cluster_action_, "status")
        ->type_name("")
        ->required()
        ->check(CLI::IsMember({"status"}));
  }

  void AddPartitionOf() {
    CLI::App* sub = AddCommand(
        Command::kPartitionOf, "partition-of",
        "Which of N partitions a key belongs to (asks no server)",
        "Prints the partition of KEY among --count partitions: FNV-1a 32-bit\n"
        "over KEY's UTF-8 bytes modulo N, or with --consistent a jump\n"
        "consistent hash of FNV-1a 64-bit, which moves only the new\n"
        "partitions' share of the keys when N grows. The same answer as the\n"
        "C++ and Python clients' PartitionOf, on every platform.");
    AddArgument(sub, "KEY", &in_->key, "The key");
    sub->add_option("--count", in_->partitions, "How many partitions")
        ->type_name("N")
        ->required()
        ->check(CLI::Range(uint32_t{1}, client::kMaxPartitionCount));
    sub->add_flag("--consistent", in_->consistent,
                  "Jump consistent hash instead of modulo");
  }

  CLI::App* Selected() const {
    for (const CommandEntry& entry : commands_) {
      if (entry.app->parsed()) return entry.app;
    }
    return nullptr;
  }

  // The rules CLI11 does not express; empty when all hold.
  std::string Finish(const std::vector<std::string>& args) {
    for (const CommandEntry& entry : commands_) {
      if (!entry.app->parsed()) continue;
      in_->command = entry.command;
      if (!entry.client_flag.empty()) in_->client_id = entry.client_flag;
    }
    if (!in_->tls_ca_file.empty() || !in_->tls_cert_file.empty() ||
        !in_->tls_key_file.empty() || !in_->tls_server_name.empty()) {
      in_->tls = true;
    }
    if (in_->command == Command::kRun) {
      // The command must be exactly what follows the first `--`.
      auto dash = std::find(args.begin(), args.end(), "--");
      const std::vector<std::string> after(
          dash == args.end() ? args.end() : dash + 1, args.end());
      if (in_->command_line.empty() || in_->command_line != after) {
        return "needs a command after --";
      }
      if (!in_->ttl.has_value()) in_->ttl = absl::Seconds(30);
    }
    if (in_->command == Command::kWatch) {
      in_->watch_prefix = watch_prefix_->count() > 0;
      if (in_->watch_prefix == !in_->lock.empty()) {
        return "takes exactly one of LOCK and --prefix P";
      }
    }
    return "";
  }

  ParsedArguments Help() {
    ParsedArguments parsed;
    if (help_topic_.empty()) {
      parsed.text = Overview();
      return parsed;
    }
    for (const CommandEntry& entry : commands_) {
      if (entry.app->get_name() == help_topic_) {
        parsed.text = entry.app->help(kProgram);
        return parsed;
      }
    }
    return UsageError(absl::StrCat("unknown command \"", help_topic_, "\""));
  }

  // The command whose arguments were being parsed (`completion` included);
  // null if none was recognised.
  CLI::App* Parsing() const {
    if (CLI::App* selected = Selected(); selected != nullptr) return selected;
    if (completion_->parsed()) return completion_;
    return nullptr;
  }

  // The problem, named after the command being parsed, with where to read
  // that command's usage, in the asked output format (FormatUsageError).
  ParsedArguments UsageError(const std::string& problem) {
    ParsedArguments parsed;
    parsed.action = ParsedArguments::Action::kUsageError;
    CLI::App* parsing = Parsing();
    std::string text = problem;
    if (parsing == nullptr) {
      // Nothing recognised as a command: the first word must be a typo.
      std::vector<std::string> extras = app_.remaining();
      if (!extras.empty() && !extras[0].empty() && extras[0][0] != '-') {
        text = absl::StrCat("unknown command \"", extras[0], "\"");
      }
    }
    parsed.text = FormatUsageError(
        parsing == nullptr ? "" : parsing->get_name(), text, output_);
    return parsed;
  }

  Invocation* in_;
  OutputFormat output_ = OutputFormat::kTable;  // for usage errors
  std::string cluster_action_;
  CLI::App app_;
  struct CommandEntry {
    CLI::App* app;
    Command command;
    std::string client_flag;  // --client, for the commands that take it
  };
  std::deque<CommandEntry> commands_;  // stable addresses for the bindings
  CLI::App* help_ = nullptr;
  std::string help_topic_;
  CLI::App* completion_ = nullptr;
  std::string completion_shell_;
  CLI::Option* watch_prefix_ = nullptr;
};

}  // namespace

ParsedArguments ParseArguments(const std::vector<std::string>& args) {
  Invocation invocation;
  CommandTree tree(&invocation);
  return tree.Parse(args);
}

std::string VersionLine() {
  return absl::StrCat(kProgram, " ", BuildVersion(), " (commit ", BuildCommit(),
                      ", gRPC ", grpc::Version(), ")");
}

std::string OverviewHelp() {
  Invocation invocation;
  CommandTree tree(&invocation);
  return tree.Overview();
}

}  // namespace leasekeeper::ctl
