#include "runtime/core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>

namespace patchfuse {

Status check_not_an_input(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return {};  // does not exist yet: cannot be an input
  for (const std::string& in : inputs) {
    struct stat st {};
    if (::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino) {
      return make_error(Code::kInvalidArgument,
                        cat(output, ": output is the input file ", in, "; refusing to overwrite an input"));
    }
  }
  return {};
}

namespace {

// Writes all of `bytes` to `fd`; on failure closes it and says how far it got.
Status write_all(int fd, const std::string& path, const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return make_error(Code::kIoError, cat(path, ": write failed after ", done, " bytes: ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

Status write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  struct stat st {};
  std::string target = path;
  if (::stat(path.c_str(), &st) == 0) {
    PF_CHECK(!S_ISDIR(st.st_mode), Code::kIoError, path, ": is a directory");
    if (!S_ISREG(st.st_mode)) {
      // /dev/null, /dev/stdout, a FIFO: written in place. A rename over one would replace the
      // node itself (root may replace /dev/null), and none can keep a half-written file.
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      PF_CHECK(fd >= 0, Code::kIoError, path, ": cannot open for writing: ", std::strerror(errno));
      PF_RETURN_IF_ERROR(write_all(fd, path, bytes));
      PF_CHECK(::close(fd) == 0, Code::kIoError, path, ": cannot finish writing: ", std::strerror(errno));
      return {};
    }
    // A link to a file: the file it names is replaced, and the link stays.
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) target = resolved;
  }
  std::string tmp = target + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  PF_CHECK(fd >= 0, Code::kIoError, path, ": cannot create a temporary file beside it: ", std::strerror(errno));
  if (Status s = write_all(fd, path, bytes); !s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // mkstemp creates 0600; an output file is an ordinary artifact, so honour the umask instead.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  const bool ok = ::fchmod(fd, 0666 & ~mask) == 0 && ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(tmp.c_str());
    return make_error(Code::kIoError, cat(path, ": cannot finish writing: ", std::strerror(err)));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int rerr = errno;
    ::unlink(tmp.c_str());
    return make_error(Code::kIoError, cat(path, ": cannot rename the temporary file into place: ", std::strerror(rerr)));
  }
  return {};
}

}  // namespace patchfuse
