// Operators of the reductions, shared by the block and warp families.
#pragma once

#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>

namespace numba_tiles {

// The value of a reduction over no items: the op's identity. The ops are CCCL's transparent
// functors (plus<>, not plus<T>): CUB selects REDUX and other fast paths only for those.
template <typename Op, typename T>
struct identity;
template <typename T>
struct identity<::cuda::std::plus<>, T> { static constexpr T value = T(0); };
template <typename T>
struct identity<::cuda::std::multiplies<>, T> { static constexpr T value = T(1); };
template <typename T>
struct identity<::cuda::minimum<>, T> {
  static constexpr T value = ::cuda::std::numeric_limits<T>::has_infinity
                               ? ::cuda::std::numeric_limits<T>::infinity()
                               : ::cuda::std::numeric_limits<T>::max();
};
template <typename T>
struct identity<::cuda::maximum<>, T> {
  static constexpr T value = ::cuda::std::numeric_limits<T>::has_infinity
                               ? -::cuda::std::numeric_limits<T>::infinity()
                               : ::cuda::std::numeric_limits<T>::lowest();
};
template <typename T>
struct identity<::cuda::std::bit_and<>, T> { static constexpr T value = static_cast<T>(~T(0)); };
template <typename T>
struct identity<::cuda::std::bit_or<>, T> { static constexpr T value = T(0); };
template <typename T>
struct identity<::cuda::std::bit_xor<>, T> { static constexpr T value = T(0); };

}  // namespace numba_tiles
