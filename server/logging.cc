#include "server/logging.h"

#include <grpc/support/log.h>

#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "google/protobuf/stubs/logging.h"
#include "server/event_log.h"

namespace leasekeeper::server {
namespace {

void WriteLibraryLine(spdlog::level::level_enum level, absl::string_view source,
                      const char* file, int line, absl::string_view message) {
  // Libraries end some messages with a newline; the line ends here.
  while (!message.empty() &&
         (message.back() == '\n' || message.back() == '\r')) {
    message.remove_suffix(1);
  }
  spdlog::log(level, "event=library_log source={} file={} line={} message={}",
              std::string(source), LogfmtValue(file != nullptr ? file : ""),
              line, LogfmtValue(message));
}

void FromGrpc(gpr_log_func_args* args) {
  spdlog::level::level_enum level = spdlog::level::info;
  switch (args->severity) {
    case GPR_LOG_SEVERITY_DEBUG:
      level = spdlog::level::debug;
      break;
    case GPR_LOG_SEVERITY_INFO:
      level = spdlog::level::info;
      break;
    case GPR_LOG_SEVERITY_ERROR:
      level = spdlog::level::err;
      break;
  }
  WriteLibraryLine(level, "grpc", args->file, args->line,
                   args->message != nullptr ? args->message : "");
}

void FromProtobuf(google::protobuf::LogLevel severity, const char* file,
                  int line, const std::string& message) {
  spdlog::level::level_enum level = spdlog::level::info;
  switch (severity) {
    case google::protobuf::LOGLEVEL_INFO:
      level = spdlog::level::info;
      break;
    case google::protobuf::LOGLEVEL_WARNING:
      level = spdlog::level::warn;
      break;
    case google::protobuf::LOGLEVEL_ERROR:
      level = spdlog::level::err;
      break;
    case google::protobuf::LOGLEVEL_FATAL:
      level = spdlog::level::critical;
      break;
  }
  WriteLibraryLine(level, "protobuf", file, line, message);
  // protobuf aborts after a FATAL line: make sure it is on disk first.
  if (level == spdlog::level::critical) spdlog::default_logger()->flush();
}

}  // namespace

void InstallDaemonLogger(std::shared_ptr<spdlog::logger> logger,
                         spdlog::level::level_enum level) {
  logger->set_pattern(kLogPattern, spdlog::pattern_time_type::utc);
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

void RouteLibraryLogs() {
  gpr_set_log_function(&FromGrpc);
  google::protobuf::SetLogHandler(&FromProtobuf);
}

}  // namespace leasekeeper::server
