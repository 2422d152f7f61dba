// Agreement between the ranks of a communicator on a collective call: every rank reports
// how its part went, with a value (a proposal) when the call needs the ranks to match.
#ifndef CCO_HOST_COMM_AGREE_H_
#define CCO_HOST_COMM_AGREE_H_

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

}  // namespace cco

#endif  // CCO_HOST_COMM_AGREE_H_
