// SPDX-License-Identifier: MIT
// Agreement between the ranks of a communicator on a collective call: every rank reports
// how its part went, with a value (a proposal) when the call needs the ranks to match.
#ifndef CCO_HOST_COMM_AGREE_H_
#define CCO_HOST_COMM_AGREE_H_

#include <string.h>

#include <string>
#include <type_traits>
#include <vector>

#include "bootstrap/messages.h"
#include "comm/communicator.h"

namespace cco {

// Turns rank r's reported failure into this rank's result: what r said, under r's name (a
// peer's bad argument is a remote error here).
inline Status PeerFailed(const std::string& op, size_t r, const Status& theirs) {
  return Status(theirs.code() == ccoInvalidArgument ? ccoRemoteError : theirs.code(),
                Fmt(op, " failed on rank ", r, ": ", theirs.message()));
}

// Every rank contributes its local status and `mine`; all fail if one did (this rank's own
// failure first, as the most precise thing to say), else `all` holds every rank's value.
// Every rank receives every rank's value: for calls that need them all (addresses).
template <class T>
Status AgreeOn(ccoComm& c, const std::string& op, const Status& local, const T& mine, std::vector<T>* all) {
  static_assert(std::is_trivially_copyable<T>::value, "proposals are plain data");
  WireWriter w;
  PutStatus(w, local);
  std::vector<std::string> parts;
  CCO_RETURN_IF_ERROR(c.bootstrap->Exchange(op, w.Put(mine).bytes(), &parts));
  if (!local.ok()) return local;
  all->assign(parts.size(), T{});
  for (size_t r = 0; r < parts.size(); ++r) {
    WireReader reader(parts[r]);
    Status theirs;
    if (!GetStatus(reader, &theirs).ok() || !reader.Get(&(*all)[r]).ok() || !Finished(reader).ok())
      return RemoteError(Fmt(op, ": rank ", r, " sent a malformed report"));
    if (!theirs.ok()) return PeerFailed(op, r, theirs);
  }
  return Status::Ok();
}

// Where the ranks' values in AgreeOnSame part: the lowest rank whose value differs from rank
// 0's (-1: none), its value and rank 0's.
template <class T> struct Difference {
  int rank = -1;
  T theirs{};
  T zero{};
};

// Like AgreeOn for a value every rank should hold alike: rank 0 alone compares them, so a
// call costs O(nRanks) bytes in all. Fails as AgreeOn does where a rank failed; else
// *difference says where the values part, if they do (the caller names what differs).
template <class T>
Status AgreeOnSame(ccoComm& c, const std::string& op, const Status& local, const T& mine, Difference<T>* difference) {
  static_assert(std::has_unique_object_representations<T>::value, "values compare as bytes: plain data, no padding");
  Verdict v;
  CCO_RETURN_IF_ERROR(c.bootstrap->Agree(op, local, std::string(reinterpret_cast<const char*>(&mine), sizeof(T)), &v));
  if (!local.ok()) return local;
  if (v.failedRank >= 0) return PeerFailed(op, v.failedRank, v.failure);
  *difference = Difference<T>{};
  if (v.value.size() != sizeof(T) || (v.differentRank >= 0 && v.differentValue.size() != sizeof(T)))
    return RemoteError(
        Fmt(op, ": rank ", v.value.size() != sizeof(T) ? 0 : v.differentRank, " sent a malformed report"));
  memcpy(&difference->zero, v.value.data(), sizeof(T));
  if (v.differentRank < 0) return Status::Ok();
  difference->rank = v.differentRank;
  memcpy(&difference->theirs, v.differentValue.data(), sizeof(T));
  return Status::Ok();
}

}  // namespace cco

#endif  // CCO_HOST_COMM_AGREE_H_
