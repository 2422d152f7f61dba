// SPDX-License-Identifier: MIT
// The guide's C++ header pair as a C++ caller uses it: cco/cco_scale_out.hpp (which pulls in
// cco/cco.hpp) compiles on its own, the size-only ccoWindowRegister allocates and registers,
// and ccoGetLsaPeerPtr finds this rank's copy of the window (cpu platform: device memory is
// host memory, so the test reads it directly).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cco/cco_scale_out.hpp"

namespace {

TEST(CppHeaders, SizeOnlyRegisterAndPeerPointer) {
  setenv("CCO_PLATFORM", "cpu", 1);
  ccoUniqueId id;
  ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  ccoComm* comm = nullptr;
  ASSERT_EQ(ccoCommCreate(id, 1, 0, 8 << 20, &comm), ccoSuccess);
  void* ptr = nullptr;
  ccoWindow_t win = 0;
  ASSERT_EQ(ccoWindowRegister(comm, size_t{4096}, &win, &ptr), ccoSuccess) << ccoGetLastError();
  ASSERT_NE(ptr, nullptr);
  memset(ptr, 0, 4096);
  auto* peer = static_cast<unsigned char*>(ccoGetLsaPeerPtr(win, 0, 16));
  EXPECT_EQ(peer, static_cast<unsigned char*>(ptr) + 16);
  *peer = 42;
  EXPECT_EQ(static_cast<unsigned char*>(ptr)[16], 42);
  EXPECT_EQ(ccoGetLsaPeerPtr(win, 1, 0), nullptr);        // not an LSA rank of a 1-rank job
  EXPECT_EQ(ccoWindowDeregister(comm, win), ccoSuccess);  // frees what the overload allocated
  // The two-step form is still the C function.
  ASSERT_EQ(ccoMemAlloc(comm, 4096, &ptr), ccoSuccess);
  ASSERT_EQ(ccoWindowRegister(comm, ptr, size_t{4096}, &win), ccoSuccess);
  EXPECT_EQ(ccoWindowDeregister(comm, win), ccoSuccess);
  EXPECT_EQ(ccoMemFree(comm, ptr), ccoSuccess);
  EXPECT_EQ(ccoCommDestroy(comm), ccoSuccess);
  // The overloads' argument orders are the guide's (a swapped order would not convert).
  (void)static_cast<ccoResult_t (*)(ccoComm*, size_t, ccoWindow_t*, void**)>(&ccoWindowRegister);
  (void)static_cast<ccoResult_t (*)(ccoComm*, void*, size_t, ccoWindow_t*)>(&ccoWindowRegister);
  // cco_scale_out.hpp brings the GDA and SDMA handles.
  static_assert(std::is_class<ccoGda<>>::value, "ccoGda");
  static_assert(std::is_class<ccoSdma>::value, "ccoSdma");
  // The doorbell mode is a ccoGdaDoorbellMode value, as the guide writes ccoGda<P, ccoGdaDoorbellMode>.
  static_assert(
      std::is_same<ccoGda<ccoGdaProxy, ccoGdaDeferred>, ccoGda<ccoGdaProxy, CCO_GDA_DOORBELL_DEFERRED>>::value,
      "ccoGda<P, ccoGdaDoorbellMode>");
}

}  // namespace
