#include "runtime/exec/InlineTasks.hpp"

namespace treefarm::exec {

bool runs_inline(const model::AppSpec& app, std::size_t input_bytes) {
  const bool builtin = app.kernel == model::Kernel::noop || app.kernel == model::Kernel::matmul ||
                       app.kernel == model::Kernel::matadd;
  return builtin && app.cores_per_task == 1 && input_bytes <= inline_max_input_bytes &&
         app.task_flops() <= inline_max_flops;
}

}  // namespace treefarm::exec
