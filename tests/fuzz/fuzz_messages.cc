// SPDX-License-Identifier: MIT
// libFuzzer target: every bootstrap message decoder and the check of a peer's RankInfo.
// The first byte picks the decoder; the rest is the message. Decoders must reject what
// they cannot read, never read past it, and round-trip what they accept.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bootstrap/messages.h"
#include "topology/topology.h"

using namespace cco;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 9) {
    case 0: {
      RootHello h;
      if (DecodeHello(bytes, &h).ok() && EncodeHello(h) != bytes) abort();
      break;
    }
    case 1: {
      RootWelcome w;
      DecodeWelcome(bytes, &w);
      break;
    }
    case 2: {
      HubJoin j;
      if (DecodeJoin(bytes, &j).ok() && EncodeJoin(j) != bytes) abort();
      break;
    }
    case 3: {
      Contribution c;
      if (DecodeContribution(bytes, &c).ok() && EncodeContribution(c) != bytes) abort();
      break;
    }
    case 4: {
      std::vector<std::string> all;
      const int nRanks = bytes.empty() ? 1 : (static_cast<uint8_t>(bytes[0]) % 8) + 1;
      DecodeAnswer(bytes.substr(bytes.empty() ? 0 : 1), nRanks, &all);
      break;
    }
    case 5: {
      MeshJoin m;
      DecodeMeshJoin(bytes, &m);
      uint64_t tag;
      DecodeFdMessage(bytes, &tag);
      break;
    }
    case 6: {
      Status s;
      if (DecodeStatus(bytes, &s).ok() && s.message().size() > kMaxStatusText) abort();
      break;
    }
    case 7: {
      RankInfo info;
      memset(&info, 0, sizeof(info));
      memcpy(&info, bytes.data(), bytes.size() < sizeof(info) ? bytes.size() : sizeof(info));
      if (ValidateRankInfo(info, 1).ok()) {
        // Accepted: its strings are terminated inside their fields.
        if (memchr(info.meshName, 0, sizeof(info.meshName)) == nullptr) abort();
        if (memchr(info.busId, 0, sizeof(info.busId)) == nullptr) abort();
      }
      break;
    }
    default: {
      WireReader r(bytes);
      Status s;
      GetStatus(r, &s);
      break;
    }
  }
  return 0;
}
