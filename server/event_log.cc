#include "server/event_log.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace leasekeeper::server {
namespace {

spdlog::level::level_enum LevelOf(LogEvent event) {
  switch (event) {
    case LogEvent::kGrantedFromQueue:
    case LogEvent::kLapsed:
    case LogEvent::kReleasedBySessionLoss:
    case LogEvent::kDeadlockVictims:
    case LogEvent::kStaleWriteRefused:
    case LogEvent::kUndeliveredGrantReleased:
    case LogEvent::kSessionReplaced:
    case LogEvent::kSessionStreamLost:
      return spdlog::level::info;
    case LogEvent::kWaitTimedOut:
    case LogEvent::kWaitCancelled:
    case LogEvent::kSessionOpened:
    case LogEvent::kSessionResumed:
    case LogEvent::kSessionClosed:
      return spdlog::level::debug;
  }
  return spdlog::level::info;
}

}  // namespace

std::string LogfmtValue(absl::string_view text) {
  bool bare = !text.empty();
  for (char c : text) {
    if (c == ' ' || c == '=' || c == '"' || c == '\\' ||
        static_cast<unsigned char>(c) < 0x21) {
      bare = false;
      break;
    }
  }
  if (bare) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(
          &quoted, "\\x",
          absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
      continue;
    }
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

absl::string_view EventName(LogEvent event) {
  switch (event) {
    case LogEvent::kGrantedFromQueue:
      return "granted_from_queue";
    case LogEvent::kLapsed:
      return "lapsed";
    case LogEvent::kReleasedBySessionLoss:
      return "released_by_session_loss";
    case LogEvent::kDeadlockVictims:
      return "deadlock_victims";
    case LogEvent::kStaleWriteRefused:
      return "stale_write_refused";
    case LogEvent::kUndeliveredGrantReleased:
      return "undelivered_grant_released";
    case LogEvent::kSessionReplaced:
      return "session_replaced";
    case LogEvent::kSessionStreamLost:
      return "session_stream_lost";
    case LogEvent::kWaitTimedOut:
      return "wait_timed_out";
    case LogEvent::kWaitCancelled:
      return "wait_cancelled";
    case LogEvent::kSessionOpened:
      return "session_opened";
    case LogEvent::kSessionResumed:
      return "session_resumed";
    case LogEvent::kSessionClosed:
      return "session_closed";
  }
  return "unknown";
}

bool ShouldLog(LogEvent event) {
  return spdlog::default_logger_raw()->should_log(LevelOf(event));
}

void WriteLog(const LogRecord& r) {
  std::string line = absl::StrCat("event=", EventName(r.event));
  if (!r.session.empty())
    absl::StrAppend(&line, " session=", LogfmtValue(r.session));
  if (!r.client.empty())
    absl::StrAppend(&line, " client=", LogfmtValue(r.client));
  if (!r.lock.empty()) absl::StrAppend(&line, " lock=", LogfmtValue(r.lock));
  if (!r.key.empty()) absl::StrAppend(&line, " key=", LogfmtValue(r.key));
  if (r.token != 0) absl::StrAppend(&line, " token=", r.token);
  if (r.event == LogEvent::kStaleWriteRefused) {
    absl::StrAppend(&line, " high_water=", r.high_water);
  }
  if (r.event == LogEvent::kGrantedFromQueue) {
    absl::StrAppend(&line, " lease_ms=", r.lease_ms);
    if (r.waited_ms > 0) absl::StrAppend(&line, " waited_ms=", r.waited_ms);
  }
  if (r.event == LogEvent::kReleasedBySessionLoss) {
    absl::StrAppend(&line, " leases=", r.count);
  }
  if (!r.victims.empty()) {
    std::vector<std::string> quoted;
    quoted.reserve(r.victims.size());
    for (const std::string& victim : r.victims)
      quoted.push_back(LogfmtValue(victim));
    absl::StrAppend(&line, " victims=", absl::StrJoin(quoted, ","));
  }
  spdlog::log(LevelOf(r.event), "{}", line);
}

}  // namespace leasekeeper::server
