#include "client/ctl/output.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/ctl/duration_flag.h"
#include "client/errors.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "version/version.h"

namespace leasekeeper::ctl {
namespace {

using nlohmann::json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string ModeName(client::LockMode mode) {
  return std::string(client::LockModeName(mode));
}

json WallTime(absl::Time time) {
  if (time == absl::InfinitePast()) return nullptr;
  return absl::FormatTime(absl::RFC3339_full, time, absl::UTCTimeZone());
}

json HolderJson(const client::HolderInfo& holder) {
  return json{{"client", holder.client_id},
              {"lock", holder.lock},
              {"mode", ModeName(holder.mode)},
              {"token", holder.token},
              {"expires_in_ms", absl::ToInt64Milliseconds(holder.expires_in)},
              {"expires_at", WallTime(holder.expires_at_wall)},
              {"label", holder.holder_label}};
}

json HoldersJson(const std::vector<client::HolderInfo>& holders) {
  json list = json::array();
  for (const client::HolderInfo& holder : holders) {
    list.push_back(HolderJson(holder));
  }
  return list;
}

json WaiterJson(const client::WaiterInfo& waiter) {
  return json{{"client", waiter.client_id},
              {"mode", ModeName(waiter.mode)},
              {"ttl_ms", absl::ToInt64Milliseconds(waiter.ttl)},
              {"position", waiter.position},
              {"label", waiter.holder_label}};
}

json ErrorJson(const absl::Status& status) {
  std::optional<client::ErrorReason> reason = client::ErrorReasonOf(status);
  return json{
      {"code", absl::StatusCodeToString(status.code())},
      {"reason", reason.has_value()
                     ? json(std::string(client::ErrorReasonName(*reason)))
                     : json(nullptr)},
      {"message", std::string(status.message())}};
}

std::string OrDash(const std::string& text) {
  return text.empty() ? "-" : text;
}

}  // namespace

std::string RenderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string FormatAcquired(const std::string& lock, const std::string& client,
                           client::LockMode mode,
                           const client::AcquireResult& result,
                           OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(json{{"lock", lock},
                     {"client", client},
                     {"acquired", true},
                     {"token", result.token},
                     {"ttl_ms", absl::ToInt64Milliseconds(result.ttl)},
                     {"waited_ms", absl::ToInt64Milliseconds(result.waited)},
                     {"mode", ModeName(mode)},
                     {"aborted_clients", result.aborted_clients}});
  }
  std::string text = absl::StrCat(
      "acquired ", lock, " for ", client, ": token ", result.token, ", ",
      ModeName(mode), ", lease ", FormatDurationForHumans(result.ttl));
  if (result.waited > absl::ZeroDuration()) {
    absl::StrAppend(&text, ", waited ", FormatDurationForHumans(result.waited));
  }
  text += "\n";
  if (!result.aborted_clients.empty()) {
    absl::StrAppend(&text, "aborted as deadlock victims: ",
                    absl::StrJoin(result.aborted_clients, ", "), "\n");
  }
  return text;
}

std::string FormatBusy(const std::string& lock, const std::string& client,
                       int64_t position, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    json out{{"lock", lock},
             {"client", client},
             {"acquired", false},
             {"busy", true}};
    out["position"] = position > 0 ? json(position) : json(nullptr);
    return Dump(out);
  }
  if (position > 0) {
    return absl::StrCat("busy: ", lock, " is not free (would be number ",
                        position, " in line); not waiting\n");
  }
  return absl::StrCat("busy: ", lock, " was not granted in time\n");
}

std::string FormatRenewed(const std::string& lock, const std::string& client,
                          const client::RenewResult& result,
                          OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(json{{"lock", lock},
                     {"client", client},
                     {"token", result.token},
                     {"ttl_ms", absl::ToInt64Milliseconds(result.ttl)}});
  }
  return absl::StrCat("renewed ", lock, " for ", client, ": token ",
                      result.token, ", lease ",
                      FormatDurationForHumans(result.ttl), "\n");
}

