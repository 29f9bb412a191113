#include "tests/support/test_util.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace patchfuse::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/patchfuse-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool has_note(const std::vector<std::string>& notes, const std::string& needle) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

BytesBeforeGuardPage::BytesBeforeGuardPage(const void* data, size_t size) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = (size + page - 1) / page;
  mapped_ = (pages + 1) * page;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap failed: " + std::string(std::strerror(errno)));
  base_ = static_cast<uint8_t*>(p);
  if (::mprotect(base_ + pages * page, page, PROT_NONE) != 0) {
    throw std::runtime_error("mprotect failed: " + std::string(std::strerror(errno)));
  }
  uint8_t* at = base_ + pages * page - size;
  std::memcpy(at, data, size);
  data_ = at;
}

BytesBeforeGuardPage::~BytesBeforeGuardPage() { ::munmap(base_, mapped_); }

CommandResult run_command(const std::string& command) {
  TempDir io;
  const std::string full = command + " >'" + (io / "out") + "' 2>'" + (io / "err") + "' </dev/null";
  // fork + wait4 rather than std::system: wait4 reports this command's own peak RSS (the shell's
  // and its reaped children's), where getrusage(RUSAGE_CHILDREN) would mix in earlier commands.
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed for " + command);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", full.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) throw std::runtime_error("wait4 failed for " + command);
  }
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.peak_rss_mb = usage.ru_maxrss / 1024.0;  // KiB on Linux
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(io / "out");
  r.err = slurp(io / "err");
  return r;
}

}  // namespace patchfuse::testing
