#include "tools/machine_info.h"

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

namespace patchfuse {

MachineInfo machine_info() {
  MachineInfo m;
#if defined(__x86_64__)
  m.architecture = "x86_64";
  const std::set<std::string> wanted = {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                                        "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16"};
#elif defined(__aarch64__)
  m.architecture = "aarch64";
  const std::set<std::string> wanted = {"asimd", "fphp", "asimdhp", "asimddp", "bf16", "i8mm", "sve", "sve2"};
#elif defined(__arm__)
  m.architecture = "armv7";
  const std::set<std::string> wanted = {"neon", "vfpv4", "half", "fphp", "asimdhp"};
#else
  m.architecture = "unknown";
  const std::set<std::string> wanted;
#endif
  m.online_cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool x86_cpuinfo = false;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "vendor_id") x86_cpuinfo = true;
    if (m.cpu_model.empty() && (key == "model name" || key == "Hardware" || key == "Model")) m.cpu_model = value;
    if (m.isa_features.empty() && (key == "flags" || key == "Features")) {
      std::istringstream words(value);
      for (std::string w; words >> w;) {
        if (wanted.count(w)) m.isa_features.push_back(w);
      }
    }
  }
#if !defined(__x86_64__) && !defined(__i386__)
  // qemu-user passes the host's /proc/cpuinfo through: an ARM binary seeing x86 fields is emulated.
  m.emulated = x86_cpuinfo;
  if (m.emulated) m.isa_features.clear();  // the host's flags say nothing about the emulated CPU
#else
  (void)x86_cpuinfo;
#endif
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  return m;
}

}  // namespace patchfuse
