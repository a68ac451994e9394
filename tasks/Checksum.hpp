#pragma once
/// @file Checksum.hpp
/// Checksums that let the master verify a task's result without receiving it.
///
/// A worker sends back one double per task; the master compares it with the checksum it
/// computed once per pooled input (InputPool). The checksums are cheap next to the
/// kernels (one pass over C) but catch a wrong element, a transposed or partial result,
/// or a truncated noop payload.

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/model/Application.hpp"

namespace treefarm::tasks {

/// Relative tolerance of checksum_matches for matmul and matadd. A multi-core matmul
/// (matmul_blocked) may sum in another order than the single-core one that produced the
/// expected value; those differ by ~1e-15 relative. An error smaller than 1e-9 of the
/// checksum goes unnoticed: for inputs in [0,1) that is an element off by less than about
/// 1e-9·n²·(mean element), e.g. ~0.03 at n = 512 for matmul (elements ≈ n/4).
inline constexpr double checksum_relative_tolerance = 1e-9;

/// Σ_ij C_ij·w_ij over an n×n row-major matrix (matadd results: forging it from A and B
/// costs as much as the addition itself), with deterministic weights
/// w_ij = r_i + s_j ∈ [0.5, 1.5), r and s two different hash sequences in [0.25, 0.75).
/// Because r ≠ s, a transposed result (C^T) gives another value; every weight is ≥ 0.5,
/// so a changed element changes the sum. The summation order is fixed by the code (not
/// by threads), so the same C always gives the same bits.
double checksum_matrix(const double* c, std::uint32_t n);

/// Checksum of a matrix product C = A·B: Σ_ij C_ij·W_ij with a public, deterministic
/// weight W_ij = 0.5 + h(i, j) ∈ [0.5, 1.5) for each element, h a 64-bit hash (splitmix64).
/// Unlike checksum_matrix's rank-2 weights (whose sum equals r·A(B·1) + (1·A)(B·s), O(n²)
/// to compute without C), W has full rank with overwhelming probability, so the sum is
/// Σ_ik A_ik (W·Bᵀ)_ik and computing it from A and B without C costs another n×n×n
/// product: forging it is not cheaper than doing the task. Weights
/// are cached per thread for n ≤ 1024 (8 MiB), hashed on the fly above.
double checksum_product(const double* c, std::uint32_t n);

/// Checksum of a noop payload: a Fletcher-style sum of its 64-bit words (read with
/// memcpy, native byte order) mixed with its size in bytes, returned as an integer
/// < 2^53 (exact in a double). Truncating, extending or reordering the payload changes it.
double checksum_bytes(std::span<const std::byte> payload);

/// Whether a task's checksum `got` verifies against `expected`.
/// noop: exact equality (integer checksum). matmul, matadd (and abstract): relative
/// difference |expected − got| ≤ checksum_relative_tolerance · max(|expected|, |got|).
/// A NaN never matches.
bool checksum_matches(double expected, double got, const model::AppSpec& app);

}  // namespace treefarm::tasks