std::string FormatReleased(const std::string& lock, const std::string& client,
                           client::ReleaseOutcome outcome,
                           OutputFormat format) {
  const char* result =
      outcome == client::ReleaseOutcome::kReleased ? "released" : "withdrawn";
  if (format == OutputFormat::kJson) {
    return Dump(json{{"lock", lock}, {"client", client}, {"result", result}});
  }
  if (outcome == client::ReleaseOutcome::kReleased) {
    return absl::StrCat("released ", lock, " held by ", client, "\n");
  }
  return absl::StrCat("withdrew ", client, "'s wait for ", lock, "\n");
}

std::string FormatWritten(const std::string& lock, const std::string& key,
                          client::FencingToken token, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(json{
        {"lock", lock}, {"key", key}, {"token", token}, {"accepted", true}});
  }
  return absl::StrCat("written ", lock, " ", key, " with token ", token, "\n");
}

std::string FormatRead(const std::string& lock, const std::string& key,
                       const std::optional<std::string>& value,
                       OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(
        json{{"lock", lock},
             {"key", key},
             {"found", value.has_value()},
             {"value", value.has_value() ? json(*value) : json(nullptr)}});
  }
  if (!value.has_value()) return "";
  return *value + "\n";
}

std::string FormatDeleted(const std::string& lock, const std::string& key,
                          client::FencingToken token, bool existed,
                          OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(json{
        {"lock", lock}, {"key", key}, {"token", token}, {"existed", existed}});
  }
  if (!existed) {
    return absl::StrCat("nothing to delete under ", lock, " ", key,
                        " (token ", token, ")\n");
  }
  return absl::StrCat("deleted ", lock, " ", key, " with token ", token, "\n");
}

std::string FormatKeys(const std::string& lock, const client::KeysPage& page,
                       OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(json{{"lock", lock},
                     {"keys", page.keys},
                     {"next_after", page.next_after.empty()
                                        ? json(nullptr)
                                        : json(page.next_after)}});
  }
  std::string out;
  for (const std::string& key : page.keys) absl::StrAppend(&out, key, "\n");
  return out;
}

std::string FormatInspect(const std::string& lock, const client::LockInfo& info,
                          OutputFormat format) {
  if (format == OutputFormat::kJson) {
    json queue = json::array();
    for (const client::WaiterInfo& waiter : info.queue) {
      queue.push_back(WaiterJson(waiter));
    }
    return Dump(json{{"lock", lock},
                     {"capacity", info.capacity == 0 ? json(nullptr)
                                                     : json(info.capacity)},
                     {"holders", HoldersJson(info.holders)},
                     {"queue", queue}});
  }
  std::string out = absl::StrCat(
      "lock ", lock,
      info.capacity == 0
          ? std::string()
          : absl::StrCat(" (semaphore, capacity ", info.capacity, ")"),
      "\n\n");
  if (info.holders.empty()) {
    out += "holders: none\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"HOLDER", "MODE", "TOKEN", "EXPIRES IN", "LABEL"}};
    for (const client::HolderInfo& holder : info.holders) {
      rows.push_back({holder.client_id, ModeName(holder.mode),
                      absl::StrCat(holder.token),
                      FormatDurationForHumans(holder.expires_in),
                      OrDash(holder.holder_label)});
    }
    out += RenderTable(rows);
  }
  out += "\n";
  if (info.queue.empty()) {
    out += "queue: empty\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"POSITION", "WAITER", "MODE", "TTL", "LABEL"}};
    for (const client::WaiterInfo& waiter : info.queue) {
      rows.push_back({absl::StrCat(waiter.position), waiter.client_id,
                      ModeName(waiter.mode),
                      FormatDurationForHumans(waiter.ttl),
                      OrDash(waiter.holder_label)});
    }
    out += RenderTable(rows);
  }
  return out;
}

