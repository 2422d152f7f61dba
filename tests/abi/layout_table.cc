// SPDX-License-Identifier: MIT
// The layout of the ABI structs as one table of numbers, compiled for every target:
// {offset, size} per field of CCO_LAYOUT_FIELDS, then {size, alignment} per struct.
// Host: printed by layout_table_host (this file with -DCCO_LAYOUT_MAIN); devices: read
// from the LLVM IR constant by tests/abi/layout_test.py.
#include <stddef.h>
#include <stdint.h>

#include "abi/cco_abi.h"
#include "tests/abi/layout_fields.h"

#define FIELD(S, F) offsetof(S, F), sizeof(((S*)0)->F),
#define STRUCT(S) sizeof(S), alignof(S),
extern "C" __attribute__((visibility("default")))
const uint64_t cco_layout_table[] = {CCO_LAYOUT_FIELDS(FIELD) CCO_LAYOUT_STRUCTS(STRUCT)};
#undef STRUCT
#undef FIELD

// Every byte of each struct is covered by the listed fields (no padding in the ABI): a
// field missing from layout_fields.h breaks these sums.
template <class A, class B> struct Same {
  static constexpr bool value = false;
};
template <class A> struct Same<A, A> {
  static constexpr bool value = true;
};
template <class S> constexpr uint64_t listed_bytes() {
  uint64_t n = 0;
#define ADD(T, F) n += Same<T, S>::value ? sizeof(T::F) : 0;
  CCO_LAYOUT_FIELDS(ADD)
#undef ADD
  return n;
}
#define COVERED(S) static_assert(listed_bytes<S>() == sizeof(S), #S ": a field is missing from layout_fields.h");
CCO_LAYOUT_STRUCTS(COVERED)
#undef COVERED

#ifdef CCO_LAYOUT_MAIN
#include <stdio.h>
int main() {
#define NAME(S, F) printf("%s.%s\n", #S, #F);
#define SNAME(S) printf("%s\n", #S);
  CCO_LAYOUT_FIELDS(NAME)
  CCO_LAYOUT_STRUCTS(SNAME)
  printf("--\n");
  for (size_t i = 0; i < sizeof(cco_layout_table) / sizeof(cco_layout_table[0]); ++i)
    printf("%llu\n", (unsigned long long)cco_layout_table[i]);
  return 0;
}
#endif
