// tiles.matmul on sm_80 and later for fp16, bf16, tf32 and fp64 tiles: the block's warps multiply by CuTe's MMA
// atoms (mma.sync: HMMA, DMMA) over the shared tiles, A and B read by ldmatrix (LDSM) where their lines are
// 16-byte aligned. No cuBLASDx GEMM is instantiated: a program of this header compiles in a fraction of the
// time of matmul.cuh's (CuTe's arch headers only), to the same products.
//
// C = alpha A B + beta C for shared tiles A (M x K), B (K x N), C (M x N), each row- or column-major with a
// compile-time leading dimension. C is cut into TM x TN warp tiles, dealt to the block's warps in turn; each warp
// accumulates its tile over all of K in registers (float; double for fp64), then writes it. numba_tiles'
// numba_tiles/_matmul/mma_tiles.py chooses the warp tile and when this code serves (the atoms' multiples).
#pragma once

#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/mma_sm80.hpp>
#include <cutlass/tfloat32.h>

#include "common.cuh"

namespace numba_tiles {

// Stop the kernel unless `tile` is rows x cols, stored row-major (Row) or column-major with
// leading dimension LD.
template <bool Row, int LD, int Align, typename T>
__device__ __forceinline__ void check_tile(const matrix_ref<T>& tile, long long rows, long long cols, char name) {
  const bool ok = tile.rows == rows && tile.cols == cols &&
                  (Row ? (tile.col_stride == 1 && tile.row_stride == LD) : (tile.row_stride == 1 && tile.col_stride == LD));
  if (Align > 0 && reinterpret_cast<unsigned long long>(tile.data) % (Align > 0 ? Align : 1) != 0) {
    if (first_thread()) {
      // (no arguments: they would take a local-memory buffer on every path)
      printf("tiles.matmul: a tile is not aligned as alignment= promises; allocate the tiles with "
             "cuda.shared.array(shape, dtype, alignment=16)\n");
    }
    fail();
  }
  if (!ok) {
    if (first_thread()) {
      printf("tiles.matmul: %c is %lld x %lld with strides (%lld, %lld) items; it must be %lld x %lld, %s with leading "
             "dimension %d (ld=)\n", name, tile.rows, tile.cols, tile.row_stride, tile.col_stride, rows, cols,
             Row ? "row-major" : "column-major", LD);
    }
    fail();
  }
}

// The precision of float32 tiles multiplied on tensor cores (precision="tf32").
struct tf32 {};

// The atom of a precision: its M x N x K, the registers of a warp's A (M x K), B (K x N, one N-column block) and
// C fragments, how many atoms side by side one load of B feeds (nb: ldmatrix's four 8 x 8 blocks hold two 16-bit
// or tf32 ones), and the accumulator's type. (PTX ISA, "Matrix Fragments for mma.m16n8k16" and friends: lane l holds
// rows g = l / 4 (+ 8) and columns or K-items from t = l % 4.)
template <typename P>
struct mma_atom;
template <>
struct mma_atom<__half> {
  using op = cute::SM80_16x8x16_F32F16F16F32_TN;
  static constexpr int m = 16, n = 8, k = 16, a_regs = 4, b_regs = 2, c_regs = 4, nb = 2;
  using acc = float;
  using reg = unsigned;
};
template <>
struct mma_atom<__nv_bfloat16> : mma_atom<__half> {
  using op = cute::SM80_16x8x16_F32BF16BF16F32_TN;
};
template <>
struct mma_atom<tf32> : mma_atom<__half> {
  using op = cute::SM80_16x8x8_F32TF32TF32F32_TN;
  static constexpr int k = 8;
};
template <>
struct mma_atom<double> {
  using op = cute::SM80_8x8x4_F64F64F64F64_TN;
  static constexpr int m = 8, n = 8, k = 4, a_regs = 1, b_regs = 1, c_regs = 2, nb = 1;
  using acc = double;
  using reg = double;
};

// An item of an operand as the atom's register holds it: 16-bit items two to a register (the first in the low
// half), tf32 rounded from float as cuBLASDx's tfloat32_t rounds it (CUTLASS's: half an ulp up, then the tensor
// cores drop the low 13 bits), doubles as they are.
template <typename T>
__device__ __forceinline__ unsigned pack2(const T* first, const T* second) {
  const auto lo = *reinterpret_cast<const unsigned short*>(first);
  const auto hi = *reinterpret_cast<const unsigned short*>(second);
  return lo | static_cast<unsigned>(hi) << 16;
}
__device__ __forceinline__ unsigned tf32_bits(unsigned f) {
  return cutlass::tfloat32_t::round_half_ulp_truncate(__uint_as_float(f)).raw();
}

// A tile's item (r, c) as an offset in items: row-major (Row) or column-major with leading dimension LD.
// (mma_steps.cuh's swizzled tiles answer the same two names.)
template <bool Row, int LD>
struct dense {
  static constexpr bool row = Row;
  static __device__ __forceinline__ int at(int r, int c) { return Row ? r * LD + c : r + c * LD; }
};

// The 16-byte line at `p` that a lane hands ldmatrix: a row of one of its 8 x 8 blocks of 16-bit items (8 x 4 tf32).
template <typename T>
__device__ __forceinline__ const cute::uint128_t& line(const T* p) {
  return *reinterpret_cast<const cute::uint128_t*>(p);
}

// A warp's fragment of A for the atom at (m0, k0): by ldmatrix (Ldsm: 16-bit items, or tf32 along K) from the
// row-major or column-major tile, else item by item.
template <typename P, class Layout, bool Ldsm, typename T>
__device__ __forceinline__ void load_a(const T* a, int m0, int k0, int lane,
                                       typename mma_atom<P>::reg (&r)[mma_atom<P>::a_regs]) {
  constexpr bool Row = Layout::row;
  const int g = lane / 4, t = lane % 4;
  auto at = [&](int m, int k) { return a + Layout::at(m, k); };
  if constexpr (cuda::std::is_same_v<P, double>) {
    r[0] = *at(m0 + g, k0 + t);
  } else if constexpr (cuda::std::is_same_v<P, tf32>) {
    if constexpr (Ldsm && Row) {
      // matrix j of the four: rows m0 + 8 (j % 2), K-items k0 + 4 (j / 2); lane l gives line l % 8 of matrix l / 8
      cute::SM75_U32x4_LDSM_N::copy(line(at(m0 + lane % 16, k0 + lane / 16 * 4)), r[0], r[1], r[2], r[3]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        r[i] = *reinterpret_cast<const unsigned*>(at(m0 + g + 8 * (i % 2), k0 + t + 4 * (i / 2)));
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) r[i] = tf32_bits(r[i]);
  } else if constexpr (Ldsm && Row) {
    cute::SM75_U32x4_LDSM_N::copy(line(at(m0 + lane % 16, k0 + lane / 16 * 8)), r[0], r[1], r[2], r[3]);
  } else if constexpr (Ldsm) {
    // (column-major: the lines run along M; the transposing ldmatrix gives each lane its row's two K-items)
    const int j = lane / 8;
    cute::SM75_U16x8_LDSM_T::copy(line(at(m0 + j % 2 * 8, k0 + j / 2 * 8 + lane % 8)), r[0], r[1], r[2], r[3]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int m = m0 + g + 8 * (i % 2), k = k0 + 2 * t + 8 * (i / 2);
      r[i] = pack2(at(m, k), at(m, k + 1));
    }
  }
}

// A warp's fragments of B for the atoms side by side at (k0, n0), (k0, n0 + 8) (one for fp64).
template <typename P, class Layout, bool Ldsm, typename T>
__device__ __forceinline__ void load_b(const T* b, int k0, int n0, int lane,
                                       typename mma_atom<P>::reg (&r)[mma_atom<P>::nb][mma_atom<P>::b_regs]) {
  constexpr bool Row = Layout::row;
  const int g = lane / 4, t = lane % 4, j = lane / 8;
  auto at = [&](int k, int n) { return b + Layout::at(k, n); };
  if constexpr (cuda::std::is_same_v<P, double>) {
    r[0][0] = *at(k0 + t, n0 + g);
  } else if constexpr (cuda::std::is_same_v<P, tf32>) {
    if constexpr (Ldsm && !Row) {
      cute::SM75_U32x4_LDSM_N::copy(line(at(k0 + j % 2 * 4, n0 + j / 2 * 8 + lane % 8)), r[0][0], r[0][1], r[1][0],
                                    r[1][1]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        r[i / 2][i % 2] = *reinterpret_cast<const unsigned*>(at(k0 + t + 4 * (i % 2), n0 + 8 * (i / 2) + g));
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) r[i / 2][i % 2] = tf32_bits(r[i / 2][i % 2]);
  } else if constexpr (Ldsm && !Row) {
    // (column-major: lines along K; matrix j holds K-items k0 + 8 (j % 2) of columns n0 + 8 (j / 2))
    cute::SM75_U32x4_LDSM_N::copy(line(at(k0 + j % 2 * 8, n0 + j / 2 * 8 + lane % 8)), r[0][0], r[0][1], r[1][0],
                                  r[1][1]);
  } else if constexpr (Ldsm) {
    cute::SM75_U16x8_LDSM_T::copy(line(at(k0 + j % 2 * 8 + lane % 8, n0 + j / 2 * 8)), r[0][0], r[0][1], r[1][0],
                                  r[1][1]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = k0 + 2 * t + 8 * (i % 2), n = n0 + 8 * (i / 2) + g;
      r[i / 2][i % 2] = pack2(at(k, n), at(k + 1, n));
    }
  }
}

// Two items of C adjacent in a row as one (an 8- or 16-byte move; 4 bytes for half).
template <typename TC, typename V>
struct vector_pair {
  using type = V;
  static __device__ __forceinline__ type make(TC x, TC y) { return V{x, y}; }
  static __device__ __forceinline__ TC first(type p) { return p.x; }
  static __device__ __forceinline__ TC second(type p) { return p.y; }
};
template <typename TC>
struct pair_of;
template <>
struct pair_of<float> : vector_pair<float, float2> {};
template <>
struct pair_of<double> : vector_pair<double, double2> {};
template <>
struct pair_of<__half> {
  using type = __half2;
  static __device__ __forceinline__ type make(__half x, __half y) { return __halves2half2(x, y); }
  static __device__ __forceinline__ __half first(type p) { return __low2half(p); }
  static __device__ __forceinline__ __half second(type p) { return __high2half(p); }
};

// fp64 K-steps of two atoms: a lane's items are A's (m, k0 + 2t) and (m, k0 + 2t + 1) and B's (k0 + 2t, n) and
// (k0 + 2t + 1, n), the first atom taking the step's even K-items and the second its odd ones (an atom sums over
// its four K-items whichever they are, so long as A's and B's agree). Where a lane's two items are adjacent in the
// tile (A row-major, B column-major) on 16-byte lines (Lines), they are one 16-byte load: half the loads of an
// item at a time, and on unpadded tiles, whose rows all start on the same bank, half the bank conflicts.
template <bool Adjacent, bool Lines>
__device__ __forceinline__ void load_pair(const double* first, const double* second, double& x, double& y) {
  if constexpr (Adjacent && Lines) {
    const double2 both = *reinterpret_cast<const double2*>(first);
    x = both.x, y = both.y;
  } else {
    x = *first, y = *second;
  }
}

template <class Atom, typename R, int... A, int... B, int... C>
__device__ __forceinline__ void mma(typename Atom::acc (&d)[Atom::c_regs], const R (&a)[Atom::a_regs],
                                    const R (&b)[Atom::b_regs], cuda::std::integer_sequence<int, A...>,
                                    cuda::std::integer_sequence<int, B...>, cuda::std::integer_sequence<int, C...>) {
  Atom::op::fma(d[C]..., a[A]..., b[B]..., d[C]...);
}

// acc += the warp's TM x TN tile of A B at (m0, n0), over all of K: A (M x K) and B (K x N) in shared memory as
// LayoutA and LayoutB place their items, the fragments by ldmatrix (Ldsm: lines on 16 bytes; fp64's by 16-byte
// pairs) or item by item. acc is the warp's fragments, [TM / m][TN / n][c_regs] of the atom (PTX's fragment of C:
// lane l holds rows l / 4 (+ 8), columns 2 (l % 4) and the next).
template <typename P, int K, class LayoutA, class LayoutB, int TM, int TN, bool Ldsm, typename TA, typename TB>
__device__ __forceinline__ void warp_product(const TA* a, const TB* b, int m0, int n0, int lane,
                                             typename mma_atom<P>::acc (&acc)[TM / mma_atom<P>::m][TN / mma_atom<P>::n]
                                                                             [mma_atom<P>::c_regs]) {
  using Atom = mma_atom<P>;
  using R = typename Atom::reg;
  constexpr int MI = TM / Atom::m, NI = TN / Atom::n, NB = Atom::nb;
  static_assert(TM % Atom::m == 0 && TN % (Atom::n * NB) == 0 && K % Atom::k == 0, "a warp tile of whole atoms");
  // (K's steps rolled past 8: a long K unrolled whole would only grow the code)
  if constexpr (cuda::std::is_same_v<P, double> && K % (2 * Atom::k) == 0) {  // (load_pair's steps of two atoms)
    const int g = lane / 4, t = lane % 4;
#pragma unroll(K / 8 <= 8 ? K / 8 : 2)
    for (int k0 = 0; k0 < K; k0 += 2 * Atom::k) {
      const int k = k0 + 2 * t;
      double fa[MI][2], fb[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const int m = m0 + i * Atom::m + g;
        load_pair<LayoutA::row, Ldsm>(a + LayoutA::at(m, k), a + LayoutA::at(m, k + 1), fa[i][0], fa[i][1]);
      }
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int n = n0 + j * Atom::n + g;
        load_pair<!LayoutB::row, Ldsm>(b + LayoutB::at(k, n), b + LayoutB::at(k + 1, n), fb[j][0], fb[j][1]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int i = 0; i < MI; ++i) {
#pragma unroll
          for (int j = 0; j < NI; ++j) {
            Atom::op::fma(acc[i][j][0], acc[i][j][1], fa[i][h], fb[j][h], acc[i][j][0], acc[i][j][1]);
          }
        }
      }
    }
  } else {
#pragma unroll(K / Atom::k <= 8 ? K / Atom::k : 2)
    for (int k0 = 0; k0 < K; k0 += Atom::k) {
      R fa[MI][Atom::a_regs], fb[NI / NB][NB][Atom::b_regs];
#pragma unroll
      for (int i = 0; i < MI; ++i) load_a<P, LayoutA, Ldsm>(a, m0 + i * Atom::m, k0, lane, fa[i]);
#pragma unroll
      for (int j = 0; j < NI / NB; ++j) load_b<P, LayoutB, Ldsm>(b, k0, n0 + j * NB * Atom::n, lane, fb[j]);
#pragma unroll
      for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          mma<Atom>(acc[i][j], fa[i], fb[j / NB][j % NB], cuda::std::make_integer_sequence<int, Atom::a_regs>{},
                    cuda::std::make_integer_sequence<int, Atom::b_regs>{},
                    cuda::std::make_integer_sequence<int, Atom::c_regs>{});
        }
      }
    }
  }
}

