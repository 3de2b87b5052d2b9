#include "replay/replay.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/errors.h"

namespace leasekeeper {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// Deeper input is refused before parsing: nlohmann's parser recurses once
// per level, and no operation list is nested more than three deep.
constexpr int kMaxJsonDepth = 256;

constexpr int64_t kMaxRepeatCount = 100000;

// The operation's total length (name and ts included), per name.
struct Arity {
  absl::string_view name;
  size_t min_size;
  size_t max_size;
};
constexpr Arity kArities[] = {
    {"acquire", 5, 6}, {"renew", 5, 5},   {"release", 4, 4}, {"write", 6, 6},
    {"read", 4, 4},    {"inspect", 3, 3}, {"status", 3, 3},  {"repeat", 5, 5},
};

const Arity* FindArity(const json& name) {
  if (!name.is_string()) return nullptr;
  const std::string& text = name.get_ref<const std::string&>();
  for (const Arity& arity : kArities) {
    if (arity.name == text) return &arity;
  }
  return nullptr;
}

ojson Error(ErrorCode code) { return absl::StrCat("error: ", ErrorText(code)); }

ojson Error(const absl::Status& status) {
  return absl::StrCat("error: ", status.message());
}

bool IsInteger(const json& value) { return value.is_number_integer(); }

// An integer JSON value, saturated to int64's range (a uint64 above
// INT64_MAX becomes INT64_MAX, which every range check then refuses).
// REQUIRES: IsInteger(value).
int64_t SaturatedInt(const json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
  }
  return value.get<int64_t>();
}

bool IsName(const json& value) {
  return value.is_string() && !value.get_ref<const std::string&>().empty();
}

const std::string& Str(const json& value) {
  return value.get_ref<const std::string&>();
}

// A token is an integer >= 1; std::nullopt otherwise.
std::optional<FencingToken> AsToken(const json& value) {
  if (!IsInteger(value)) return std::nullopt;
  if (value.is_number_unsigned()) {
    const uint64_t token = value.get<uint64_t>();
    if (token < 1) return std::nullopt;
    return token;
  }
  const int64_t token = value.get<int64_t>();
  if (token < 1) return std::nullopt;
  return static_cast<FencingToken>(token);
}

ojson ModeName(LockMode mode) { return std::string(LockModeName(mode)); }

ojson VictimList(const std::vector<std::string>& victims) {
  ojson list = ojson::array();
  for (const std::string& victim : victims) list.push_back(victim);
  return list;
}

ojson HolderJson(const HolderView& holder, bool with_lock) {
  ojson entry = ojson::array();
  entry.push_back(with_lock ? holder.lock : holder.client);
  entry.push_back(ModeName(holder.mode));
  entry.push_back(holder.token);
  entry.push_back(holder.expires_at);
  return entry;
}

}  // namespace

ojson AcquireJson(const AcquireOutcome& outcome) {
  ojson result = ojson::array();
  switch (outcome.kind) {
    case AcquireOutcome::Kind::kGranted:
      result = {"granted", outcome.token, outcome.expires_at};
      break;
    case AcquireOutcome::Kind::kQueued:
      result = {"queued", outcome.position};
      break;
    case AcquireOutcome::Kind::kDeadlock:
      return ojson::array({"deadlock", VictimList(outcome.aborted)});
  }
  if (!outcome.aborted.empty()) result.push_back(VictimList(outcome.aborted));
  return result;
}

ojson InspectJson(const LockView& view) {
  ojson holders = ojson::array();
  for (const HolderView& holder : view.holders) {
    holders.push_back(HolderJson(holder, /*with_lock=*/false));
  }
  ojson queue = ojson::array();
  for (const WaiterView& waiter : view.queue) {
    queue.push_back(ojson::array({waiter.client, ModeName(waiter.mode)}));
  }
  ojson result = ojson::object();
  result["holders"] = std::move(holders);
  result["queue"] = std::move(queue);
  return result;
}

ojson StatusJson(const ClientView& view) {
  ojson holds = ojson::array();
  for (const HolderView& holder : view.holds) {
    holds.push_back(HolderJson(holder, /*with_lock=*/true));
  }
  ojson result = ojson::object();
  result["age"] = view.age ? ojson(*view.age) : ojson(nullptr);
  result["holds"] = std::move(holds);
  result["waiting"] = view.waiting ? ojson(*view.waiting) : ojson(nullptr);
  return result;
}

