#include "runtime/metrics/ProcessMemory.hpp"

#include <cstdio>
#include <cstring>

#include <sys/resource.h>

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
    else if (std::sscanf(line, "RssShmem: %llu kB", &kib) == 1) m.shmem_bytes = kib * 1024;
  }
  std::fclose(f);
  return m;
}

double process_cpu_seconds() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

}  // namespace treefarm::metrics
