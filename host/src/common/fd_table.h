// Room in the process's descriptor table before a collective call needs it.
//
// Linux grows a process's descriptor table in powers of two, and in a multi-threaded process
// (any process with a GPU context) each growth waits for an RCU grace period: 8–24 ms measured
// on the H200 machine, ~90 ms under MPS. Inside a collective call every peer waits for the
// rank that grows its table (ccoWindowRegister 1 GiB with 8 ranks took 13–31 ms, 9–27 ms of it
// one rank's growth). ccoCommCreate makes the room first, all ranks at once, before its
// first collective step.
#ifndef CCO_HOST_COMMON_FD_TABLE_H_
#define CCO_HOST_COMMON_FD_TABLE_H_

namespace cco {

// Grows the table now, where `headroom` more descriptors would not fit in it. Best effort:
// without /proc, or at the descriptor limit, it leaves the table as it is.
void ReserveFdHeadroom(int headroom);

}  // namespace cco

#endif  // CCO_HOST_COMMON_FD_TABLE_H_
