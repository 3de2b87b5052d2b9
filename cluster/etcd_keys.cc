#include "cluster/etcd_keys.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "storage/coding.h"

namespace leasekeeper::storage {
namespace {

// A record is at most a log record (log.h); a batch holds at most this
// many.
constexpr uint64_t kMaxBatchRecords = uint64_t{1} << 20;

}  // namespace

ClusterKeys::ClusterKeys(absl::string_view cluster)
    : root_(absl::StrCat("/leasekeeper/", cluster, "/")) {}

std::string ClusterKeys::log(LogPosition first) const {
  return absl::StrFormat("%slog/%020u", root_, first);
}

std::string ClusterKeys::member(absl::string_view node_id) const {
  return absl::StrCat(root_, "members/", node_id);
}

std::optional<LogPosition> ClusterKeys::LogPositionOf(
    absl::string_view key) const {
  const std::string prefix = log_prefix();
  if (!absl::ConsumePrefix(&key, prefix) || key.size() != 20) {
    return std::nullopt;
  }
  LogPosition position = 0;
  if (!absl::SimpleAtoi(key, &position) || position == 0) return std::nullopt;
  return position;
}

std::string EncodeBatch(const std::vector<std::string>& records) {
  std::string out;
  size_t bytes = 10;
  for (const std::string& record : records) bytes += record.size() + 5;
  out.reserve(bytes);
  PutVarint64(out, records.size());
  for (const std::string& record : records) PutLengthPrefixed(out, record);
  return out;
}

absl::StatusOr<std::vector<absl::string_view>> DecodeBatch(
    absl::string_view value) {
  ByteReader reader(value);
  uint64_t count = 0;
  if (!reader.GetVarint64(count) || count == 0 || count > kMaxBatchRecords) {
    return absl::DataLossError("log batch: bad record count");
  }
  std::vector<absl::string_view> records;
  records.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    absl::string_view record;
    if (!reader.GetLengthPrefixed(record, kMaxLogRecordBytes)) {
      return absl::DataLossError(
          absl::StrCat("log batch: record ", i, " of ", count, " is cut"));
    }
    records.push_back(record);
  }
  if (!reader.empty()) {
    return absl::DataLossError("log batch: bytes after the last record");
  }
  return records;
}

std::string EncodeLeader(const LeaderRecord& leader) {
  return absl::StrCat(leader.node_id, "\n", leader.advertise);
}

LeaderRecord DecodeLeader(absl::string_view value) {
  std::pair<std::string, std::string> parts =
      absl::StrSplit(value, absl::MaxSplits('\n', 1));
  return LeaderRecord{.node_id = parts.first, .advertise = parts.second};
}

std::string EncodeMember(const MemberReport& member) {
  return absl::StrCat("node=", member.node_id, "\nadvertise=", member.advertise,
                      "\nrole=", member.role, "\napplied=", member.applied,
                      "\nsnapshot=", member.snapshot);
}

std::optional<MemberReport> DecodeMember(absl::string_view value) {
  MemberReport member;
  int fields = 0;
  for (absl::string_view line : absl::StrSplit(value, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.first == "node") {
      member.node_id = std::string(kv.second);
    } else if (kv.first == "advertise") {
      member.advertise = std::string(kv.second);
    } else if (kv.first == "role") {
      if (!absl::SimpleAtoi(kv.second, &member.role)) return std::nullopt;
    } else if (kv.first == "applied") {
      if (!absl::SimpleAtoi(kv.second, &member.applied)) return std::nullopt;
    } else if (kv.first == "snapshot") {
      if (!absl::SimpleAtoi(kv.second, &member.snapshot)) return std::nullopt;
    } else {
      continue;  // a field of a later version
    }
    ++fields;
  }
  if (fields < 5) return std::nullopt;
  return member;
}

}  // namespace leasekeeper::storage
