// Runs a libFuzzer target's LLVMFuzzerTestOneInput over files, so ordinary (gcc, sanitizer and
// cross) builds replay the seed corpus and every committed regression input as a ctest test.
// Arguments: files or folders (every regular file inside, sorted); a missing folder is empty.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    struct stat st {};
    if (::stat(argv[i], &st) != 0) continue;
    if (S_ISREG(st.st_mode)) {
      files.push_back(argv[i]);
    } else if (DIR* d = ::opendir(argv[i])) {
      std::vector<std::string> inside;
      while (dirent* e = ::readdir(d)) {
        const std::string p = std::string(argv[i]) + "/" + e->d_name;
        if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) inside.push_back(p);
      }
      ::closedir(d);
      std::sort(inside.begin(), inside.end());
      files.insert(files.end(), inside.begin(), inside.end());
    }
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("replay %s (%zu bytes)\n", f.c_str(), bytes.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return files.empty() ? 1 : 0;
}
