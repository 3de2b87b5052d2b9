// libFuzzer target over the operation codec (storage/operation_codec.h):
// arbitrary bytes go to DecodeLogEntry, as recovery hands it each log
// record.
//
// It must never crash, hang, leak or trip ASan/UBSan, and it checks the
// codec's invariants on what decodes: the entry re-encodes, the encoding
// decodes to the same entry, and encoding that again gives the same bytes
// (the input itself may differ: a version-1 entry, or a varint written
// with redundant continuation bytes, is read but never written).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/operation_codec.h"
#include "storage/overloaded.h"

namespace {

using leasekeeper::Operation;
using leasekeeper::storage::DecodeLogEntry;
using leasekeeper::storage::EncodeOperation;
using leasekeeper::storage::EncodeRestartGrace;
using leasekeeper::storage::EncodeServerRecord;
using leasekeeper::storage::LogEntry;
using leasekeeper::storage::RestartGrace;
using leasekeeper::storage::SameOperation;
using leasekeeper::storage::SameServerRecord;
using leasekeeper::storage::ServerRecord;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "operation_codec_fuzzer: %s\n", what);
  std::abort();
}

std::string Encode(const LogEntry& entry) {
  std::string out;
  std::visit(leasekeeper::storage::Overloaded{
                 [&](const Operation& op) { EncodeOperation(op, out); },
                 [&](const RestartGrace& g) { EncodeRestartGrace(g, out); },
                 [&](const ServerRecord& r) { EncodeServerRecord(r, out); },
             },
             entry);
  return out;
}

bool Same(const LogEntry& a, const LogEntry& b) {
  if (a.index() != b.index()) return false;
  if (const auto* op = std::get_if<Operation>(&a)) {
    return SameOperation(*op, std::get<Operation>(b));
  }
  if (const auto* grace = std::get_if<RestartGrace>(&a)) {
    const auto& other = std::get<RestartGrace>(b);
    return grace->at == other.at && grace->grace_ticks == other.grace_ticks;
  }
  return SameServerRecord(std::get<ServerRecord>(a),
                          std::get<ServerRecord>(b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<LogEntry> decoded = DecodeLogEntry(input);
  if (!decoded.ok()) {
    const absl::StatusCode code = decoded.status().code();
    if (code != absl::StatusCode::kDataLoss &&
        code != absl::StatusCode::kFailedPrecondition) {
      Fail("a refusal that is neither DataLoss nor FailedPrecondition");
    }
    return 0;
  }
  const std::string encoded = Encode(*decoded);
  absl::StatusOr<LogEntry> again = DecodeLogEntry(encoded);
  if (!again.ok()) Fail("the re-encoding of a decoded entry does not decode");
  if (!Same(*decoded, *again)) Fail("the re-encoding decodes to another entry");
  if (Encode(*again) != encoded) Fail("encoding is not stable");
  return 0;
}