std::string FormatStatus(const std::string& client_id,
                         const client::ClientStatus& status,
                         OutputFormat format) {
  const std::string session(client::SessionStateName(status.session));
  if (format == OutputFormat::kJson) {
    json out{{"client", client_id},
             {"registered", status.registered},
             {"session", session},
             {"holds", HoldersJson(status.holds)}};
    out["age"] = status.registered ? json(status.age) : json(nullptr);
    out["waiting_for"] =
        status.waiting_for.empty() ? json(nullptr) : json(status.waiting_for);
    return Dump(out);
  }
  std::string out = RenderTable({
      {"client", client_id},
      {"registered",
       status.registered
           ? absl::StrCat("yes, age ", status.age,
                          " (its registration number: larger is younger)")
           : "no"},
      {"session", session},
      {"waiting for", OrDash(status.waiting_for)},
  });
  out += "\n";
  if (status.holds.empty()) {
    out += "holds: nothing\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"LOCK", "MODE", "TOKEN", "EXPIRES IN", "LABEL"}};
    for (const client::HolderInfo& holder : status.holds) {
      rows.push_back({holder.lock, ModeName(holder.mode),
                      absl::StrCat(holder.token),
                      FormatDurationForHumans(holder.expires_in),
                      OrDash(holder.holder_label)});
    }
    out += RenderTable(rows);
  }
  return out;
}

std::string FormatLocks(const std::vector<client::LockSummary>& locks,
                        OutputFormat format) {
  if (format == OutputFormat::kJson) {
    json list = json::array();
    for (const client::LockSummary& summary : locks) {
      list.push_back(json{{"lock", summary.lock},
                          {"capacity", summary.capacity == 0
                                           ? json(nullptr)
                                           : json(summary.capacity)},
                          {"holders", HoldersJson(summary.holders)},
                          {"queue_length", summary.queue_length}});
    }
    return Dump(json{{"locks", list}});
  }
  if (locks.empty()) return "no locks held or waited for\n";
  std::vector<std::vector<std::string>> rows = {
      {"LOCK", "MODE", "HOLDERS", "TOKENS", "QUEUE"}};
  for (const client::LockSummary& summary : locks) {
    std::vector<std::string> holders;
    std::vector<std::string> tokens;
    for (const client::HolderInfo& holder : summary.holders) {
      holders.push_back(holder.client_id);
      tokens.push_back(absl::StrCat(holder.token));
    }
    const std::string mode =
        summary.holders.empty() ? "-" : ModeName(summary.holders[0].mode);
    rows.push_back({summary.lock, mode, OrDash(absl::StrJoin(holders, ",")),
                    OrDash(absl::StrJoin(tokens, ",")),
                    absl::StrCat(summary.queue_length)});
  }
  return RenderTable(rows);
}

std::string FormatForceReleased(const std::string& lock,
                                const std::vector<ForcedRelease>& released,
                                OutputFormat format) {
  if (format == OutputFormat::kJson) {
    json list = json::array();
    for (const ForcedRelease& lease : released) {
      list.push_back(json{{"client", lease.client_id},
                          {"token", lease.token},
                          {"mode", ModeName(lease.mode)}});
    }
    return Dump(json{{"lock", lock}, {"released", list}});
  }
  std::string out;
  for (const ForcedRelease& lease : released) {
    absl::StrAppend(&out, "force-released ", lock, " held by ", lease.client_id,
                    " (token ", lease.token, ", ", ModeName(lease.mode), ")\n");
  }
  return out;
}

