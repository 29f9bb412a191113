// What a session makes per input size (the resize tables, the encoder input's grid terms), kept for
// the kSizes most recently used sizes: an app that alternates between a few sizes (a camera preview
// and a still capture, each prepared once) makes each once, and memory stays bounded when it does not.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/core/result.h"

namespace patchfuse {

template <class T>
class RecentlyUsed {
 public:
  static constexpr size_t kSizes = 4;

  // The kept value `matches` accepts, else the one make() returns (a Result<T>), which takes the
  // place of the least recently used one when kSizes are kept. The pointer is valid until the next get().
  template <class Matches, class Make>
  Result<const T*> get(const Matches& matches, const Make& make) {
    ++uses_;
    for (auto& [used, value] : kept_) {
      if (matches(value)) {
        used = uses_;
        return &value;
      }
    }
    PF_ASSIGN_OR_RETURN(T made, make());
    if (kept_.size() == kSizes) {
      kept_.erase(std::min_element(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) { return a.first < b.first; }));
    }
    kept_.emplace_back(uses_, std::move(made));
    return &kept_.back().second;
  }

 private:
  std::vector<std::pair<uint64_t, T>> kept_;  // (last use, value)
  uint64_t uses_ = 0;
};

}  // namespace patchfuse
