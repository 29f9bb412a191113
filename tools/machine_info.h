// What machine a benchmark ran on: CPU model, the ISA features that matter to the backends, and
// whether the process runs under user-mode emulation (then figures are for function, not speed).
#pragma once

#include <string>
#include <vector>

namespace patchfuse {

struct MachineInfo {
  std::string cpu_model;
  std::string architecture;               // the binary's: x86_64, aarch64, armv7
  std::vector<std::string> isa_features;  // e.g. avx2, fma, avx512f, avx512_bf16 / asimd, fphp, asimdhp
  int online_cpus = 0;
  bool emulated = false;  // an ARM binary reading an x86 /proc/cpuinfo: qemu-user
};

MachineInfo machine_info();

}  // namespace patchfuse
