// Helpers shared by the test files: scratch folders, file bytes, running the CLI tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace patchfuse::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with its contents when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);
bool file_exists(const std::string& path);
// Names in `dir`, sorted (to check that a failed command left nothing behind).
std::vector<std::string> list_dir(const std::string& dir);
// Whether any of `notes` (a converter report's) contains `needle`.
bool has_note(const std::vector<std::string>& notes, const std::string& needle);

// A copy of `size` bytes from `data` that ends where an unreadable page begins: a kernel that
// reads one byte past them faults (ASan does not see the masked vector loads that should stop
// there). It starts `size` bytes before a page boundary: for a size that is a multiple of 4,
// floats may be read from it.
class BytesBeforeGuardPage {
 public:
  BytesBeforeGuardPage(const void* data, size_t size);
  ~BytesBeforeGuardPage();
  BytesBeforeGuardPage(const BytesBeforeGuardPage&) = delete;
  BytesBeforeGuardPage& operator=(const BytesBeforeGuardPage&) = delete;
  const uint8_t* data() const { return data_; }

 private:
  uint8_t* base_ = nullptr;
  size_t mapped_ = 0;
  const uint8_t* data_ = nullptr;
};

struct CommandResult {
  int exit_code;
  std::string out;  // stdout
  std::string err;  // stderr
  double peak_rss_mb;  // largest resident set of the command and anything it started
};
// Runs `command` through /bin/sh; arguments must already be quoted.
CommandResult run_command(const std::string& command);

// Sanitizer runtimes add shadow memory and quarantines, so peak-memory bounds hold only in
// ordinary builds (PATCHFUSE_SANITIZE in CMake defines PATCHFUSE_SANITIZED).
#ifdef PATCHFUSE_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

}  // namespace patchfuse::testing
