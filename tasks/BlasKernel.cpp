#include "tasks/BlasKernel.hpp"

#include <cmath>

#include <cpuid.h>
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include <cblas.h>

namespace treefarm::tasks {

namespace {

std::uint64_t xgetbv0() {
  std::uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<std::uint64_t>(edx) << 32) | eax;
}

bool bit(unsigned reg, int n) { return ((reg >> n) & 1U) != 0; }

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string{} : p.string();
}

/// What identifies a host's answer: a new CPU, library or host measures again.
std::string cache_key(const CpuFeatures& cpu, const BlasInfo& blas) {
  std::ostringstream key;
  key << host_name() << "|" << cpu.vendor << " " << cpu.family << "/" << cpu.model << " " << cpu.brand
      << "|" << blas.config;
  return key.str();
}

nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  try {
    auto j = nlohmann::json::parse(in);
    if (j.is_object()) return j;
  } catch (const std::exception&) {
  }
  return nlohmann::json::object();  // a damaged cache is measured again, then rewritten
}

void write_cache(const std::string& path, const nlohmann::json& j) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

/// The matrix orders a kernel is measured at: a large product, where the kernels that run
/// here are within 1-2 % of one another (51.1, 50.7, 50.0 GFLOP/s for Haswell, SkylakeX
/// and Cooperlake on a Zen 4 core), and a small one as tiny tasks run it, where the
/// packing of the operands costs as much as the product and the AVX-512 kernels carry a
/// path without it (n = 32: SkylakeX 840,940 products/s against Haswell's 585,715).
constexpr int probe_n = 256, probe_small_n = 32;

struct Probe {
  std::string kernel;  ///< corename the child reported
  double gflops = 0;        ///< GFLOP/s at probe_n
  double small_gflops = 0;  ///< GFLOP/s at probe_small_n
  /// The geometric mean of the two: a kernel is chosen for both sizes at once.
  double score() const { return std::sqrt(gflops * small_gflops); }
};

/// Runs this binary in probe mode with OPENBLAS_CORETYPE=kernel.
Probe probe(const std::string& exe, const std::string& kernel) {
  const std::string cmd = "OPENBLAS_CORETYPE='" + kernel + "' OPENBLAS_NUM_THREADS=1 TREEFARM_BLAS_PROBE=1 '" +
                          exe + "' 2>/dev/null";
  Probe p;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return p;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    char name[64] = {};
    double g = 0, small = 0;
    if (std::sscanf(line, "GFLOPS %lf KERNEL %63s SMALL %lf", &g, name, &small) == 3) {
      p.gflops = g;
      p.small_gflops = small;
      p.kernel = name;
    }
  }
  pclose(f);
  return p;
}

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures c;
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &cx, &d) == 0) return c;
  const unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &cx, 4);
  c.vendor = vendor;
  __get_cpuid(1, &a, &b, &cx, &d);
  const unsigned base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
  c.family = static_cast<int>(base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family);
  c.model = static_cast<int>((base_family == 0x6 || base_family == 0xF) ? (((a >> 16) & 0xF) << 4) + base_model
                                                                        : base_model);
  const bool osxsave = bit(cx, 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm = (xcr0 & 0x6) == 0x6;
  const bool zmm = (xcr0 & 0xE6) == 0xE6;
  c.avx = bit(cx, 28) && ymm;
  const bool fma = bit(cx, 12);
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &cx, &d);
    c.avx2_fma = c.avx && fma && bit(b, 5);
    c.avx512 = c.avx2_fma && zmm && bit(b, 16) && bit(b, 17) && bit(b, 28) && bit(b, 30) && bit(b, 31);
    __get_cpuid_count(7, 1, &a, &b, &cx, &d);
    c.avx512_bf16 = c.avx512 && bit(a, 5);
  }
  unsigned ext = __get_cpuid_max(0x80000000, nullptr);
  if (ext >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &cx, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &cx, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    std::string s = brand;
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    c.brand = s;
  }
  return c;
}

std::vector<std::string> allowed_kernels(const CpuFeatures& cpu) {
  std::vector<std::string> k{"Prescott"};
  if (cpu.avx) k.push_back("Sandybridge");
  if (cpu.avx2_fma) k.push_back("Haswell");
  if (cpu.avx512) k.push_back("SkylakeX");
  if (cpu.avx512_bf16) k.push_back("Cooperlake");
  return k;
}

BlasInfo blas_info() {
  BlasInfo info;
  info.config = openblas_get_config();
  std::istringstream words(info.config);
  std::string name, version;
  words >> name >> version;
  info.library = version.empty() ? name : name + " " + version;
  info.kernel = openblas_get_corename();
  info.serial = openblas_get_parallel() == 0;
  if (const char* by = env("TREEFARM_BLAS_SELECTED_BY"); by != nullptr && env("OPENBLAS_CORETYPE") != nullptr)
    info.selected_by = by;
  else if (env("OPENBLAS_CORETYPE") != nullptr)
    info.selected_by = "environment";
  else
    info.selected_by = "library";
  return info;
}

nlohmann::json to_json(const BlasInfo& info) {
  return {{"library", info.library},
          {"kernel", info.kernel},
          {"config", info.config},
          {"serial", info.serial},
          {"selected_by", info.selected_by}};
}

std::string blas_cache_path() {
  std::filesystem::path dir;
  if (const char* x = env("XDG_CACHE_HOME")) dir = std::filesystem::path(x) / "treefarm";
  else if (const char* h = env("HOME")) dir = std::filesystem::path(h) / ".cache" / "treefarm";
  else return "/tmp/treefarm-blas-kernel-" + std::to_string(getuid()) + ".json";
  return (dir / "blas-kernel.json").string();
}

