#include "server/holder_labels.h"

#include <utility>

namespace leasekeeper::server {

void HolderLabels::Set(const Key& key, const std::string& label) {
  if (label.empty()) {
    erase(key);
    return;
  }
  auto [it, inserted] = labels_.try_emplace(key, label);
  if (!inserted) {
    if (it->second == label) return;
    it->second = label;
  }
  Log(storage::srec::LabelSet{key.first, key.second, label});
}

size_t HolderLabels::erase(const Key& key) {
  if (labels_.erase(key) == 0) return 0;
  Log(storage::srec::LabelCleared{key.first, key.second});
  return 1;
}

void HolderLabels::SaveTo(storage::ServerState& state) const {
  state.labels.reserve(state.labels.size() + labels_.size());
  for (const auto& [key, label] : labels_) {
    state.labels.push_back(storage::ServerState::Label{
        .client = key.first, .lock = key.second, .label = label});
  }
}

size_t HolderLabels::Restore(std::vector<storage::ServerState::Label> labels,
                             absl::FunctionRef<bool(const Key&)> live) {
  labels_.clear();
  size_t dropped = 0;
  for (storage::ServerState::Label& l : labels) {
    Key key(std::move(l.client), std::move(l.lock));
    if (l.label.empty() || !live(key)) {
      ++dropped;
      continue;
    }
    labels_[std::move(key)] = std::move(l.label);
  }
  return dropped;
}

void HolderLabels::Log(storage::ServerRecord::Body body) {
  // Records carry the tick of the operation they follow.
  log_.Log(storage::ServerRecord{log_.table().now(), std::move(body)});
}

}  // namespace leasekeeper::server
