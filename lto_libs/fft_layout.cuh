// A block FFT's items between global memory and cuFFTDx's register layout, and where an item is
// (tiles.FFT.load, store and index). No cuFFTDx here: the layout is fixed by the description's Stride, so
// these compile with CUB's families, and only FFT.execute's program parses cuFFTDx.
//
// Item i of thread x holds element x + i * Stride of the thread's FFT (threadIdx.y's), for the first Items
// items; elements from Length on do not exist (an r2c's output and a c2r's input have size / 2 + 1). The
// real side of r2c and c2r is packed, two real values to an item: real value j is element x + j * Stride, or,
// with Pairs (cuFFTDx's folded execution), item i holds elements 2 * (x + i * Stride) and the one after it.
#pragma once

#include "common.cuh"

namespace numba_tiles {

// The element of the thread's FFT that item i of thread x holds.
template <int Stride>
__device__ __forceinline__ long long fft_element(long long x, long long i) {
  return x + i * Stride;
}

template <int Stride>
__device__ __forceinline__ long long fft_index(long long i) {
  return fft_element<Stride>(threadIdx.x, i);
}

// x, as the compiler cannot see through. The strided paths below take the thread's index and the row's stride so:
// their items' offsets ((x + i * Stride) * stride, 64-bit) are the same for every row, and a kernel's loop over
// rows had them all computed once before the loop and held in registers across it (a 4096-point c2c loop took 142
// registers a thread, against 48 without the loop); seen through this, they are recomputed each row (a few
// instructions of the path a row takes). The whole-row paths' offsets are constants and need none of it.
__device__ __forceinline__ long long fft_opaque(long long x) {
  // (inline PTX: no library call hides a value from the optimizer; an empty move is the barrier)
  asm volatile("mov.b64 %0, %0;" : "+l"(x));
  return x;
}

template <int Items, int Storage, typename T, typename V>
__device__ __forceinline__ T* fft_values(array_ref<V> items, const char* intrinsic) {
  static_assert(sizeof(T) * Items <= sizeof(V) * Storage, "a thread's values must fit its storage");
  if (items.size < Storage || items.stride != 1) {  // (a cuda.local.array's size is a constant: this folds away)
    if (first_thread()) {
      printf("tiles.%s: items has %lld items (stride %lld); this FFT needs %d contiguous ones (fft.storage_size)\n",
             intrinsic, items.size, items.stride, Storage);
    }
    fail();
  }
  return reinterpret_cast<T*>(items.data);
}

// Two values of T side by side, moved as one (a folded FFT's pair of real values).
template <typename T>
struct alignas(2 * sizeof(T)) fft_pair {
  T value[2];
};

// Pairs: item i of this thread holds elements 2 * (x + i * Stride) and the one after it, of the sequence a (src
// of load, dst of store); Items values, which move two at a time where a is a whole row aligned to two values.
template <int Stride, int Items, int Length, bool Load, typename T>
__device__ __forceinline__ void fft_move_pairs(array_ref<T> a, T* values) {
  if (a.stride == 1 && a.size >= Length && reinterpret_cast<unsigned long long>(a.data) % sizeof(fft_pair<T>) == 0) {
    fft_pair<T>* row = reinterpret_cast<fft_pair<T>*>(a.data) + threadIdx.x;
    fft_pair<T>* pairs = reinterpret_cast<fft_pair<T>*>(values);
#pragma unroll
    for (int i = 0; i < Items / 2; ++i) {
      if constexpr (Load) {
        pairs[i] = row[i * Stride];
      } else {
        row[i * Stride] = pairs[i];
      }
    }
    return;
  }
  const long long x = fft_opaque(threadIdx.x), stride = fft_opaque(a.stride);
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const long long at = 2 * fft_element<Stride>(x, j / 2) + j % 2;
    if constexpr (Load) {
      values[j] = at < a.size ? a.data[at * stride] : T(0);
    } else if (at < a.size) {
      a.data[at * stride] = values[j];
    }
  }
}

// This thread's items of the sequence src (any length: zeros past its end, its items past Length unread).
template <int Stride, int Items, int Length, int Storage, bool Pairs, typename T, typename V>
__device__ __forceinline__ void fft_load(array_ref<T> src, array_ref<V> items) {
  T* values = fft_values<Items, Storage, T>(items, "FFT.load");
  if constexpr (Pairs) {
    fft_move_pairs<Stride, Items, Length, true>(src, values);
    return;
  }
  if (src.stride == 1 && src.size >= Length) {  // (a whole row of a batch: no zeros, no stride, 32-bit offsets)
    const T* row = src.data + threadIdx.x;
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      if (static_cast<int>(threadIdx.x) + i * Stride < Length) values[i] = row[i * Stride];
    }
    return;
  }
  const long long x = fft_opaque(threadIdx.x), stride = fft_opaque(src.stride);
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const long long j = fft_element<Stride>(x, i);
    if (j < Length) {
      values[i] = j < src.size ? src.data[j * stride] : T(0);
    }
  }
}

// This thread's items into the sequence dst (as much of it as dst holds).
template <int Stride, int Items, int Length, int Storage, bool Pairs, typename V, typename T>
__device__ __forceinline__ void fft_store(array_ref<V> items, array_ref<T> dst) {
  T* values = fft_values<Items, Storage, T>(items, "FFT.store");
  if constexpr (Pairs) {
    fft_move_pairs<Stride, Items, Length, false>(dst, values);
    return;
  }
  if (dst.stride == 1 && dst.size >= Length) {  // (as load's)
    T* row = dst.data + threadIdx.x;
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      if (static_cast<int>(threadIdx.x) + i * Stride < Length) row[i * Stride] = values[i];
    }
    return;
  }
  const long long x = fft_opaque(threadIdx.x), stride = fft_opaque(dst.stride);
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const long long j = fft_element<Stride>(x, i);
    if (j < Length && j < dst.size) {
      dst.data[j * stride] = values[i];
    }
  }
}

}  // namespace numba_tiles
