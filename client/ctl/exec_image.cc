#include "client/ctl/exec_image.h"

#include <sys/wait.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

extern char** environ;

namespace leasekeeper::ctl {

ExecImage::ExecImage(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& environment)
    : args_(argv) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    absl::string_view text(*entry);
    const size_t equals = text.find('=');
    if (equals == absl::string_view::npos) continue;
    env[std::string(text.substr(0, equals))] =
        std::string(text.substr(equals + 1));
  }
  for (const auto& [name, value] : environment) env[name] = value;
  for (const auto& [name, value] : env) {
    env_strings_.push_back(absl::StrCat(name, "=", value));
  }
  for (std::string& entry : env_strings_)
    envp_pointers_.push_back(entry.data());
  envp_pointers_.push_back(nullptr);
  for (std::string& arg : args_) argv_pointers_.push_back(arg.data());
  argv_pointers_.push_back(nullptr);
}

int ShellExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace leasekeeper::ctl
