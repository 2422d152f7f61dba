// SPDX-License-Identifier: MIT
#include "auth/crypto.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "common/shared_library.h"

namespace cco {
namespace {

// The libcrypto entry points used, with the signatures OpenSSL 1.1 and 3 share.
struct LibCrypto {
  const void* (*sha256)() = nullptr;  // EVP_sha256
  unsigned char* (*hmac)(const void* md, const void* key, int keyLength, const unsigned char* data, size_t size,
                         unsigned char* out, unsigned int* outLength) = nullptr;  // HMAC
  int (*memcmp)(const void* a, const void* b, size_t size) = nullptr;             // CRYPTO_memcmp
  void (*threadStop)() = nullptr;  // OPENSSL_thread_stop: frees this thread's state (optional)
};

Status Load(LibCrypto* crypto) {
  static const char* const kNames[] = {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so", nullptr};
  SharedLibrary library;
  CCO_RETURN_IF_ERROR(SharedLibrary::Open(kNames, "OpenSSL's libcrypto (needed to authenticate peers)", &library));
  CCO_RETURN_IF_ERROR(library.Resolve("EVP_sha256", &crypto->sha256));
  CCO_RETURN_IF_ERROR(library.Resolve("HMAC", &crypto->hmac));
  (void)library.ResolveOptional("OPENSSL_thread_stop", &crypto->threadStop);
  return library.Resolve("CRYPTO_memcmp", &crypto->memcmp);
}

const LibCrypto* Crypto(Status* status) {
  static LibCrypto crypto;
  static const Status loaded = Load(&crypto);
  *status = loaded;
  return loaded.ok() ? &crypto : nullptr;
}

}  // namespace

Bytes::Bytes(const char* s) : data(s), size(strlen(s)) {}

Status RandomBytes(void* out, size_t size) {
  auto* p = static_cast<uint8_t*>(out);
  while (size > 0) {
    ssize_t n = getrandom(p, size, 0);  // blocks only until the pool is initialised at boot
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("getrandom (the kernel's random source)", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status Hmac(const Key& key, std::initializer_list<Bytes> parts, Mac* out) {
  Status status;
  const LibCrypto* crypto = Crypto(&status);
  if (crypto == nullptr) return status;
  std::string message;
  size_t total = 0;
  for (const Bytes& b : parts) total += b.size;
  message.reserve(total);
  for (const Bytes& b : parts) message.append(static_cast<const char*>(b.data), b.size);
  unsigned int length = 0;
  if (crypto->hmac(crypto->sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
                   reinterpret_cast<const unsigned char*>(message.data()), message.size(), out->data(),
                   &length) == nullptr ||
      length != kMacBytes)
    return InternalError("libcrypto's HMAC-SHA-256 failed");
  return Status::Ok();
}

Status DeriveKey(const Key& key, const char* label, std::initializer_list<Bytes> context, Key* out) {
  std::string joined;
  for (const Bytes& b : context) joined.append(static_cast<const char*>(b.data), b.size);
  Mac mac;
  CCO_RETURN_IF_ERROR(Hmac(key, {Bytes(label), Bytes("\0", 1), Bytes(joined)}, &mac));
  out->bytes = mac;
  return Status::Ok();
}

void ReleaseThreadCryptoState() {
  Status status;
  const LibCrypto* crypto = Crypto(&status);
  if (crypto != nullptr && crypto->threadStop != nullptr) crypto->threadStop();
}

bool MacEqual(const Mac& a, const Mac& b) {
  Status status;
  const LibCrypto* crypto = Crypto(&status);
  if (crypto != nullptr) return crypto->memcmp(a.data(), b.data(), a.size()) == 0;
  // Unreachable in practice (no MAC exists without libcrypto); still constant time.
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

Status CryptoAvailable() {
  Status status;
  Crypto(&status);
  return status;
}

}  // namespace cco
