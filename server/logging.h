// Logging setup of leasekeeperd: one format for every line on stderr.
//
// Every line is logfmt, starting with its time and level:
//   ts=2026-12-01T09:30:00.123+00:00 level=info event=server_started ...
// The time is UTC, RFC 3339 with milliseconds and the offset. The lines
// that gRPC (gpr_log) and protobuf (its LogHandler) would write to stderr
// in their own format (`E1201 09:30:00.123 ...`) go through the same
// logger instead, as
//   ts=... level=error event=library_log source=grpc file=... line=...
//   message="..."
// (level: their severity mapped to spdlog's; protobuf's FATAL is critical).
//
// Thread-safety: InstallDaemonLogger and RouteLibraryLogs once, at start,
// before other threads log; the installed handlers may then be called from
// any thread.
#ifndef LEASEKEEPER_SERVER_LOGGING_H_
#define LEASEKEEPER_SERVER_LOGGING_H_

#include <memory>

#include "spdlog/spdlog.h"

namespace leasekeeper::server {

// The pattern of every line: `ts=<RFC 3339 UTC> level=<level> <message>`,
// to be used with spdlog::pattern_time_type::utc.
inline constexpr char kLogPattern[] = "ts=%Y-%m-%dT%H:%M:%S.%e%z level=%l %v";

// Makes `logger` the default logger, with kLogPattern in UTC and `level`.
void InstallDaemonLogger(std::shared_ptr<spdlog::logger> logger,
                         spdlog::level::level_enum level);

// Sends gRPC's and protobuf's log lines to the default spdlog logger.
void RouteLibraryLogs();

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_LOGGING_H_
