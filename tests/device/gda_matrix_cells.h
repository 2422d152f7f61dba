// SPDX-License-Identifier: MIT
// The cells of the GDA matrix, shared by the thread-rank test (gda_matrix_host_test) and the
// process ranks in network namespaces (tests/host/net): doorbell mode x operation (put, put_value,
// get, signal) x signal action (none, INC, ADD) x (coop, thread mode). In every cell each rank
// sends to every member of its GDA team, then checks exactly what its team sent it: the
// bytes, the put_value words, what it got, and the signal's value (the sum of every sender's
// contribution, consumed).
#ifndef CCO_TESTS_DEVICE_GDA_MATRIX_CELLS_H_
#define CCO_TESTS_DEVICE_GDA_MATRIX_CELLS_H_

#include <stdio.h>
#include <string.h>

#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "tests/device/gda_ranks.h"

namespace cco {
namespace gda_test {
enum Op { kPut, kPutValue, kGet, kSignal };
constexpr const char* kOpNames[] = {"put", "put_value", "get", "signal"};
constexpr uint64_t kChunk = 256;     // bytes per put or get
constexpr uint64_t kInbox = 8192;    // where sender s's put lands: kInbox + s * kChunk
constexpr uint64_t kGotBox = 24576;  // where the get from peer p lands: kGotBox + p * kChunk
constexpr int32_t kSignalId = 1;

inline uint64_t Word(int rank, int cell) { return 0x5151000000000000ull + static_cast<uint64_t>(cell) * 1000 + rank; }
inline uint64_t Contribution(ccoSignalOp sig, int sender) { return sig == CCO_SIGNAL_INC ? 1 : 10 + sender; }

template <ccoGdaDoorbellMode Mode, class Coop, ccoThreadMode TM>
int32_t Send(ccoGda<ccoGdaProxy, Mode>& gda, const Rank& k, int peer, Op op, ccoSignalOp sig, int cell) {
  const uint64_t inbox = kInbox + kChunk * k.rank;
  const uint64_t add = sig == CCO_SIGNAL_NONE ? 0 : Contribution(sig, k.rank);
  switch (op) {
    case kPut: return gda.template put<Coop, TM>(peer, k.win, inbox, k.win, 0, kChunk, sig, kSignalId, add);
    case kPutValue:
      return gda.template put_value<Coop, TM>(peer, k.win, inbox, Word(k.rank, cell), sig, kSignalId, add);
    case kGet: return gda.template get<Coop, TM>(peer, k.win, 0, k.win, kGotBox + kChunk * peer, kChunk);
    case kSignal:
      if constexpr (Mode == CCO_GDA_DOORBELL_CALLER_ORDERED) return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
      else return gda.template signal<Coop>(peer, kSignalId, sig, add);
  }
  return CCO_DEVICE_STATUS_INVALID_ARGUMENT;
}

// One cell, in every rank: fill, agree, send to the team, flush, wait for the team's signal,
// agree, check, agree.
template <ccoGdaDoorbellMode Mode, class Coop, ccoThreadMode TM> bool Cell(Rank& k, Op op, ccoSignalOp sig, int cell) {
  ccoGda<ccoGdaProxy, Mode> gda(k.dc, cell % 2, 10'000'000'000ull);
  Fill(k.mem, k.rank * 131 + cell, kChunk / 4);
  memset(k.mem + kInbox, 0, kChunk * k.n);
  memset(k.mem + kGotBox, 0, kChunk * k.n);
  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
  uint64_t expected = 0;
  for (int i = 0; i < gda.team_size(); ++i) {
    const int peer = gda.team_peer(i);
    CHECK_OR_FAIL((Send<Mode, Coop, TM>(gda, k, peer, op, sig, cell)) == CCO_DEVICE_STATUS_OK);
    if (sig != CCO_SIGNAL_NONE) expected += Contribution(sig, peer);  // the team is symmetric
  }
  CHECK_OR_FAIL(gda.template flush<Coop>() == CCO_DEVICE_STATUS_OK);
  if (sig != CCO_SIGNAL_NONE)
    CHECK_OR_FAIL(gda.template wait_signal<Coop>(kSignalId, expected) == CCO_DEVICE_STATUS_OK);
  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
  for (int i = 0; i < gda.team_size(); ++i) {
    const int peer = gda.team_peer(i);
    const unsigned char* inbox = k.mem + kInbox + kChunk * peer;
    if (op == kPut) CHECK_OR_FAIL(Holds(inbox, peer * 131 + cell, kChunk / 4));
    if (op == kPutValue) CHECK_OR_FAIL(*reinterpret_cast<const volatile uint64_t*>(inbox) == Word(peer, cell));
    if (op == kGet) CHECK_OR_FAIL(Holds(k.mem + kGotBox + kChunk * peer, peer * 131 + cell, kChunk / 4));
  }
  CHECK_OR_FAIL(gda.read_signal(kSignalId) == 0);  // exactly what was waited for arrived
  return ccoBarrierAll(k.comm) == ccoSuccess;
}

template <ccoGdaDoorbellMode Mode> bool EveryCellOfMode(Rank& k, int* cell) {
  for (Op op : {kPut, kPutValue, kGet, kSignal}) {
    for (ccoSignalOp sig : {CCO_SIGNAL_NONE, CCO_SIGNAL_INC, CCO_SIGNAL_ADD}) {
      if (op == kGet && sig != CCO_SIGNAL_NONE) continue;  // a get carries no signal
      if (op == kSignal && (sig == CCO_SIGNAL_NONE || Mode == CCO_GDA_DOORBELL_CALLER_ORDERED)) continue;
      const int c = (*cell)++;
      bool ok = Cell<Mode, ccoCoopThread, CCO_THREAD_INDEPENDENT>(k, op, sig, c) &&
                Cell<Mode, ccoCoopThread, CCO_THREAD_AGGREGATE>(k, op, sig, c + 1000) &&
                Cell<Mode, ccoCoopWarp, CCO_THREAD_INDEPENDENT>(k, op, sig, c + 2000) &&
                Cell<Mode, ccoCoopBlock, CCO_THREAD_INDEPENDENT>(k, op, sig, c + 3000);
      if (!ok) {
        fprintf(stderr, "rank %d: cell failed: mode %d, %s, signal op %d\n", k.rank, Mode, kOpNames[op], sig);
        return false;
      }
    }
  }
  return true;
}

inline bool EveryCell(Rank& k) {
  int cell = 0;
  return EveryCellOfMode<ccoGdaImmediate>(k, &cell) && EveryCellOfMode<ccoGdaDeferred>(k, &cell) &&
         EveryCellOfMode<ccoGdaCallerOrdered>(k, &cell);
}

}  // namespace gda_test
}  // namespace cco

#endif  // CCO_TESTS_DEVICE_GDA_MATRIX_CELLS_H_