namespace {

// A repeat template's string argument, split into literal text and
// placeholders so that each run only formats numbers.
class PlaceholderString {
 public:
  // Parses {i}, {i+A}, {i%K}, {i+A%K}; any other brace text is literal.
  // nullopt when a placeholder has K = 0 (no value can be formed).
  static std::optional<PlaceholderString> Parse(const std::string& text) {
    PlaceholderString parsed;
    std::string literal;
    size_t pos = 0;
    while (pos < text.size()) {
      Piece piece;
      size_t end = 0;
      if (text[pos] == '{' && MatchPlaceholder(text, pos, piece, end)) {
        if (piece.modulus && *piece.modulus == 0) return std::nullopt;
        piece.literal = std::move(literal);
        literal.clear();
        parsed.pieces_.push_back(std::move(piece));
        pos = end;
      } else {
        literal.push_back(text[pos++]);
      }
    }
    parsed.tail_ = std::move(literal);
    return parsed;
  }

  std::string Format(int64_t i) const {
    std::string out;
    for (const Piece& piece : pieces_) {
      out += piece.literal;
      unsigned __int128 value = static_cast<unsigned __int128>(i) + piece.add;
      if (piece.modulus) value %= *piece.modulus;
      out += ToDecimal(value);
    }
    out += tail_;
    return out;
  }

 private:
  struct Piece {
    std::string literal;  // text before the placeholder
    unsigned __int128 add = 0;
    std::optional<unsigned __int128> modulus;
  };

  // Numbers are kept to 30 digits so (i + A) cannot overflow 128 bits.
  static constexpr size_t kMaxDigits = 30;

  static bool ParseDigits(const std::string& text, size_t& pos,
                          unsigned __int128& value) {
    const size_t start = pos;
    value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' &&
           pos - start < kMaxDigits) {
      value = value * 10 + static_cast<unsigned>(text[pos] - '0');
      ++pos;
    }
    return pos > start &&
           (pos >= text.size() || text[pos] < '0' || text[pos] > '9');
  }

  static bool MatchPlaceholder(const std::string& text, size_t start,
                               Piece& piece, size_t& end) {
    size_t pos = start + 1;
    if (pos >= text.size() || text[pos] != 'i') return false;
    ++pos;
    if (pos < text.size() && text[pos] == '+') {
      ++pos;
      if (!ParseDigits(text, pos, piece.add)) return false;
    }
    if (pos < text.size() && text[pos] == '%') {
      ++pos;
      unsigned __int128 modulus = 0;
      if (!ParseDigits(text, pos, modulus)) return false;
      piece.modulus = modulus;
    }
    if (pos >= text.size() || text[pos] != '}') return false;
    end = pos + 1;
    return true;
  }

  static std::string ToDecimal(unsigned __int128 value) {
    if (value == 0) return "0";
    char buffer[40];
    int length = 0;
    while (value > 0) {
      buffer[length++] = static_cast<char>('0' + static_cast<int>(value % 10));
      value /= 10;
    }
    return std::string(std::make_reverse_iterator(buffer + length),
                       std::make_reverse_iterator(buffer));
  }

  std::vector<Piece> pieces_;
  std::string tail_;
};

// Counts brackets outside strings; true if nesting stays within the limit.
bool NestingWithinLimit(absl::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// Builds the document like nlohmann's own DOM parser, except that an
// integer literal too large for 64 bits stays an integer (saturated to the
// nearest 64-bit value) instead of becoming a float: the contract's integers
// are unbounded, so 2**70 is an out-of-range ttl ("invalid ttl") and a valid
// token, not a non-integer.
class BigIntegerSax {
 public:
  explicit BigIntegerSax(json& result) : dom_(result) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) {
    return dom_.number_integer(value);
  }
  bool number_unsigned(json::number_unsigned_t value) {
    return dom_.number_unsigned(value);
  }
  bool number_float(json::number_float_t value, const std::string& text) {
    if (text.find_first_of(".eE") == std::string::npos) {
      return text[0] == '-'
                 ? dom_.number_integer(std::numeric_limits<int64_t>::min())
                 : dom_.number_unsigned(std::numeric_limits<uint64_t>::max());
    }
    return dom_.number_float(value, text);
  }
  bool string(std::string& value) { return dom_.string(value); }
  bool binary(json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t size) { return dom_.start_object(size); }
  bool key(std::string& value) { return dom_.key(value); }
  bool end_object() { return dom_.end_object(); }
  bool start_array(std::size_t size) { return dom_.start_array(size); }
  bool end_array() { return dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error) {
    return dom_.parse_error(position, last_token, error);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
};

}  // namespace

