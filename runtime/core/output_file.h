// Writing outputs (converter and tools) so that a failed command leaves nothing behind: bytes go to a temporary file in
// the destination folder (same filesystem), are flushed, then renamed over the destination (over a link's file, keeping
// the link). An existing output that is not a file (/dev/null, /dev/stdout, a FIFO) is written in place instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/result.h"

namespace patchfuse {

// Refuses when `output` is one of `inputs` (same device and inode, so links and ./x count too); a
// path that does not exist, "" included, is never an input.
Status check_not_an_input(const std::string& output, const std::vector<std::string>& inputs);

Status write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace patchfuse
