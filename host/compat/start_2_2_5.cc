// SPDX-License-Identifier: MIT
// A program (not a library) built on glibc 2.36 that starts on glibc 2.28: the start code.
//
// Debian 12's Scrt1.o calls __libc_start_main@GLIBC_2.34, whose callers leave running the
// program's constructors to glibc; older glibc has only __libc_start_main@GLIBC_2.2.5, whose
// callers pass a function that runs them (it lived in libc_nonshared.a before 2.34). The hidden
// definition below takes Scrt1.o's call and makes the old one, with that function: glibc 2.28
// runs it as it always did, and newer glibc, seeing an init function, runs it as it runs every
// program built before 2.34. Destructors are ld.so's business in both (_dl_fini).
// Only programs the wheel ships link this (host:manylinux_program_compat).

#define CCO_COMPAT_HIDDEN __attribute__((visibility("hidden")))

extern "C" {

using Main = int (*)(int, char**, char**);
using Initializer = void (*)(int, char**, char**);

int cco_compat_libc_start_main(Main main, int argc, char** argv, Initializer init, void (*fini)(void),
                               void (*rtldFini)(void), void* stackEnd);
__asm__(".symver cco_compat_libc_start_main, __libc_start_main@GLIBC_2.2.5");

// The linker marks out the program's constructor table; crti.o's _init runs the .init section.
extern Initializer __init_array_start[] CCO_COMPAT_HIDDEN;
extern Initializer __init_array_end[] CCO_COMPAT_HIDDEN;
void _init(void);

// What libc_nonshared.a's __libc_csu_init did for a dynamically linked program (ld.so runs
// its .preinit_array).
static void RunConstructors(int argc, char** argv, char** envp) {
  _init();
  for (Initializer* f = __init_array_start; f != __init_array_end; ++f) (*f)(argc, argv, envp);
}

CCO_COMPAT_HIDDEN int __libc_start_main(Main main, int argc, char** argv, Initializer /*init*/, void (*fini)(void),
                                        void (*rtldFini)(void), void* stackEnd) {
  return cco_compat_libc_start_main(main, argc, argv, RunConstructors, fini, rtldFini, stackEnd);
}

}  // extern "C"
