// treefarm hwdetect (docs/commands.md).
#include <iostream>
#include <memory>

#include "tools/cli/Command.hpp"
#include "runtime/exec/Topology.hpp"
#include "tasks/BlasKernel.hpp"
#include "tasks/CpuPeak.hpp"

namespace treefarm::cli {

void add_hwdetect_command(CLI::App& app, Commands& out) {
  auto json = std::make_shared<bool>(false);
  auto* hw = app.add_subcommand("hwdetect", "Print the cores, caches and memory a worker here would use");
  hw->add_flag("--json", *json, "JSON output");
  out.push_back({hw, [json] {
                   const auto topo = exec::discover_topology();
                   const auto blas = tasks::blas_info();
                   const auto cpu = tasks::detect_cpu_features();
                   const auto peak = tasks::measure_cpu_peak();
                   if (*json) {
                     auto j = exec::to_json(topo);
                     j["blas"] = tasks::to_json(blas);
                     j["blas"]["allowed_kernels"] = tasks::allowed_kernels(cpu);
                     j["cpu"] = {{"vendor", cpu.vendor}, {"family", cpu.family}, {"model", cpu.model}, {"brand", cpu.brand},
                                 {"avx", cpu.avx}, {"avx2_fma", cpu.avx2_fma}, {"avx512", cpu.avx512},
                                 {"avx512_bf16", cpu.avx512_bf16}};
                     j["peak"] = tasks::to_json(peak);
                     std::cout << j.dump(1) << "\n";
                   } else {
                     std::cout << exec::to_text(topo);
                     std::cout << "cpu: " << cpu.brand << " (" << cpu.vendor << " family " << cpu.family << " model "
                               << cpu.model << ")" << (cpu.avx512 ? ", AVX-512" : cpu.avx2_fma ? ", AVX2+FMA" : "") << "\n";
                     std::cout << "blas: " << blas.library << ", kernel " << blas.kernel << " (chosen by " << blas.selected_by
                               << "; cache " << tasks::blas_cache_path() << ")\n";
                     std::cout << "peak: " << peak.peak_gflops << " GFLOP/s per core = " << peak.ghz << " GHz x "
                               << peak.flop_per_cycle << " flop/cycle (" << peak.vector_isa
                               << " FMA; clock from a dependent-add loop, /proc/cpuinfo says " << peak.cpuinfo_mhz << " MHz)\n";
                   }
                   return 0;
                 }});
}

}  // namespace treefarm::cli
