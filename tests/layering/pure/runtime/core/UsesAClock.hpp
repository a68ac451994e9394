// Fixture of the layering_rejects_* tests (never compiled): a pure folder that reads a clock.
#pragma once
#include <chrono>