ojson Replay::Apply(const json& operation) {
  if (!operation.is_array() || operation.empty()) {
    return Error(ErrorCode::kInvalidArguments);
  }
  const Arity* arity = FindArity(operation[0]);
  if (arity == nullptr) return "error: unknown operation";
  if (operation.size() < 2 || !IsInteger(operation[1])) {
    return Error(ErrorCode::kInvalidArguments);
  }
  const int64_t ts = SaturatedInt(operation[1]);
  if (ts < kMinTick || ts > kMaxTick || ts < machine_.table().now()) {
    return Error(ErrorCode::kInvalidArguments);
  }
  // Rule 1: time passes even for an operation that then fails validation.
  (void)machine_.Apply(Operation{ts, op::Advance{}});
  if (operation.size() < arity->min_size ||
      operation.size() > arity->max_size) {
    return Error(ErrorCode::kInvalidArguments);
  }
  const absl::string_view name = arity->name;
  if (name == "acquire") return ApplyAcquire(ts, operation);
  if (name == "renew") return ApplyRenew(ts, operation);
  if (name == "release") return ApplyRelease(ts, operation);
  if (name == "write") return ApplyWrite(ts, operation);
  if (name == "read") return ApplyRead(ts, operation);
  if (name == "inspect") return ApplyInspect(ts, operation);
  if (name == "status") return ApplyStatus(ts, operation);
  return ApplyRepeat(ts, operation);
}

ojson Replay::ApplyAcquire(Tick ts, const json& op) {
  if (!IsName(op[2]) || !IsName(op[3]) || !IsInteger(op[4])) {
    return Error(ErrorCode::kInvalidArguments);
  }
  const int64_t ttl = SaturatedInt(op[4]);
  LockMode mode = LockMode::kExclusive;
  if (op.size() == 6) {
    std::optional<LockMode> parsed =
        op[5].is_string() ? ParseLockMode(Str(op[5])) : std::nullopt;
    if (!parsed) return Error(ErrorCode::kInvalidArguments);
    mode = *parsed;
  }
  absl::StatusOr<Reply> reply = machine_.Apply(
      Operation{ts, op::Acquire{Str(op[2]), Str(op[3]), ttl, mode}});
  if (!reply.ok()) return Error(reply.status());
  return AcquireJson(std::get<AcquireOutcome>(*reply));
}

ojson Replay::ApplyRenew(Tick ts, const json& op) {
  if (!IsName(op[2]) || !IsName(op[3]) || !IsInteger(op[4])) {
    return Error(ErrorCode::kInvalidArguments);
  }
  const int64_t ttl = SaturatedInt(op[4]);
  absl::StatusOr<Reply> reply =
      machine_.Apply(Operation{ts, op::Renew{Str(op[2]), Str(op[3]), ttl}});
  if (!reply.ok()) return Error(reply.status());
  const auto& renewed = std::get<RenewOutcome>(*reply);
  return ojson::array({"renewed", renewed.token, renewed.expires_at});
}

ojson Replay::ApplyRelease(Tick ts, const json& op) {
  if (!IsName(op[2]) || !IsName(op[3])) {
    return Error(ErrorCode::kInvalidArguments);
  }
  absl::StatusOr<Reply> reply =
      machine_.Apply(Operation{ts, op::Release{Str(op[2]), Str(op[3])}});
  if (!reply.ok()) return Error(reply.status());
  return std::get<ReleaseOutcome>(*reply) == ReleaseOutcome::kReleased
             ? "released"
             : "withdrawn";
}

ojson Replay::ApplyWrite(Tick ts, const json& op) {
  std::optional<FencingToken> token = AsToken(op[5]);
  if (!IsName(op[2]) || !IsName(op[3]) || !IsName(op[4]) || !token) {
    return Error(ErrorCode::kInvalidArguments);
  }
  absl::StatusOr<Reply> reply = machine_.Apply(
      Operation{ts, op::Write{Str(op[2]), Str(op[3]), Str(op[4]), *token}});
  if (!reply.ok()) return Error(reply.status());
  return "ok";
}

