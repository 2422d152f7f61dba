// SPDX-License-Identifier: MIT
#include "platform/memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cco {

int MemfdSeals() { return F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL; }

Status CreateSealedMemfd(const char* name, size_t size, int* fd) {
  const int made = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (made < 0) return ErrnoError("memfd_create", errno);
  if (ftruncate(made, static_cast<off_t>(size)) != 0 || fcntl(made, F_ADD_SEALS, MemfdSeals()) != 0) {
    Status s = ErrnoError(Fmt("sizing and sealing a memfd of ", size, " bytes"), errno);
    close(made);
    return s;
  }
  *fd = made;
  return Status::Ok();
}

Status CheckSealedMemfd(int fd, size_t size) {
  struct stat st = {};
  const int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &st) != 0) return ErrnoError("fstat of a peer's memory descriptor", errno);
  if (!S_ISREG(st.st_mode) || seals < 0) return RemoteError("a peer's memory descriptor is not a memfd");
  if ((seals & MemfdSeals()) != MemfdSeals())
    return RemoteError("a peer's memory descriptor is not sealed against resizing");
  if (static_cast<uint64_t>(st.st_size) != size)
    return RemoteError(Fmt("a peer's memory descriptor holds ", st.st_size, " bytes, not the ", size, " agreed"));
  return Status::Ok();
}

Status MapMemfd(int fd, size_t size, void** address) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ErrnoError(Fmt("mmap of ", size, " bytes of shared memory"), errno);
  *address = p;
  return Status::Ok();
}

}  // namespace cco
