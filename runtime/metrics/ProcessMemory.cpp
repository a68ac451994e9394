#include "runtime/metrics/ProcessMemory.hpp"

#include <cstdio>
#include <cstring>

namespace treefarm::metrics {

ProcessMemory process_memory() {
  ProcessMemory m;
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kib) == 1) m.rss_bytes = kib * 1024;
    else if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1) m.peak_rss_bytes = kib * 1024;
  }
  std::fclose(f);
  return m;
}

}  // namespace treefarm::metrics