std::string FormatWatchUpdate(const client::WatchUpdate& update,
                              OutputFormat format) {
  const bool as_json = format == OutputFormat::kJson;
  switch (update.kind) {
    case client::WatchUpdate::Kind::kCurrent: {
      if (as_json) {
        json queue = json::array();
        for (const client::WaiterInfo& waiter : update.current.queue) {
          queue.push_back(WaiterJson(waiter));
        }
        return Dump(json{{"current",
                          {{"lock", update.lock},
                           {"holders", HoldersJson(update.current.holders)},
                           {"queue", queue}}}});
      }
      std::string out;
      for (const client::HolderInfo& holder : update.current.holders) {
        absl::StrAppend(&out, "current ", update.lock, " holder ",
                        holder.client_id, " ", ModeName(holder.mode),
                        " token=", holder.token, " expires_in=",
                        FormatDurationForHumans(holder.expires_in), "\n");
      }
      for (const client::WaiterInfo& waiter : update.current.queue) {
        absl::StrAppend(&out, "current ", update.lock, " waiter ",
                        waiter.client_id, " ", ModeName(waiter.mode),
                        " position=", waiter.position,
                        " ttl=", FormatDurationForHumans(waiter.ttl), "\n");
      }
      return out;
    }
    case client::WatchUpdate::Kind::kSynced:
      if (as_json) {
        return Dump(json{{"synced",
                          {{"sequence", update.sequence},
                           {"locks", update.locks}}}});
      }
      return absl::StrCat("synced sequence=", update.sequence,
                          " locks=", update.locks, "\n");
    case client::WatchUpdate::Kind::kEvent:
      break;
  }
  const client::WatchEvent& e = update.event;
  const std::string kind(client::WatchEventKindName(e.kind));
  if (as_json) {
    return Dump(json{{"event",
                      {{"kind", kind},
                       {"lock", e.lock},
                       {"client", e.client_id},
                       {"mode", ModeName(e.mode)},
                       {"token", e.token},
                       {"ttl_ms", absl::ToInt64Milliseconds(e.ttl)},
                       {"time", WallTime(e.time)},
                       {"sequence", e.sequence}}}});
  }
  const json time = WallTime(e.time);
  std::string out = absl::StrCat(
      time.is_null() ? "-" : time.get<std::string>(), " #", e.sequence, " ",
      kind, " ", e.lock, " ", e.client_id, " ", ModeName(e.mode));
  if (e.token != 0) absl::StrAppend(&out, " token=", e.token);
  if (e.ttl > absl::ZeroDuration()) {
    absl::StrAppend(&out, " ttl=", FormatDurationForHumans(e.ttl));
  }
  return out + "\n";
}

std::string FormatPartition(const std::string& key, uint32_t count,
                            bool consistent, uint32_t partition,
                            OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(json{{"key", key},
                     {"count", count},
                     {"scheme", consistent ? "consistent" : "modulo"},
                     {"partition", partition}});
  }
  return absl::StrCat(partition, "\n");
}

std::string FormatVersion(const std::string& server,
                          const absl::StatusOr<ServerInfo>& info,
                          OutputFormat format) {
  if (format == OutputFormat::kJson) {
    json out{{"client",
              {{"version", BuildVersion()},
               {"commit", BuildCommit()},
               {"grpc_version", grpc::Version()}}}};
    if (info.ok()) {
      out["server"] =
          json{{"address", server},
               {"version", info->version},
               {"commit", info->commit},
               {"grpc_version", info->grpc_version},
               {"uptime_ms", absl::ToInt64Milliseconds(info->uptime)}};
    } else {
      out["server"] = nullptr;
    }
    return Dump(out);
  }
  std::vector<std::vector<std::string>> rows = {
      {"leasekeeper-ctl", BuildVersion(),
       absl::StrCat("commit ", BuildCommit()),
       absl::StrCat("gRPC ", grpc::Version())}};
  if (info.ok()) {
    rows.push_back({"leasekeeperd", info->version,
                    absl::StrCat("commit ", info->commit),
                    absl::StrCat("gRPC ", info->grpc_version),
                    absl::StrCat("up ", FormatDurationForHumans(absl::Trunc(
                                            info->uptime, absl::Seconds(1)))),
                    absl::StrCat("at ", server)});
  }
  return RenderTable(rows);
}

std::optional<HealthStatus> OverallHealth(const std::vector<NodeHealth>& nodes) {
  // The better answer wins: SERVING, then NOT_SERVING, then UNKNOWN.
  auto rank = [](HealthStatus status) {
    switch (status) {
      case HealthStatus::kServing:
        return 3;
      case HealthStatus::kNotServing:
        return 2;
      case HealthStatus::kUnknown:
        return 1;
    }
    return 0;
  };
  std::optional<HealthStatus> overall;
  for (const NodeHealth& node : nodes) {
    if (node.status.ok() &&
        (!overall.has_value() || rank(*node.status) > rank(*overall))) {
      overall = *node.status;
    }
  }
  return overall;
}

