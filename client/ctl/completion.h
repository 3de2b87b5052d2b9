// Shell completion scripts for leasekeeper-ctl, generated from the CLI11
// command tree itself (arguments.cc), so they list exactly the commands and
// flags the parser accepts and cannot drift from it.
//
// The bash script completes commands, each command's flags plus the global
// flags, `-o` formats, files for --ca/--cert/--key, command names after
// `help`, shells after `completion`, and nothing after `run ... --` (the
// job's own words). The zsh script is the same function loaded through
// zsh's bashcompinit. Install: `source <(leasekeeper-ctl completion bash)`.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_CTL_COMPLETION_H_
#define LEASEKEEPER_CLIENT_CTL_COMPLETION_H_

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace leasekeeper::ctl {

// The bash completion script for `app` (the program is app's name).
std::string BashCompletion(const CLI::App& app);

// The zsh completion script for `app`.
std::string ZshCompletion(const CLI::App& app);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_COMPLETION_H_
