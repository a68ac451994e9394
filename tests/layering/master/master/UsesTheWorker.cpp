// Fixture of the layering_rejects_* tests (never compiled): master/ including worker/.
#include "worker/Executor.hpp"
