// SPDX-License-Identifier: MIT
// libFuzzer target: the unique id decoder on any 128 bytes (shorter inputs are padded with
// zeros, longer ones cut). A decoded id must encode back to the same bytes.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cstdlib>

#include "bootstrap/unique_id.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ccoUniqueId id;
  memset(&id, 0, sizeof(id));
  memcpy(id.internal, data, size < sizeof(id.internal) ? size : sizeof(id.internal));
  cco::UniqueIdContents contents;
  if (cco::DecodeUniqueId(id, &contents).ok()) {
    ccoUniqueId again;
    cco::EncodeUniqueId(contents, &again);
    cco::UniqueIdContents twice;
    if (!cco::DecodeUniqueId(again, &twice).ok() || twice.secret.bytes != contents.secret.bytes) abort();
  }
  return 0;
}
