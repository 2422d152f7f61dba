// SPDX-License-Identifier: MIT
// Room in the process's descriptor table before a collective call needs it.
//
// Linux grows a process's descriptor table in powers of two, and in a multi-threaded process
// (any process with a GPU context) each growth waits for an RCU grace period, milliseconds and
// longer under MPS. Inside a collective call every peer waits for the rank that grows its
// table, so a growth there costs the whole call. ccoCommCreate makes the room first, all ranks
// at once, before its first collective step.
#ifndef CCO_HOST_COMMON_FD_TABLE_H_
#define CCO_HOST_COMMON_FD_TABLE_H_

#include "common/status.h"

namespace cco {

// Grows the table now, where `headroom` more descriptors would not fit in it. Requests add
// up, as if each were used in full, until the table must grow: only then is it listed again
// (what is really open), so many ranks of one process asking at once cost one listing, not
// one each. Where the soft descriptor limit (RLIMIT_NOFILE) is below what the table must
// hold, it is raised as far as that (never past the hard limit); where even the hard limit
// leaves no room for `headroom` more, the result says so, naming `what` needs them and the
// limits, before the step that would run out. Best effort otherwise: without /proc it
// leaves things as they are.
Status ReserveFdHeadroom(int headroom, const char* what);

}  // namespace cco

#endif  // CCO_HOST_COMMON_FD_TABLE_H_