// The warp's TM x TN tile of C at (m0, n0): acc over all of K, then C = alpha acc + beta C (C not read when beta
// is 0), rounded to C's type.
template <typename P, int K, bool RowA, bool RowB, bool RowC, int LDA, int LDB, int LDC, int TM, int TN, bool Ldsm,
          typename TA, typename TB, typename TC>
__device__ __forceinline__ void mma_warp_tile(const TA* a, const TB* b, TC* c, int m0, int n0, int lane, TC alpha,
                                              TC beta) {
  using Atom = mma_atom<P>;
  using Acc = typename Atom::acc;
  constexpr int MI = TM / Atom::m, NI = TN / Atom::n;
  Acc acc[MI][NI][Atom::c_regs] = {};
  warp_product<P, K, dense<RowA, LDA>, dense<RowB, LDB>, TM, TN, Ldsm>(a, b, m0, n0, lane, acc);
  const Acc s = static_cast<Acc>(alpha), z = static_cast<Acc>(beta);
  const bool reads = z != Acc(0);
  const int g = lane / 4, t = lane % 4;
  // A lane's items of C go by pairs (columns 2t and 2t + 1 of a row g, or g + 8), one pair an atom side by side.
  // Where C is row-major every lane of a store meets the same columns of its own row, and rows share banks when
  // C's leading dimension is a multiple of 32 words (as unpadded tiles' are): 8 lanes a bank. So at step q lane l
  // takes the pair of atom (q + g) % NI, its pairs rotated by g in registers (selects: no local memory), and the
  // lanes of a store meet different columns: none share a bank with 4 atoms side by side. Pairs adjacent in memory
  // move as one 8- or 16-byte item where C's rows allow it.
  constexpr int Rows = Atom::c_regs / 2;  // (a lane's rows an atom: g and g + 8; fp64's g)
  constexpr bool Pairs = RowC && LDC % 2 == 0;
  using Pair = typename pair_of<TC>::type;
  const bool paired = Pairs && reinterpret_cast<unsigned long long>(c) % sizeof(Pair) == 0;
  const int turn = RowC ? g % NI : 0;
#pragma unroll
  for (int i = 0; i < MI; ++i) {
#pragma unroll
    for (int h = 0; h < Rows; ++h) {
      Acc v[NI][2];
#pragma unroll
      for (int j = 0; j < NI; ++j) v[j][0] = acc[i][j][2 * h], v[j][1] = acc[i][j][2 * h + 1];
#pragma unroll
      for (int bit = 1; bit < NI && bit < 8; bit *= 2) {
        if (turn & bit) {  // (rotate by bit: v[j] = v[j + bit])
          Acc w[NI][2];
#pragma unroll
          for (int j = 0; j < NI; ++j) w[j][0] = v[(j + bit) % NI][0], w[j][1] = v[(j + bit) % NI][1];
#pragma unroll
          for (int j = 0; j < NI; ++j) v[j][0] = w[j][0], v[j][1] = w[j][1];
        }
      }
      const int row = m0 + i * Atom::m + g + 8 * h;
#pragma unroll
      for (int q = 0; q < NI; ++q) {
        const int col = n0 + (q + turn) % NI * Atom::n + 2 * t;
        TC* out = c + (RowC ? row * LDC + col : row + col * LDC);
        Acc x = s * v[q][0], y = s * v[q][1];
        if (paired) {
          Pair& both = *reinterpret_cast<Pair*>(out);
          if (reads) {
            const Pair old = both;
            x += z * static_cast<Acc>(pair_of<TC>::first(old)), y += z * static_cast<Acc>(pair_of<TC>::second(old));
          }
          both = pair_of<TC>::make(static_cast<TC>(x), static_cast<TC>(y));
        } else {
          TC& second = out[RowC ? 1 : LDC];
          if (reads) x += z * static_cast<Acc>(*out), y += z * static_cast<Acc>(second);
          *out = static_cast<TC>(x);
          second = static_cast<TC>(y);
        }
      }
    }
  }
}

