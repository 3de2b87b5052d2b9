#include "security/policy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace leasekeeper::security {
namespace {

using Json = nlohmann::json;

absl::Status Error(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("policy: ", path, path.empty() ? "" : ": ", problem));
}

std::string Quoted(absl::string_view text) {
  return Json(std::string(text))
      .dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
}

// Refuses keys of `object` outside `allowed`.
absl::Status CheckKeys(const Json& object, absl::string_view path,
                       std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const char* name : allowed) known = known || key == name;
    if (!known) {
      return Error(
          path, absl::StrCat("unknown key ", Quoted(key), " (expected one of: ",
                             absl::StrJoin(allowed, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<IdentityGrant> ParseGrant(const Json& entry,
                                         const std::string& path) {
  if (!entry.is_object()) return Error(path, "must be an object");
  if (absl::Status status =
          CheckKeys(entry, path, {"lock_prefixes", "admin", "description"});
      !status.ok()) {
    return status;
  }
  IdentityGrant grant;
  if (auto it = entry.find("admin"); it != entry.end()) {
    if (!it->is_boolean()) {
      return Error(path + ".admin", "must be true or false");
    }
    grant.admin = it->get<bool>();
  }
  if (auto it = entry.find("description");
      it != entry.end() && !it->is_string()) {
    return Error(path + ".description", "must be a string");
  }
  if (auto it = entry.find("lock_prefixes"); it != entry.end()) {
    const std::string prefixes_path = path + ".lock_prefixes";
    if (!it->is_array()) {
      return Error(prefixes_path, "must be an array of strings");
    }
    if (it->size() > kMaxPrefixesPerIdentity) {
      return Error(prefixes_path,
                   absl::StrCat("has ", it->size(), " prefixes; the limit is ",
                                kMaxPrefixesPerIdentity));
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string element_path = absl::StrCat(prefixes_path, "[", i, "]");
      const Json& prefix = (*it)[i];
      if (!prefix.is_string()) return Error(element_path, "must be a string");
      std::string text = prefix.get<std::string>();
      if (text.size() > kMaxPrefixBytes) {
        return Error(element_path,
                     absl::StrCat("longer than ", kMaxPrefixBytes, " bytes"));
      }
      if (!seen.insert(text).second) {
        return Error(element_path,
                     absl::StrCat("duplicate prefix ", Quoted(text)));
      }
      grant.lock_prefixes.push_back(std::move(text));
    }
  }
  if (!grant.admin && grant.lock_prefixes.empty()) {
    return Error(path,
                 "grants nothing: give lock_prefixes, admin: true, or remove "
                 "the identity");
  }
  return grant;
}

}  // namespace

absl::StatusOr<Policy> Policy::Parse(absl::string_view json_text) {
  if (json_text.size() > kMaxPolicyBytes) {
    return Error("", absl::StrCat("larger than ", kMaxPolicyBytes, " bytes"));
  }
  // nlohmann keeps the last of duplicate keys; a duplicated identity would
  // silently drop a grant, so the parser callback refuses duplicates.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  Json::parser_callback_t on_event =
      [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
        switch (event) {
          case Json::parse_event_t::object_start:
            open_objects.emplace_back();
            break;
          case Json::parse_event_t::object_end:
            if (!open_objects.empty()) open_objects.pop_back();
            break;
          case Json::parse_event_t::key:
            if (!open_objects.empty() && parsed.is_string() &&
                !open_objects.back().insert(parsed.get<std::string>()).second &&
                duplicate.empty()) {
              duplicate = parsed.get<std::string>();
            }
            break;
          default:
            break;
        }
        return true;
      };
  Json root;
  try {
    root = Json::parse(json_text.begin(), json_text.end(), on_event);
  } catch (const Json::exception& error) {
    // nlohmann's message names the byte offset ("at line 3, column 5").
    return Error("", absl::StrCat("not valid JSON: ", error.what()));
  }
  if (!duplicate.empty()) {
    return Error("", absl::StrCat("duplicate key ", Quoted(duplicate)));
  }
  if (!root.is_object()) return Error("", "must be a JSON object");
  if (absl::Status status =
          CheckKeys(root, "", {"version", "description", "identities"});
      !status.ok()) {
    return status;
  }
  if (auto it = root.find("version"); it != root.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() != 1) {
      return Error("version", "must be 1");
    }
  }
  if (auto it = root.find("description");
      it != root.end() && !it->is_string()) {
    return Error("description", "must be a string");
  }
  auto identities = root.find("identities");
  if (identities == root.end()) {
    return Error("", "missing \"identities\" (an object of identity: grant)");
  }
  if (!identities->is_object()) {
    return Error("identities", "must be an object of identity: grant");
  }
  if (identities->size() > kMaxPolicyIdentities) {
    return Error("identities", absl::StrCat("has ", identities->size(),
                                            " identities; the limit is ",
                                            kMaxPolicyIdentities));
  }
  Policy policy;
  for (const auto& [identity, entry] : identities->items()) {
    const std::string path = absl::StrCat("identities.", Quoted(identity));
    if (identity.empty()) return Error(path, "an identity must not be empty");
    if (identity.size() > kMaxIdentityBytes) {
      return Error(path,
                   absl::StrCat("longer than ", kMaxIdentityBytes, " bytes"));
    }
    absl::StatusOr<IdentityGrant> grant = ParseGrant(entry, path);
    if (!grant.ok()) return grant.status();
    policy.grants_.emplace(identity, std::move(*grant));
  }
  return policy;
}

absl::StatusOr<Policy> Policy::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    return absl::ErrnoToStatus(error,
                               absl::StrCat("cannot read policy file ", path));
  }
  std::string text;
  char buffer[64 * 1024];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    text.append(buffer, file.gcount());
    if (text.size() > kMaxPolicyBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": policy: larger than ", kMaxPolicyBytes, " bytes"));
    }
  }
  if (file.bad()) {
    return absl::DataLossError(
        absl::StrCat("error reading policy file ", path));
  }
  absl::StatusOr<Policy> policy = Parse(text);
  if (!policy.ok()) {
    return absl::Status(policy.status().code(),
                        absl::StrCat(path, ": ", policy.status().message()));
  }
  return policy;
}

const IdentityGrant* Policy::Find(absl::string_view identity) const {
  auto it = grants_.find(identity);
  return it == grants_.end() ? nullptr : &it->second;
}

bool Policy::MayUseLock(absl::string_view identity,
                        absl::string_view name) const {
  const IdentityGrant* grant = Find(identity);
  if (grant == nullptr) return false;
  for (const std::string& prefix : grant->lock_prefixes) {
    if (absl::StartsWith(name, prefix)) return true;
  }
  return false;
}

bool Policy::IsAdmin(absl::string_view identity) const {
  const IdentityGrant* grant = Find(identity);
  return grant != nullptr && grant->admin;
}

}  // namespace leasekeeper::security
