// SPDX-License-Identifier: MIT
// The cryptography CCO uses, none of it its own: HMAC-SHA-256 and a constant-time
// comparison from OpenSSL's libcrypto (loaded with dlopen, so libcco.so links nothing
// extra), random bytes from the kernel's CSPRNG (getrandom).
#ifndef CCO_HOST_AUTH_CRYPTO_H_
#define CCO_HOST_AUTH_CRYPTO_H_

#include <stddef.h>
#include <stdint.h>

#include <array>
#include <initializer_list>
#include <string>

#include "common/status.h"

namespace cco {

constexpr size_t kMacBytes = 32;
using Mac = std::array<uint8_t, kMacBytes>;

// A 256-bit key: a communicator's secret or a key derived from it.
struct Key {
  std::array<uint8_t, 32> bytes{};
};

// A piece of a message to authenticate.
struct Bytes {
  const void* data;
  size_t size;
  Bytes(const void* d, size_t n) : data(d), size(n) {}
  Bytes(const std::string& s) : data(s.data()), size(s.size()) {}  // NOLINT: implicit on purpose
  Bytes(const char* s);                                            // NOLINT: a label
  template <size_t N> Bytes(const std::array<uint8_t, N>& a) : data(a.data()), size(N) {}  // NOLINT
};

// `size` bytes from the kernel's CSPRNG. Fails (never falls back to a weaker source) when
// the kernel cannot provide them.
Status RandomBytes(void* out, size_t size);

// HMAC-SHA-256 under `key` of the concatenation of `parts`. Fails with ccoUnsupported when
// libcrypto cannot be loaded (the message names what was tried).
Status Hmac(const Key& key, std::initializer_list<Bytes> parts, Mac* out);

// A key derived from `key` for one use, named by `label` and `context`: HMAC(key, label | context).
Status DeriveKey(const Key& key, const char* label, std::initializer_list<Bytes> context, Key* out);

// Equality in time that does not depend on where the inputs differ.
bool MacEqual(const Mac& a, const Mac& b);

// Frees what libcrypto keeps for the calling thread (its error queue, 904 bytes with OpenSSL 3).
// libcrypto frees it itself when the thread ends, unless the process is exiting at the same
// time (its cleanup at exit drops the thread keys first): a detached thread that may outlive
// its caller calls this once its last HMAC is done. Later calls to Hmac still work.
void ReleaseThreadCryptoState();

// Whether libcrypto is usable here (ccoUnsupported with the reason if not).
Status CryptoAvailable();

}  // namespace cco

#endif  // CCO_HOST_AUTH_CRYPTO_H_