double measure_dgemm_gflops(int n, double seconds) {
  openblas_set_num_threads(1);
  const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<double> a(size), b(size), c(size);
  for (std::size_t i = 0; i < size; ++i) {
    a[i] = 1.0 + static_cast<double>(i % 7) * 0.25;
    b[i] = 2.0 - static_cast<double>(i % 5) * 0.125;
  }
  const double flop = 2.0 * n * static_cast<double>(n) * n;
  auto once = [&] {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0,
                c.data(), n);
  };
  once();  // warm-up: pages, packing buffers
  // Thread CPU time: a chunk that lost the core to another process on a shared machine
  // still measures the kernel.
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  double best = 0;
  const double end = cpu_now() + seconds;
  // Several short chunks, best kept: on a shared machine a chunk that lost the core to
  // another process says nothing about the kernel.
  do {
    const double t0 = cpu_now();
    int reps = 0;
    do {
      once();
      ++reps;
    } while (cpu_now() - t0 < 0.04);
    const double s = cpu_now() - t0;
    best = std::max(best, flop * reps / s / 1e9);
  } while (cpu_now() < end);
  return best;
}

void select_blas_kernel(char** argv) {
  if (env("TREEFARM_BLAS_PROBE") != nullptr) {
    const double g = measure_dgemm_gflops(probe_n, 0.25);
    const double small = measure_dgemm_gflops(probe_small_n, 0.15);
    std::printf("GFLOPS %.3f KERNEL %s SMALL %.3f\n", g, openblas_get_corename(), small);
    std::fflush(stdout);
    std::_Exit(0);
  }
  if (env("OPENBLAS_CORETYPE") != nullptr) return;
  if (const char* s = env("TREEFARM_BLAS_SELECT"); s != nullptr && std::string(s) == "0") return;
  try {
    const CpuFeatures cpu = detect_cpu_features();
    const BlasInfo blas = blas_info();
    const auto allowed = allowed_kernels(cpu);
    const std::string exe = self_exe();
    if (exe.empty()) return;
    const std::string path = blas_cache_path();
    const std::string key = cache_key(cpu, blas);
    std::string best;
    std::string how = "cached";
    auto cached = read_cache(path);
    // An entry measured at one size only (before the small product counted) is measured again.
    const auto hit = [&] { return cached.contains(key) && cached[key].contains("kernel") && cached[key].contains("dgemm_small_gflops"); };
    if (hit()) {
      best = cached[key]["kernel"].get<std::string>();
    } else {
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      // One process measures; the others (workers started together) wait and read.
      const int lock = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
      if (lock >= 0) ::flock(lock, LOCK_EX);
      cached = read_cache(path);
      if (hit()) {
        best = cached[key]["kernel"].get<std::string>();
      } else {
        how = "measured";
        nlohmann::json rates = nlohmann::json::object(), small_rates = nlohmann::json::object();
        double best_score = 0;  // the geometric mean of the two rates (Probe::score)
        // Candidates: every kernel the flags allow, from Haswell up when the CPU has
        // AVX2+FMA (older kernels cannot win there), and the library's own choice.
        std::vector<std::string> candidates;
        for (const auto& k : allowed)
          if (!cpu.avx2_fma || (k != "Prescott" && k != "Sandybridge")) candidates.push_back(k);
        if (std::find(candidates.begin(), candidates.end(), blas.kernel) == candidates.end())
          candidates.insert(candidates.begin(), blas.kernel);
        for (const auto& k : candidates) {
          const Probe p = probe(exe, k);
          rates[k] = p.gflops;
          small_rates[k] = p.small_gflops;
          // A library built without DYNAMIC_ARCH ignores OPENBLAS_CORETYPE: not selectable.
          if (p.kernel.empty() || !(p.score() > 0)) continue;
          const std::string chosen = (p.kernel == k) ? k : blas.kernel;
          if (p.score() > best_score) {
            best_score = p.score();
            best = chosen;
          }
        }
        if (best.empty()) best = blas.kernel;
        cached[key] = {{"kernel", best},          {"library_kernel", blas.kernel}, {"dgemm_gflops", rates},
                       {"dgemm_n", probe_n},      {"dgemm_small_gflops", small_rates},
                       {"dgemm_small_n", probe_small_n}};
        write_cache(path, cached);
        std::cerr << "treefarm: BLAS kernel measured (dgemm GFLOP/s per core, n=" << probe_n << ": " << rates.dump()
                  << ", n=" << probe_small_n << ": " << small_rates.dump() << "); using " << best
                  << ", the fastest over both (cached in " << path << ")\n";
      }
      if (lock >= 0) ::close(lock);
    }
    if (best.empty() || best == blas.kernel) return;
    if (std::find(allowed.begin(), allowed.end(), best) == allowed.end()) return;  // stale cache
    ::setenv("OPENBLAS_CORETYPE", best.c_str(), 1);
    ::setenv("TREEFARM_BLAS_SELECTED_BY", how.c_str(), 1);
    ::execv(exe.c_str(), argv);
    std::cerr << "treefarm: re-exec with OPENBLAS_CORETYPE=" << best << " failed: " << std::strerror(errno)
              << "; keeping " << blas.kernel << "\n";
    ::unsetenv("OPENBLAS_CORETYPE");
    ::unsetenv("TREEFARM_BLAS_SELECTED_BY");
  } catch (const std::exception& e) {
    std::cerr << "treefarm: BLAS kernel selection skipped: " << e.what() << "\n";
  }
}

}  // namespace treefarm::tasks