std::string FormatHealth(const std::string& server, const std::string& service,
                         const std::vector<NodeHealth>& nodes,
                         OutputFormat format) {
  auto error_of = [](const NodeHealth& node) {
    return absl::StrCat(absl::StatusCodeToString(node.status.status().code()),
                        ": ", node.status.status().message());
  };
  if (format == OutputFormat::kJson) {
    const std::optional<HealthStatus> overall = OverallHealth(nodes);
    json list = json::array();
    for (const NodeHealth& node : nodes) {
      list.push_back(
          json{{"server", node.server},
               {"status", node.status.ok()
                              ? json(HealthStatusName(*node.status))
                              : json(nullptr)},
               {"error", node.status.ok() ? json(nullptr)
                                          : json(error_of(node))}});
    }
    return Dump(json{{"server", server},
                     {"service", service},
                     {"status", overall.has_value()
                                    ? json(HealthStatusName(*overall))
                                    : json(nullptr)},
                     {"nodes", list}});
  }
  if (nodes.size() == 1 && nodes[0].status.ok()) {
    return absl::StrCat(HealthStatusName(*nodes[0].status), "\n");
  }
  std::vector<std::vector<std::string>> rows;
  for (const NodeHealth& node : nodes) {
    rows.push_back({node.server, node.status.ok()
                                     ? HealthStatusName(*node.status)
                                     : absl::StrCat("error: ", error_of(node))});
  }
  return RenderTable(rows);
}

std::string FormatClusterStatus(const client::ClusterInfo& info,
                                OutputFormat format) {
  const bool leader_known = !info.leader_address.empty();
  if (format == OutputFormat::kJson) {
    json members = json::array();
    for (const client::ClusterMemberInfo& member : info.members) {
      members.push_back(json{{"node", member.node_id},
                             {"address", member.advertise},
                             {"role", client::MemberRoleName(member.role)},
                             {"applied_position", member.applied_position},
                             {"lag", member.lag}});
    }
    json out{{"cluster", info.cluster},
             {"node", info.node_id},
             {"role", client::MemberRoleName(info.role)},
             {"leader", nullptr},
             {"epoch", info.epoch},
             {"last_position", info.last_position},
             {"members", members}};
    if (leader_known) {
      out["leader"] =
          json{{"id", info.leader_id}, {"address", info.leader_address}};
    }
    if (!info.etcd_error.empty()) out["etcd_error"] = info.etcd_error;
    return Dump(out);
  }
  if (info.cluster.empty()) {
    return absl::StrCat(
        "single node at ", OrDash(info.leader_address),
        ", not in cluster mode (no --cluster): it serves every call itself; "
        "last position ",
        info.last_position, "\n");
  }
  std::string out = absl::StrCat(
      "cluster ", info.cluster,
      ", leader ",
      leader_known ? absl::StrCat(OrDash(info.leader_id), " at ",
                                  info.leader_address)
                   : std::string("unknown"),
      ", epoch ", info.epoch, ", last position ", info.last_position,
      "; answered by ", OrDash(info.node_id), " (",
      client::MemberRoleName(info.role), ")\n");
  if (!info.etcd_error.empty()) {
    absl::StrAppend(&out, "etcd: ", info.etcd_error, "\n");
  }
  if (info.members.empty()) return out;
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "ADDRESS", "ROLE", "APPLIED", "LAG"}};
  for (const client::ClusterMemberInfo& member : info.members) {
    rows.push_back({OrDash(member.node_id), OrDash(member.advertise),
                    std::string(client::MemberRoleName(member.role)),
                    absl::StrCat(member.applied_position),
                    absl::StrCat(member.lag)});
  }
  return out + RenderTable(rows);
}

std::string FormatError(const std::string& what, const absl::Status& status,
                        OutputFormat format) {
  if (format == OutputFormat::kJson) {
    return Dump(json{{"error", ErrorJson(status)}});
  }
  return absl::StrCat("leasekeeper-ctl: ", what, ": ",
                      absl::StatusCodeToString(status.code()), ": ",
                      status.message(), "\n");
}

std::string FormatUsageError(const std::string& command,
                             const std::string& problem, OutputFormat format) {
  const std::string program =
      command.empty() ? "leasekeeper-ctl" : "leasekeeper-ctl " + command;
  const std::string usage = program + " --help";
  if (format == OutputFormat::kJson) {
    json error = ErrorJson(absl::InvalidArgumentError(problem));
    error["usage"] = usage;
    return Dump(json{{"error", error}});
  }
  return absl::StrCat(program, ": ", problem, "\nrun '", usage,
                      "' for its usage\n");
}

}  // namespace leasekeeper::ctl
