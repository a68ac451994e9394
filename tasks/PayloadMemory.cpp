#include "tasks/PayloadMemory.hpp"

#include <malloc.h>

namespace treefarm::tasks {

bool keep_payload_memory() {
  constexpr int mmap_threshold = 32 << 20;   // glibc's maximum on 64-bit (4 MiB × sizeof(long))
  constexpr int trim_threshold = 256 << 20;
  const bool mmap_ok = ::mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1;
  const bool trim_ok = ::mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace treefarm::tasks
