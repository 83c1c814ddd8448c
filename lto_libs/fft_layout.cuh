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

template <int Stride>
__device__ __forceinline__ long long fft_index(long long i) {
  return static_cast<long long>(threadIdx.x) + i * Stride;
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

// The element of its sequence that value j of a thread's items holds (Pairs: see above).
template <int Stride, bool Pairs>
__device__ __forceinline__ long long fft_element(long long j) {
  return Pairs ? 2 * fft_index<Stride>(j / 2) + j % 2 : fft_index<Stride>(j);
}

// Two values of T side by side, moved as one (a folded FFT's pair of real values).
template <typename T>
struct alignas(2 * sizeof(T)) fft_pair {
  T value[2];
};

// Whether the sequence a is a whole row of a batch (no zeros, no stride; with Pairs aligned to two values),
// whose items move by constant offsets from one address.
template <int Length, bool Pairs, typename T>
__device__ __forceinline__ bool fft_whole_row(array_ref<T> a) {
  return a.stride == 1 && a.size >= Length &&
         (!Pairs || reinterpret_cast<unsigned long long>(a.data) % sizeof(fft_pair<T>) == 0);
}

// This thread's items of the sequence src (any length: zeros past its end, its items past Length unread).
template <int Stride, int Items, int Length, int Storage, bool Pairs, typename T, typename V>
__device__ __forceinline__ void fft_load(array_ref<T> src, array_ref<V> items) {
  T* values = fft_values<Items, Storage, T>(items, "FFT.load");
  if (fft_whole_row<Length, Pairs>(src)) {  // (32-bit offsets from one address)
    if constexpr (Pairs) {
      const fft_pair<T>* row = reinterpret_cast<const fft_pair<T>*>(src.data) + threadIdx.x;
#pragma unroll
      for (int i = 0; i < Items / 2; ++i) reinterpret_cast<fft_pair<T>*>(values)[i] = row[i * Stride];
    } else {
      const T* row = src.data + threadIdx.x;
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        if (static_cast<int>(threadIdx.x) + i * Stride < Length) values[i] = row[i * Stride];
      }
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const long long j = fft_element<Stride, Pairs>(i);
    if (j < Length) {
      values[i] = j < src.size ? src.data[j * src.stride] : T(0);
    }
  }
}

// This thread's items into the sequence dst (as much of it as dst holds).
template <int Stride, int Items, int Length, int Storage, bool Pairs, typename V, typename T>
__device__ __forceinline__ void fft_store(array_ref<V> items, array_ref<T> dst) {
  const T* values = fft_values<Items, Storage, T>(items, "FFT.store");
  if (fft_whole_row<Length, Pairs>(dst)) {  // (as load's)
    if constexpr (Pairs) {
      fft_pair<T>* row = reinterpret_cast<fft_pair<T>*>(dst.data) + threadIdx.x;
#pragma unroll
      for (int i = 0; i < Items / 2; ++i) row[i * Stride] = reinterpret_cast<const fft_pair<T>*>(values)[i];
    } else {
      T* row = dst.data + threadIdx.x;
#pragma unroll
      for (int i = 0; i < Items; ++i) {
        if (static_cast<int>(threadIdx.x) + i * Stride < Length) row[i * Stride] = values[i];
      }
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const long long j = fft_element<Stride, Pairs>(i);
    if (j < Length && j < dst.size) {
      dst.data[j * dst.stride] = values[i];
    }
  }
}

}  // namespace numba_tiles
