// Error handling inside the C++ code: a status code grouped by kind, a message that names the
// file/field/value/rule, and [[nodiscard]] Result<T> (after ExecuTorch's runtime/core/result.h).
// Nothing here throws; the C API (issue 3) maps Code onto its public status enum.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace patchfuse {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // the caller passed something unusable (flags, shapes, null buffers)
  kInvalidModel,     // a model / checkpoint / config file breaks a rule
  kUnsupported,      // well-formed but not something we can do (dtype, architecture, CPU)
  kIoError,          // open / read / write / rename failed
  kOutOfMemory,
  kInternal,         // a third-party library failed in a way we did not anticipate
};

const char* code_name(Code code);

struct Error {
  Code code = Code::kInternal;
  std::string message;
};

// Concatenates streamable values: cat("tensor ", name, " has ", n, " bytes").
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}   // NOLINT: implicit by design, like std::optional
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT
  bool ok() const { return !failed_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

inline Error make_error(Code code, std::string message) { return Error{code, std::move(message)}; }

}  // namespace patchfuse

// Returns an Error built from the remaining arguments when `cond` is false.
#define PF_CHECK(cond, code, ...) \
  do {                            \
    if (!(cond)) return ::patchfuse::make_error((code), ::patchfuse::cat(__VA_ARGS__)); \
  } while (0)

#define PF_CONCAT_INNER(a, b) a##b
#define PF_CONCAT(a, b) PF_CONCAT_INNER(a, b)

// Propagates a failed Status.
#define PF_RETURN_IF_ERROR(expr)                              \
  do {                                                        \
    auto pf_status_ = (expr);                                 \
    if (!pf_status_.ok()) return pf_status_.error();          \
  } while (0)

// `PF_ASSIGN_OR_RETURN(auto x, make_x());` binds the value or propagates the Error.
#define PF_ASSIGN_OR_RETURN(lhs, expr) PF_ASSIGN_OR_RETURN_IMPL(PF_CONCAT(pf_result_, __LINE__), lhs, expr)
#define PF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.error();             \
  lhs = std::move(tmp).value()
