// write_file_atomically: where the bytes land for each kind of existing path (none, a file, a link
// to a file, a directory, a FIFO), and that nothing is left beside it.
#include "runtime/core/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::TempDir;

const std::vector<uint8_t> kBytes = {'p', 'f', 'b', 0, 1, 2, 255};

mode_t kind(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & S_IFMT;
}

TEST(OutputFile, NewAndExistingFilesAreReplacedWhole) {
  TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "a.bin", kBytes).ok());
  EXPECT_EQ(testing::read_bytes(dir / "a.bin"), kBytes);
  testing::write_text(dir / "b.bin", "a longer file than the bytes written over it");
  ASSERT_TRUE(write_file_atomically(dir / "b.bin", kBytes).ok());
  EXPECT_EQ(testing::read_bytes(dir / "b.bin"), kBytes);
  EXPECT_EQ(testing::list_dir(dir.path()).size(), 2u) << "no temporary file left";
}

// The file a link names is replaced; the link stays a link.
TEST(OutputFile, ALinkKeepsPointingAtTheNewFile) {
  TempDir dir;
  testing::write_text(dir / "target.pfb", "old");
  ASSERT_EQ(::symlink("target.pfb", (dir / "link.pfb").c_str()), 0);
  ASSERT_TRUE(write_file_atomically(dir / "link.pfb", kBytes).ok());
  EXPECT_EQ(kind(dir / "link.pfb"), S_IFLNK);
  EXPECT_EQ(testing::read_bytes(dir / "target.pfb"), kBytes);
}

TEST(OutputFile, ADirectoryIsRefusedByName) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir / "d").c_str(), 0700), 0);
  const Status s = write_file_atomically(dir / "d", kBytes);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("/d: is a directory"), std::string::npos) << s.error().message;
  EXPECT_EQ(testing::list_dir(dir.path()).size(), 1u) << "no temporary file left";
}

// /dev/null, /dev/stdout or a FIFO is written in place: a rename over it replaced the node itself
// (as root, /dev/null). A FIFO stands for all of them here (mknod needs root).
TEST(OutputFile, AFifoIsWrittenInPlaceAndStaysAFifo) {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The read end is opened first and without blocking, so the write's open does not wait, and a
  // rename over the FIFO leaves this end empty instead of hanging the test.
  const int rfd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rfd, 0);
  const Status s = write_file_atomically(fifo, kBytes);
  std::vector<uint8_t> received(64);
  const ssize_t n = ::read(rfd, received.data(), received.size());
  ::close(rfd);
  received.resize(n > 0 ? static_cast<size_t>(n) : 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(received, kBytes);
  EXPECT_EQ(kind(fifo), S_IFIFO);
  EXPECT_EQ(testing::list_dir(dir.path()).size(), 1u) << "no temporary file left";
}

}  // namespace
}  // namespace patchfuse
