// Constants of the .pfb model file shared by its writer (converter) and its reader (runtime).
#pragma once

#include <cstddef>
#include <cstdint>

namespace patchfuse {

// Bumped when a reader must refuse files of another version. Readers accept 1..kSchemaVersion.
constexpr uint32_t kSchemaVersion = 1;

// Every tensor's bytes start at a multiple of this offset from the file start (cache line, and
// enough for AVX-512 / NEON aligned loads when the file is mmapped at a page boundary).
constexpr size_t kTensorAlignment = 64;

// Bytes that must follow the end of the last tensor inside the file, so a backend that reads a
// few bytes past an array (XNNPACK's XNN_EXTRA_BYTES is 16) never leaves the mapping.
constexpr size_t kTailSlack = 64;

// Where a model buffer itself must start in memory: FlatBuffers reads the file's scalars (up to
// 64-bit) in place, and its alignment checks are relative to the buffer start. An mmap is
// page-aligned; caller memory must be at least this.
constexpr size_t kBufferAlignment = 8;

}  // namespace patchfuse
