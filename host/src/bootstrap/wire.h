// SPDX-License-Identifier: MIT
// Byte-level encoding of bootstrap messages: trivially copyable values and strings,
// appended in order and read back with bounds checks (a short or corrupt message is an
// error, never an overread).
#ifndef CCO_HOST_BOOTSTRAP_WIRE_H_
#define CCO_HOST_BOOTSTRAP_WIRE_H_

#include <stdint.h>
#include <string.h>

#include <string>
#include <type_traits>

#include "common/status.h"

namespace cco {

class WireWriter {
 public:
  template <class T> WireWriter& Put(const T& value) {
    static_assert(std::is_trivially_copyable<T>::value, "wire values are plain data");
    buffer_.append(reinterpret_cast<const char*>(&value), sizeof(T));
    return *this;
  }
  WireWriter& PutString(const std::string& s) {
    Put(static_cast<uint64_t>(s.size()));
    buffer_.append(s);
    return *this;
  }
  const std::string& bytes() const { return buffer_; }

 private:
  std::string buffer_;
};

class WireReader {
 public:
  explicit WireReader(const std::string& bytes) : bytes_(bytes) {}
  template <class T> Status Get(T* value) {
    static_assert(std::is_trivially_copyable<T>::value, "wire values are plain data");
    if (bytes_.size() - pos_ < sizeof(T)) return RemoteError("a truncated bootstrap message");
    memcpy(value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  // A string of at most maxSize bytes.
  Status GetString(std::string* s, size_t maxSize) {
    uint64_t n = 0;
    CCO_RETURN_IF_ERROR(Get(&n));
    if (n > maxSize) return RemoteError(Fmt("a bootstrap message carried a ", n, "-byte string (limit ", maxSize, ")"));
    if (bytes_.size() - pos_ < n) return RemoteError("a truncated bootstrap message");
    s->assign(bytes_, pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
};

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_WIRE_H_
