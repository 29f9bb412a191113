// The optional packed-weights cache (pf_session_options.weights_cache; schema/weights_cache.fbs):
// what a session derives from a module's weights per kernel ("rows", "still", "video": the folded
// and quantized weights, and the backend's packed layout where it takes one back) kept in a file
// the app names, so a later session maps it instead of computing it.
// Trust: an entry is used only when its key equals the session's in full (library and backend
// versions, the CPU's ISA as the backend resolved it, precision, path, threads, the module's
// geometry and a hash of its weight bytes and normalization constants: the content, not a file
// name) and the XXH3 checksum of its blobs matches. Anything else is reported and rebuilt.
// Growth: the file holds one scope (everything in the key but the kernel kind); a session of
// another scope rewrites it with its own entries only. Writes are atomic (temp file + rename), so
// readers never see half a file; concurrent writers leave one of their files whole.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/core/mapped_file.h"
#include "runtime/core/result.h"

namespace patchfuse {

struct CacheBlob {
  std::string name;
  const uint8_t* data = nullptr;  // into the mapped file (found) or the caller's memory (stored)
  size_t size = 0;
};

class WeightsCache {
 public:
  // `scope`: the key's fields shared by all of a session's kernels, " | "-separated.
  WeightsCache(std::string path, std::string scope) : path_(std::move(path)), scope_(std::move(scope)) {}

  // The blobs of `kind`, verified; nullopt with `why` ("no cache file", "stale (...)", "corrupt
  // (...)", ...) otherwise. Found blobs stay valid while this object lives.
  std::optional<std::vector<CacheBlob>> find(const std::string& kind, std::string* why);
  // Rewrites the file with this scope's entries, `kind`'s replaced by `blobs`.
  Status store(const std::string& kind, const std::vector<CacheBlob>& blobs);

  const std::string& path() const { return path_; }

 private:
  // The file as it is now, mapped and verified; "" or why it cannot be used.
  std::string load();
  std::string path_, scope_;
  std::vector<MappedFile> maps_;  // the current file last; earlier ones stay mapped for blobs handed out
  bool usable_ = false;           // maps_.back() is a verified cache
};

// XXH3-64 of `size` bytes, continuing from `seed` (chains several buffers into one hash).
uint64_t content_hash(const void* data, size_t size, uint64_t seed = 0);

}  // namespace patchfuse
