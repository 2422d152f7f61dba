// SPDX-License-Identifier: MIT
//===-- device/arch/memory_order.h - order and scope tags -------*- C++ -*-===//
//
// Memory order and scope are types, not values (as in desul): a wrong combination
// (an acquire store, say) fails to compile, and picking the instruction costs nothing at
// run time. Every target implements the same atomics for the same tags.
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_ARCH_MEMORY_ORDER_H_
#define CCO_DEVICE_ARCH_MEMORY_ORDER_H_

namespace cco {
namespace order {
struct Relaxed {};
struct Acquire {};
struct Release {};
struct AcqRel {};
}  // namespace order

namespace scope {
struct Block {};   // the threads of one block (CTA / workgroup)
struct Device {};  // every thread of one GPU
struct System {};  // every GPU and CPU thread of the host, peers' mappings included
}  // namespace scope

namespace detail {
template <class A, class B> struct IsSame {
  static constexpr bool value = false;
};
template <class A> struct IsSame<A, A> {
  static constexpr bool value = true;
};
}  // namespace detail

template <class O> struct IsLoadOrder {
  static constexpr bool value = detail::IsSame<O, order::Relaxed>::value || detail::IsSame<O, order::Acquire>::value;
};
template <class O> struct IsStoreOrder {
  static constexpr bool value = detail::IsSame<O, order::Relaxed>::value || detail::IsSame<O, order::Release>::value;
};
template <class O> struct IsRmwOrder {
  static constexpr bool value =
      IsLoadOrder<O>::value || IsStoreOrder<O>::value || detail::IsSame<O, order::AcqRel>::value;
};
// The compiler's __ATOMIC_* value of an order tag, for the targets whose atomics are the
// compiler's builtins (amdgcn's __hip_atomic_*, the host's __atomic_*; nvptx writes PTX).
template <class O> struct OrderId;
template <> struct OrderId<order::Relaxed> {
  static constexpr int value = __ATOMIC_RELAXED;
};
template <> struct OrderId<order::Acquire> {
  static constexpr int value = __ATOMIC_ACQUIRE;
};
template <> struct OrderId<order::Release> {
  static constexpr int value = __ATOMIC_RELEASE;
};
template <> struct OrderId<order::AcqRel> {
  static constexpr int value = __ATOMIC_ACQ_REL;
};

template <class S> struct IsScope {
  static constexpr bool value = detail::IsSame<S, scope::Block>::value || detail::IsSame<S, scope::Device>::value ||
                                detail::IsSame<S, scope::System>::value;
};

}  // namespace cco

#endif  // CCO_DEVICE_ARCH_MEMORY_ORDER_H_
