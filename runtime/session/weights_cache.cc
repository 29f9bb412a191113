#include "runtime/session/weights_cache.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>

#include "runtime/core/output_file.h"
#include "weights_cache_generated.h"

namespace patchfuse {

namespace {

constexpr uint32_t kFormat = 1;
constexpr size_t kBlobAlignment = 64;  // what the backends' packed layouts and SIMD loads want
constexpr const char* kSeparator = " | ";

uint64_t checksum(const std::vector<CacheBlob>& blobs) {
  uint64_t h = 0;
  for (const CacheBlob& b : blobs) {
    h = content_hash(b.name.data(), b.name.size(), h);
    h = content_hash(b.data, b.size, h);
  }
  return h;
}

std::vector<CacheBlob> blobs_of(const cache::Entry& e) {
  std::vector<CacheBlob> out;
  if (e.blobs() == nullptr) return out;
  for (const cache::Blob* b : *e.blobs()) {
    CacheBlob c;
    if (b->name() != nullptr) c.name = b->name()->str();
    if (b->bytes() != nullptr) {
      c.data = b->bytes()->data();
      c.size = b->bytes()->size();
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> fields(const std::string& key) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t end = key.find(kSeparator, start);
    out.push_back(key.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + std::strlen(kSeparator);
  }
}

// The first field in which a stored key differs from the session's, for the report.
std::string first_difference(const std::string& stored, const std::string& wanted) {
  const std::vector<std::string> a = fields(stored), b = fields(wanted);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
    if (x != y) return "made for '" + x + "', this session has '" + y + "'";
  }
  return "same key";
}

}  // namespace

uint64_t content_hash(const void* data, size_t size, uint64_t seed) { return XXH3_64bits_withSeed(data, size, seed); }

std::string WeightsCache::load() {
  usable_ = false;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    return errno == ENOENT ? "no cache file" : cat("cannot read ", path_, ": ", std::strerror(errno));
  }
  auto mapped = MappedFile::open(path_, MappedFile::Reading::kWhole);
  if (!mapped.ok()) return mapped.error().message;
  maps_.push_back(std::move(*mapped));
  const MappedFile& f = maps_.back();
  flatbuffers::Verifier verifier(f.data(), f.size());
  if (f.size() == 0 || !cache::VerifyWeightsCacheBuffer(verifier)) {
    return "not a weights cache (a foreign, truncated or damaged file)";
  }
  const cache::WeightsCache* c = cache::GetWeightsCache(f.data());
  if (c->format() != kFormat) return cat("format ", c->format(), ", this library reads ", kFormat);
  usable_ = true;
  return "";
}

std::optional<std::vector<CacheBlob>> WeightsCache::find(const std::string& kind, std::string* why) {
  *why = load();
  if (!usable_) return std::nullopt;
  const cache::WeightsCache* c = cache::GetWeightsCache(maps_.back().data());
  const std::string key = scope_ + kSeparator + kind;
  std::string other;
  if (c->entries() != nullptr) {
    for (const cache::Entry* e : *c->entries()) {
      const std::string stored = e->key() != nullptr ? e->key()->str() : "";
      if (stored != key) {
        if (other.empty()) other = stored;
        continue;
      }
      std::vector<CacheBlob> blobs = blobs_of(*e);
      if (checksum(blobs) != e->checksum()) {
        *why = "corrupt (checksum mismatch)";
        return std::nullopt;
      }
      return blobs;
    }
  }
  *why = other.empty() ? "no entry for this kernel" : "stale: " + first_difference(other, key);
  return std::nullopt;
}

Status WeightsCache::store(const std::string& kind, const std::vector<CacheBlob>& blobs) {
  // A cache is a file: /dev/null or a FIFO would be written in place (output_file.h), to no use
  // or waiting for a reader.
  struct stat st {};
  PF_CHECK(::stat(path_.c_str(), &st) != 0 || S_ISREG(st.st_mode), Code::kIoError, path_,
           ": not a regular file, so no cache is written there");
  load();  // the file as it is now: another session may have added a kernel since
  const std::string key = scope_ + kSeparator + kind;
  size_t bytes = 1024;
  for (const CacheBlob& b : blobs) bytes += b.size + kBlobAlignment + b.name.size() + 64;
  flatbuffers::FlatBufferBuilder fb(bytes);
  std::vector<flatbuffers::Offset<cache::Entry>> entries;
  auto add = [&](const std::string& k, const std::vector<CacheBlob>& bs) {
    std::vector<flatbuffers::Offset<cache::Blob>> offsets;
    for (const CacheBlob& b : bs) {
      fb.ForceVectorAlignment(b.size, 1, kBlobAlignment);
      const auto data = fb.CreateVector(b.data, b.size);
      offsets.push_back(cache::CreateBlob(fb, fb.CreateString(b.name), data));
    }
    entries.push_back(cache::CreateEntry(fb, fb.CreateString(k), checksum(bs), fb.CreateVector(offsets)));
  };
  const cache::WeightsCache* c = usable_ ? cache::GetWeightsCache(maps_.back().data()) : nullptr;
  if (c != nullptr && c->entries() != nullptr) {
    for (const cache::Entry* e : *c->entries()) {
      const std::string stored = e->key() != nullptr ? e->key()->str() : "";
      const bool same_scope = stored.compare(0, scope_.size() + std::strlen(kSeparator), scope_ + kSeparator) == 0;
      const std::vector<CacheBlob> kept = blobs_of(*e);
      if (same_scope && stored != key && checksum(kept) == e->checksum()) add(stored, kept);
    }
  }
  add(key, blobs);
  fb.Finish(cache::CreateWeightsCache(fb, kFormat, fb.CreateVector(entries)), cache::WeightsCacheIdentifier());
  return write_file_atomically(path_, std::vector<uint8_t>(fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize()));
}

}  // namespace patchfuse
