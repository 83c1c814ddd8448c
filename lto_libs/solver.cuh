// cuSOLVERDx's block-wide solvers (Cholesky, LU, QR, least squares), whose device functions libmathdx generates
// (numba_tiles/_libmathdx.py): the entry point that calls one with Numba's arrays. The function arrives as a
// template argument, declared by the instance's prelude under the symbol numba_tiles gave it; it works in place on
// its operands (shared memory: A, B, tau; ipiv and info anywhere the whole block sees), synchronizes the block as
// it needs, and takes every thread of a block of exactly its threads.
#pragma once

#include <cuda/std/utility>

#include "common.cuh"

namespace numba_tiles {

__device__ __forceinline__ void solver_refuse(const char* names, int operand, long long items, long long needed) {
  if (first_thread()) {
    printf("tiles.Solver.execute: operand %d of (%s) holds %lld items in one dense C-ordered block; this solver "
           "needs %lld (the solver's <operand>_size)\n", operand + 1, names, items, needed);
  }
  fail();
}

// An operand's data, once it is known to hold `needed` items in one dense C-ordered block (1, 2 or 3 dims).
template <typename T>
__device__ __forceinline__ long long solver_items(array_ref<T> x) {
  return x.stride == 1 || x.size <= 1 ? x.size : 0;
}

template <typename T>
__device__ __forceinline__ long long solver_items(matrix_ref<T> x) {
  return x.dense(true) ? x.rows * x.cols : 0;
}

template <typename T>
__device__ __forceinline__ long long solver_items(batch_ref<T> x) {
  const bool dense = x[0].dense(true) && (x.batch_stride == x.rows * x.cols || x.count == 1);
  return dense ? x.count * x.rows * x.cols : 0;
}

template <typename Operand>
__device__ __forceinline__ auto solver_operand(Operand x, long long needed, const char* names, int i) {
  const long long items = solver_items(x);
  if (items < needed) solver_refuse(names, i, items, needed);
  return x.data;
}

template <auto F, long long... Items, size_t... I, typename... Operands>
__device__ __forceinline__ void solver_call(::cuda::std::index_sequence<I...>, const char* names,
                                            Operands... operands) {
  F(solver_operand(operands, Items, names, static_cast<int>(I))...);
}

// The call: F(operands...) in cuSOLVERDx's order, each checked against its Items (in the same order; `names`
// lists the operands for the message).
template <auto F, long long... Items, typename... Operands>
__device__ __forceinline__ void solver_execute(const char* names, Operands... operands) {
  static_assert(sizeof...(Items) == sizeof...(Operands), "one size an operand");
  solver_call<F, Items...>(::cuda::std::index_sequence_for<Operands...>{}, names, operands...);
}

}  // namespace numba_tiles
