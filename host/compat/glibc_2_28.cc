// SPDX-License-Identifier: MIT
// libcco.so on glibc 2.28: the C library symbols a Debian 12 (glibc 2.36) build would take at
// versions newer than 2.28, bound to their 2.28-era versions instead.
//
// The wheel is tagged manylinux_2_28 (RHEL 8, Ubuntu 20.04 and newer), but the library is built
// against glibc 2.36, whose headers pick the newest version of a symbol. Each function below is
// defined hidden in libcco.so, so every call in the library binds here rather than to glibc's
// newest version, and forwards to a version glibc 2.28 has (glibc keeps the old versions, so
// newer systems are served as well):
//   dlopen, dlsym, dlerror, pthread_once   GLIBC_2.34 (moved into libc) -> GLIBC_2.2.5, found
//                                          in libdl.so.2 / libpthread.so.0 before 2.34 (linked)
//   pthread_mutexattr_{init,destroy,       GLIBC_2.34 (moved into libc) -> GLIBC_2.2.5, and
//   setpshared,setrobust},                 GLIBC_2.12 for the robust ones, in libpthread.so.0
//   pthread_mutex_consistent,              before 2.34 (the liveness word's robust mutex; the
//   pthread_mutex_trylock                  proxy's pass, which a waiting thread may take)
//   stat, fstat                            GLIBC_2.33 -> __xstat/__fxstat@GLIBC_2.2.5, what
//                                          older headers called them through
//   pthread_cond_clockwait                 GLIBC_2.30 (libstdc++'s steady-clock waits) ->
//                                          pthread_cond_timedwait on the realtime clock, as
//                                          libstdc++ itself waits where clockwait is missing
//   __libc_single_threaded                 GLIBC_2.32 (read by libstdc++'s reference counts):
//                                          always "not single-threaded", so those counts are
//                                          always atomic
// No system header that declares these is included: its declarations would clash with the
// hidden definitions.
#include <time.h>

#define CCO_COMPAT_HIDDEN __attribute__((visibility("hidden")))

struct stat;

extern "C" {

void* cco_compat_dlopen(const char* file, int mode);
void* cco_compat_dlsym(void* handle, const char* name);
char* cco_compat_dlerror(void);
int cco_compat_pthread_once(int* once, void (*init)(void));
__asm__(".symver cco_compat_dlopen, dlopen@GLIBC_2.2.5");
__asm__(".symver cco_compat_dlsym, dlsym@GLIBC_2.2.5");
__asm__(".symver cco_compat_dlerror, dlerror@GLIBC_2.2.5");
__asm__(".symver cco_compat_pthread_once, pthread_once@GLIBC_2.2.5");

union pthread_mutexattr_t;
union pthread_mutex_t;
int cco_compat_pthread_mutexattr_init(pthread_mutexattr_t* attr);
int cco_compat_pthread_mutexattr_destroy(pthread_mutexattr_t* attr);
int cco_compat_pthread_mutexattr_setpshared(pthread_mutexattr_t* attr, int shared);
int cco_compat_pthread_mutexattr_setrobust(pthread_mutexattr_t* attr, int robust);
int cco_compat_pthread_mutex_consistent(pthread_mutex_t* mutex);
int cco_compat_pthread_mutex_trylock(pthread_mutex_t* mutex);
__asm__(".symver cco_compat_pthread_mutexattr_init, pthread_mutexattr_init@GLIBC_2.2.5");
__asm__(".symver cco_compat_pthread_mutexattr_destroy, pthread_mutexattr_destroy@GLIBC_2.2.5");
__asm__(".symver cco_compat_pthread_mutexattr_setpshared, pthread_mutexattr_setpshared@GLIBC_2.2.5");
__asm__(".symver cco_compat_pthread_mutexattr_setrobust, pthread_mutexattr_setrobust@GLIBC_2.12");
__asm__(".symver cco_compat_pthread_mutex_consistent, pthread_mutex_consistent@GLIBC_2.12");
__asm__(".symver cco_compat_pthread_mutex_trylock, pthread_mutex_trylock@GLIBC_2.2.5");

int __xstat(int version, const char* path, struct stat* out);
int __fxstat(int version, int fd, struct stat* out);
// _STAT_VER on x86-64: the struct stat layout the caller passes (the one glibc 2.36 uses too).
constexpr int kStatVersion = 1;

union pthread_cond_t;
int pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex, const struct timespec* abstime);

CCO_COMPAT_HIDDEN char __libc_single_threaded = 0;

CCO_COMPAT_HIDDEN void* dlopen(const char* file, int mode) { return cco_compat_dlopen(file, mode); }
CCO_COMPAT_HIDDEN void* dlsym(void* handle, const char* name) { return cco_compat_dlsym(handle, name); }
CCO_COMPAT_HIDDEN char* dlerror(void) { return cco_compat_dlerror(); }
CCO_COMPAT_HIDDEN int pthread_once(int* once, void (*init)(void)) { return cco_compat_pthread_once(once, init); }
CCO_COMPAT_HIDDEN int pthread_mutexattr_init(pthread_mutexattr_t* attr) {
  return cco_compat_pthread_mutexattr_init(attr);
}
CCO_COMPAT_HIDDEN int pthread_mutexattr_destroy(pthread_mutexattr_t* attr) {
  return cco_compat_pthread_mutexattr_destroy(attr);
}
CCO_COMPAT_HIDDEN int pthread_mutexattr_setpshared(pthread_mutexattr_t* attr, int shared) {
  return cco_compat_pthread_mutexattr_setpshared(attr, shared);
}
CCO_COMPAT_HIDDEN int pthread_mutexattr_setrobust(pthread_mutexattr_t* attr, int robust) {
  return cco_compat_pthread_mutexattr_setrobust(attr, robust);
}
CCO_COMPAT_HIDDEN int pthread_mutex_consistent(pthread_mutex_t* mutex) {
  return cco_compat_pthread_mutex_consistent(mutex);
}
CCO_COMPAT_HIDDEN int pthread_mutex_trylock(pthread_mutex_t* mutex) { return cco_compat_pthread_mutex_trylock(mutex); }
CCO_COMPAT_HIDDEN int stat(const char* path, struct stat* out) { return __xstat(kStatVersion, path, out); }
CCO_COMPAT_HIDDEN int fstat(int fd, struct stat* out) { return __fxstat(kStatVersion, fd, out); }

// A wait until `abstime` on `clock`, as a wait until the same moment on the realtime clock (the
// clock of a default condition variable); a jump of the realtime clock during the wait moves
// its end, as it does in libstdc++'s own fallback.
CCO_COMPAT_HIDDEN int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                                             const struct timespec* abstime) {
  constexpr long long kNanos = 1000000000LL;
  struct timespec now, realtime_now;
  clock_gettime(clock, &now);
  clock_gettime(CLOCK_REALTIME, &realtime_now);
  long long left = (abstime->tv_sec - now.tv_sec) * kNanos + (abstime->tv_nsec - now.tv_nsec);
  if (left < 0) left = 0;
  const long long end = realtime_now.tv_nsec + left;
  struct timespec realtime_end;
  realtime_end.tv_sec = realtime_now.tv_sec + static_cast<time_t>(end / kNanos);
  realtime_end.tv_nsec = static_cast<long>(end % kNanos);
  return pthread_cond_timedwait(cond, mutex, &realtime_end);
}

}  // extern "C"
