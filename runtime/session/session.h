// A session: one module, one backend, one precision, one path; weights packed once at creation.
// This is where the options are resolved (auto backend, auto precision) and checked against the
// fusion rules; the backends only build and run kernels.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/backends/backend.h"

namespace patchfuse {

struct SessionOptions {
  std::optional<BackendId> backend;      // nullopt: auto
  int threads = 1;
  std::optional<Precision> precision;    // nullopt: auto
  bool fused = true;
};

class Session {
 public:
  // `module` must outlive the session.
  static Result<std::unique_ptr<Session>> create(const ModuleView& module, const SessionOptions& options);

  // Checks the arguments, then runs the kernel. Not thread-safe: one thread at a time.
  Status run(const float* input, size_t n, float* output);

  const Backend& backend() const { return *backend_; }
  Precision precision() const { return precision_; }
  bool fused() const { return fused_; }
  int threads() const { return kernel_->threads(); }
  const std::string& detail() const { return detail_; }
  const std::string& isa() const { return isa_; }
  const std::string& note() const { return note_; }
  const ModuleView& module() const { return *module_; }

 private:
  Session() = default;
  const ModuleView* module_ = nullptr;
  const Backend* backend_ = nullptr;
  Precision precision_ = Precision::kF32;
  bool fused_ = true;
  std::unique_ptr<Kernel> kernel_;
  std::string detail_, isa_, note_;
};

}  // namespace patchfuse
