#include "runtime/core/result.h"

namespace patchfuse {

const char* code_name(Code code) {
  switch (code) {  // no default: -Wswitch flags a new Code without a name
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kInvalidModel: return "invalid model";
    case Code::kUnsupported: return "unsupported";
    case Code::kIoError: return "I/O error";
    case Code::kOutOfMemory: return "out of memory";
    case Code::kInternal: return "internal error";
  }
  return "unknown";
}

}  // namespace patchfuse