template <int M, int N, int K, typename TA, typename TB, typename TC, bool RowA, bool RowB, bool RowC, int LDA, int LDB,
          int LDC, int Align, int BX, int BY, int BZ, typename P, int TM, int TN>
__device__ __forceinline__ void mma_matmul(matrix_ref<TA> a, matrix_ref<TB> b, matrix_ref<TC> c, TC alpha, TC beta) {
  check_launch<BX, BY, BZ>("matmul");
  check_tile<RowA, LDA, Align>(a, M, K, 'A');
  check_tile<RowB, LDB, Align>(b, K, N, 'B');
  check_tile<RowC, LDC, Align>(c, M, N, 'C');
  constexpr int Warps = BX * BY * BZ / 32, Tiles = M / TM * (N / TN);
  // ldmatrix (and fp64's pairs) read 16-byte lines: every line of A and B starts at a multiple of 16 bytes when
  // the leading dimensions are whole 16 bytes and the tiles start so (alignment=16 promises it; else it is tested
  // here, once, the same for every thread: shared arrays are mostly so placed).
  constexpr bool Lines = LDA * sizeof(TA) % 16 == 0 && LDB * sizeof(TB) % 16 == 0;
  const auto starts = reinterpret_cast<unsigned long long>(a.data) | reinterpret_cast<unsigned long long>(b.data);
  const bool aligned = Lines && (Align == 16 || starts % 16 == 0);
  const int warp = thread_rank<BX, BY>() / 32, lane = thread_rank<BX, BY>() % 32;
  for (int tile = warp; tile < Tiles; tile += Warps) {
    const int m0 = tile / (N / TN) * TM, n0 = tile % (N / TN) * TN;
    if constexpr (Lines) {
      if (aligned) {
        mma_warp_tile<P, K, RowA, RowB, RowC, LDA, LDB, LDC, TM, TN, true>(a.data, b.data, c.data, m0, n0, lane, alpha,
                                                                           beta);
        continue;
      }
    }
    if constexpr (!Lines || Align != 16) {
      mma_warp_tile<P, K, RowA, RowB, RowC, LDA, LDB, LDC, TM, TN, false>(a.data, b.data, c.data, m0, n0, lane, alpha,
                                                                          beta);
    }
  }
  __syncthreads();
}

}  // namespace numba_tiles
