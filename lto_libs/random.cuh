// Random numbers by cuRANDDx (MathDx), instantiated by numba_tiles for tiles.Random.
//
// A thread's generator lives in its `state`, a cuda.local.array of tiles.Random's state_size uint64 words: each
// call copies cuRANDDx's generator out of it and back (the copies fold away when the array stays in registers),
// so that the state is a plain Numba array in both compilers. The words hold cuRANDDx's own layout (Philox: the
// counter's four 32-bit words, then the key's two; PCG: its state, stream and increment), which the simulator's
// twins (numba_tiles/_random/twins.py) mirror.
#pragma once

#include <curanddx.hpp>

#include "common.cuh"

namespace numba_tiles {

// Generator: 0 Philox4x32-10, 1 PCG (XSH-RR 64/32).
using philox_rng = decltype(curanddx::Generator<curanddx::philox4_32>() + curanddx::PhiloxRounds<10>() +
                            curanddx::SM<__CUDA_ARCH__>() + curanddx::Thread());
using pcg_rng = decltype(curanddx::Generator<curanddx::pcg>() + curanddx::SM<__CUDA_ARCH__>() + curanddx::Thread());
template <int Generator>
using thread_rng = ::cuda::std::conditional_t<Generator == 0, philox_rng, pcg_rng>;

template <int Generator, int StateWords>
__device__ __forceinline__ void random_check_state(array_ref<unsigned long long> state, const char* intrinsic) {
  static_assert(sizeof(thread_rng<Generator>) <= 8 * StateWords, "tiles.Random's state_size is too small");
  if (state.size < StateWords || state.stride != 1) {  // (a cuda.local.array's size is a constant: this folds away)
    if (first_thread()) {
      printf("tiles.%s: state has %lld words (stride %lld); a generator needs %d contiguous uint64 "
             "(cuda.local.array(rng.state_size, uint64))\n",
             intrinsic, state.size, state.stride, StateWords);
    }
    fail();
  }
}

// The generator of `seed`, its `subsequence` and its `offset` into that subsequence, written into `state`.
template <int Generator, int StateWords>
__device__ __forceinline__ void random_init(array_ref<unsigned long long> state, unsigned long long seed,
                                            unsigned long long subsequence, unsigned long long offset) {
  random_check_state<Generator, StateWords>(state, "Random.init");
  thread_rng<Generator> rng(seed, subsequence, offset);
  memcpy(state.data, &rng, sizeof(rng));
}

// Distribution: 0 uniform on (a, b], 1 normal (mean a, standard deviation b, Box-Muller), 2 raw 32-bit words,
// 3 log-normal (exp of a normal value of mean a, standard deviation b).
// Width values of T into `values`: one draw of cuRANDDx's natural pack for the generator and distribution.
template <int Distribution, int Width, typename P, typename T, typename Rng>
__device__ __forceinline__ void random_draw(Rng& rng, T* values, P a, P b) {
  if constexpr (Distribution == 2) {
    if constexpr (Width == 4) {
      const uint4 v = curanddx::uniform_bits<unsigned int>().generate4(rng);
      values[0] = v.x, values[1] = v.y, values[2] = v.z, values[3] = v.w;
    } else {
      values[0] = curanddx::uniform_bits<unsigned int>().generate(rng);
    }
  } else {
    using D = ::cuda::std::conditional_t<
        Distribution == 0, curanddx::uniform<P>,
        ::cuda::std::conditional_t<Distribution == 1, curanddx::normal<P, curanddx::box_muller>,
                                   curanddx::log_normal<P, curanddx::box_muller>>>;
    D d(a, b);
    if constexpr (Width == 4) {
      const auto v = d.generate4(rng);
      values[0] = v.x, values[1] = v.y, values[2] = v.z, values[3] = v.w;
    } else if constexpr (Width == 2) {
      const auto v = d.generate2(rng);
      values[0] = v.x, values[1] = v.y;
    } else {
      values[0] = d.generate(rng);
    }
  }
}

// One draw into `out` (tiles.Random.generate), from the generator in `state`, which steps on.
template <int Generator, int StateWords, int Distribution, int Width, typename P, typename T>
__device__ __forceinline__ void random_generate(array_ref<unsigned long long> state, array_ref<T> out, P a, P b) {
  random_check_state<Generator, StateWords>(state, "Random.generate");
  if (out.size < Width || out.stride != 1) {
    if (first_thread()) {
      printf("tiles.Random.generate: out has %lld values (stride %lld); a draw makes %d contiguous ones "
             "(cuda.local.array(rng.width, rng.dtype))\n",
             out.size, out.stride, Width);
    }
    fail();
  }
  thread_rng<Generator> rng;
  memcpy(&rng, state.data, sizeof(rng));
  random_draw<Distribution, Width>(rng, out.data, a, b);
  memcpy(state.data, &rng, sizeof(rng));
}

// A draw's Width values side by side, stored as one (16 bytes for Philox's packs).
template <int Width, typename T>
struct alignas(Width * sizeof(T)) random_pack {
  T value[Width];
};

// Every value of `out` (tiles.Random.fill), by all the grid's threads, each from its generator in `state`: the
// values go in packs of Width, pack p (values p * Width on) drawn by the thread of grid rank p % threads, its
// (p / threads)-th draw; of the last pack, where out's size is no multiple of Width, the first values. A pack goes
// out as one store where out is contiguous and aligned to a pack; its draw and store are then all a loop step
// does, where a kernel's own loop of `generate` adds its indexing of `out` to each value.
template <int Generator, int StateWords, int Distribution, int Width, typename P, typename T>
__device__ __forceinline__ void random_fill(array_ref<unsigned long long> state, array_ref<T> out, P a, P b) {
  random_check_state<Generator, StateWords>(state, "Random.fill");
  thread_rng<Generator> rng;
  memcpy(&rng, state.data, sizeof(rng));
  using Pack = random_pack<Width, T>;
  const long long block = block_threads();
  const long long threads = block * grid_blocks();
  const long long rank = linear_block() * block + block_rank();
  const long long whole = out.size / Width;  // (packs all of whose values exist)
  // Pack p drawn and stored value by value, as much of it as out holds (a strided or misaligned out, the last pack).
  auto scatter = [&](long long p) {
    T values[Width];
    random_draw<Distribution, Width>(rng, values, a, b);
#pragma unroll
    for (int j = 0; j < Width; ++j) {
      if (p * Width + j < out.size) out.data[(p * Width + j) * out.stride] = values[j];
    }
  };
  if (out.stride == 1 && reinterpret_cast<unsigned long long>(out.data) % sizeof(Pack) == 0) {
    Pack* packs = reinterpret_cast<Pack*>(out.data);
    // Two packs a step: the second draw's Philox rounds need not wait for the first's transform, which the normal
    // draws, bound by the SM's issue slots, gain from (docs/notes/random-fills.md). Same values, same places.
    long long p = rank;
    for (; p + threads < whole; p += 2 * threads) {
      Pack first, second;
      random_draw<Distribution, Width>(rng, first.value, a, b);
      random_draw<Distribution, Width>(rng, second.value, a, b);
      packs[p] = first;
      packs[p + threads] = second;
    }
    if (p < whole) {
      Pack pack;
      random_draw<Distribution, Width>(rng, pack.value, a, b);
      packs[p] = pack;
    }
  } else {
    for (long long p = rank; p < whole; p += threads) scatter(p);
  }
  if (out.size % Width != 0 && rank == whole % threads) scatter(whole);  // (the last pack, partial: its next draw)
  memcpy(state.data, &rng, sizeof(rng));
}

}  // namespace numba_tiles
