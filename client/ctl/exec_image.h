// ExecImage: a command line and an environment in the form execve takes,
// built before a fork so that the child calls only async-signal-safe
// functions. Used by the ctl's supervisor and by the tests' subprocesses.
//
// Thread-safety: immutable once built; not copyable or movable (argv() and
// envp() point into it).
#ifndef LEASEKEEPER_CLIENT_CTL_EXEC_IMAGE_H_
#define LEASEKEEPER_CLIENT_CTL_EXEC_IMAGE_H_

#include <string>
#include <utility>
#include <vector>

namespace leasekeeper::ctl {

class ExecImage {
 public:
  // `argv` as given. The environment is this process's, with each of
  // `environment` added (replacing an inherited variable of the same name),
  // ordered by name.
  ExecImage(
      const std::vector<std::string>& argv,
      const std::vector<std::pair<std::string, std::string>>& environment);

  ExecImage(const ExecImage&) = delete;
  ExecImage& operator=(const ExecImage&) = delete;

  // Null-terminated arrays for execve; valid as long as this object.
  char* const* argv() const { return argv_pointers_.data(); }
  char* const* envp() const { return envp_pointers_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<std::string> env_strings_;
  std::vector<char*> argv_pointers_;
  std::vector<char*> envp_pointers_;
};

// A wait status as a shell reports it: the exit code, or 128 + the signal
// that ended the process; 1 for any other status.
int ShellExitCode(int wait_status);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_EXEC_IMAGE_H_