ojson Replay::ApplyRead(Tick ts, const json& op) {
  if (!IsName(op[2]) || !IsName(op[3])) {
    return Error(ErrorCode::kInvalidArguments);
  }
  absl::StatusOr<std::optional<std::string>> value =
      machine_.Read(ts, Str(op[2]), Str(op[3]));
  if (!value.ok()) return Error(value.status());
  return *value ? ojson(**value) : ojson(nullptr);
}

ojson Replay::ApplyInspect(Tick ts, const json& op) {
  if (!IsName(op[2])) return Error(ErrorCode::kInvalidArguments);
  absl::StatusOr<LockView> view = machine_.Inspect(ts, Str(op[2]));
  if (!view.ok()) return Error(view.status());
  return InspectJson(*view);
}

ojson Replay::ApplyStatus(Tick ts, const json& op) {
  if (!IsName(op[2])) return Error(ErrorCode::kInvalidArguments);
  absl::StatusOr<ClientView> view = machine_.Status(ts, Str(op[2]));
  if (!view.ok()) return Error(view.status());
  return StatusJson(*view);
}

ojson Replay::ApplyRepeat(Tick ts, const json& op) {
  const json& template_op = op[2];
  const json& count_json = op[3];
  const json& step_json = op[4];
  if (!template_op.is_array() || template_op.empty() ||
      (template_op[0].is_string() && Str(template_op[0]) == "repeat") ||
      !IsInteger(count_json) || !IsInteger(step_json)) {
    return Error(ErrorCode::kInvalidArguments);
  }
  const int64_t count = SaturatedInt(count_json);
  const int64_t step = SaturatedInt(step_json);
  if (count < 1 || count > kMaxRepeatCount || step < 0 ||
      (count > 1 && step > (kMaxTick - ts) / (count - 1))) {
    return Error(ErrorCode::kInvalidArguments);
  }
  // Only string arguments carry placeholders; the name is taken as it is.
  std::vector<std::optional<PlaceholderString>> patterns(template_op.size());
  for (size_t k = 1; k < template_op.size(); ++k) {
    if (!template_op[k].is_string()) continue;
    patterns[k] = PlaceholderString::Parse(Str(template_op[k]));
    if (!patterns[k]) return Error(ErrorCode::kInvalidArguments);
  }

  ojson tally = ojson::object();
  int64_t aborted = 0;
  json run = json::array();
  for (int64_t i = 0; i < count; ++i) {
    run = json::array({template_op[0], ts + i * step});
    for (size_t k = 1; k < template_op.size(); ++k) {
      run.push_back(patterns[k] ? json(patterns[k]->Format(i))
                                : template_op[k]);
    }
    const ojson result = Apply(run);
    std::string key = "other";
    if (result.is_string()) {
      key = result.get<std::string>();
    } else if (result.is_array() && !result.empty() && result[0].is_string()) {
      key = result[0].get<std::string>();
      // Victim lists: the last element of granted/queued, the second of
      // deadlock.
      const ojson& last = result.back();
      if (last.is_array()) aborted += static_cast<int64_t>(last.size());
    }
    auto [it, inserted] = tally.emplace(key, 0);
    it.value() = it.value().get<int64_t>() + 1;
  }
  ojson result = ojson::object();
  result["ops"] = count;
  result["results"] = std::move(tally);
  if (aborted > 0) result["aborted"] = aborted;
  return result;
}

ojson RunOperations(const json& operations) {
  Replay replay;
  ojson results = ojson::array();
  for (const json& operation : operations) {
    results.push_back(replay.Apply(operation));
  }
  return results;
}

absl::StatusOr<std::string> RunReplayText(absl::string_view input) {
  if (!NestingWithinLimit(input)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input is nested deeper than ", kMaxJsonDepth, " levels"));
  }
  // nlohmann reports parse errors as exceptions; they stop here.
  json operations;
  BigIntegerSax sax(operations);
  try {
    json::sax_parse(input.begin(), input.end(), &sax);
  } catch (const json::exception& error) {
    // Syntax errors, and numbers a double cannot hold (1e400), which this
    // parser cannot represent and so refuses with the whole input.
    return absl::InvalidArgumentError(
        absl::StrCat("input is not valid JSON: ", error.what()));
  }
  if (!operations.is_array()) {
    return absl::InvalidArgumentError(
        "input must be one JSON array of operations");
  }
  return RunOperations(operations)
      .dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace leasekeeper
