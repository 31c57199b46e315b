// The glibc floor of the preload library: glibc 2.17 on x86_64 (README.md, "Supported systems").
// Force-included (-include) into every source of a target built with idlescope_glibc_floor()
// (cmake/glibc_floor.cmake), so that no reference of ours asks for a symbol version newer than
// 2.17, whatever the glibc this is built on.
//
// glibc 2.32 and 2.34 moved libpthread and libdl into libc.so.6 and gave each moved function a
// new default version there (pthread_once@@GLIBC_2.34, dlsym@@GLIBC_2.34). The old version stays
// beside it as the same code (the same address in libc.so.6): binding our reference to it with
// .symver costs nothing at run time. Before 2.34 those old versions live in libpthread.so.0 and
// libdl.so.2, which the floor therefore makes NEEDED (on 2.34+ they are empty stubs); the loader
// finds a versioned symbol in any object of the global scope.
//
// The list is every pthread_*, sem_* and dl* function whose default version is newer than 2.17
// and whose newest version up to 2.17 is the same code as the default one, as glibc 2.36's
// libc.so.6 exports them (objdump -T: same address), except pthread_kill, whose GLIBC_2.2.5
// version is different code (ESRCH for an exited thread). pthread_create is bound only where the
// target does not define it itself: the preload library does (a hook, interpose/lifecycle.cc),
// and a .symver there would version our own definition (IDLESCOPE_GLIBC_FLOOR_HOOKS_PTHREAD_CREATE,
// set by idlescope_glibc_floor(... HOOKS_PTHREAD_CREATE)).
// Functions new after 2.17 (pthread_cond_clockwait, _dl_find_object, ...) have no old twin: they
// are looked up at run time behind -Wl,--wrap (interpose/glibc_floor.cc).
//
// A .symver for a symbol a source does not use emits nothing. tests/portability checks the
// result: the version needs of the built library.
#pragma once

#if defined(__x86_64__) && defined(__linux__)

#define IDLESCOPE_GLIBC_BIND(name, version) __asm__(".symver " #name "," #name "@" version)

IDLESCOPE_GLIBC_BIND(__pthread_key_create, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(dladdr, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(dladdr1, "GLIBC_2.3.3");
IDLESCOPE_GLIBC_BIND(dlclose, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(dlerror, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(dlinfo, "GLIBC_2.3.3");
IDLESCOPE_GLIBC_BIND(dlmopen, "GLIBC_2.3.4");
IDLESCOPE_GLIBC_BIND(dlopen, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(dlsym, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(dlvsym, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_getaffinity_np, "GLIBC_2.3.4");
IDLESCOPE_GLIBC_BIND(pthread_attr_getguardsize, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_getstack, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_getstackaddr, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_getstacksize, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_setaffinity_np, "GLIBC_2.3.4");
IDLESCOPE_GLIBC_BIND(pthread_attr_setguardsize, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_setstack, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_setstackaddr, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_attr_setstacksize, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_barrier_destroy, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_barrier_init, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_barrier_wait, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_barrierattr_destroy, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_barrierattr_getpshared, "GLIBC_2.3.3");
IDLESCOPE_GLIBC_BIND(pthread_barrierattr_init, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_barrierattr_setpshared, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_cancel, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_condattr_getclock, "GLIBC_2.3.3");
IDLESCOPE_GLIBC_BIND(pthread_condattr_getpshared, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_condattr_setclock, "GLIBC_2.3.3");
IDLESCOPE_GLIBC_BIND(pthread_condattr_setpshared, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_detach, "GLIBC_2.2.5");
#ifndef IDLESCOPE_GLIBC_FLOOR_HOOKS_PTHREAD_CREATE
IDLESCOPE_GLIBC_BIND(pthread_create, "GLIBC_2.2.5");
#endif
IDLESCOPE_GLIBC_BIND(pthread_getaffinity_np, "GLIBC_2.3.4");
IDLESCOPE_GLIBC_BIND(pthread_getattr_np, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_getconcurrency, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_getcpuclockid, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_getname_np, "GLIBC_2.12");
IDLESCOPE_GLIBC_BIND(pthread_getspecific, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_join, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_key_create, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_key_delete, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutex_consistent, "GLIBC_2.12");
IDLESCOPE_GLIBC_BIND(pthread_mutex_getprioceiling, "GLIBC_2.4");
IDLESCOPE_GLIBC_BIND(pthread_mutex_setprioceiling, "GLIBC_2.4");
IDLESCOPE_GLIBC_BIND(pthread_mutex_timedlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutex_trylock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_destroy, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_getprioceiling, "GLIBC_2.4");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_getprotocol, "GLIBC_2.4");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_getpshared, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_getrobust, "GLIBC_2.12");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_gettype, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_init, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_setprioceiling, "GLIBC_2.4");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_setprotocol, "GLIBC_2.4");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_setpshared, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_setrobust, "GLIBC_2.12");
IDLESCOPE_GLIBC_BIND(pthread_mutexattr_settype, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_once, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_destroy, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_init, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_rdlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_timedrdlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_timedwrlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_tryrdlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_trywrlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_unlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlock_wrlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlockattr_destroy, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlockattr_getkind_np, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlockattr_getpshared, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlockattr_init, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlockattr_setkind_np, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_rwlockattr_setpshared, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_setaffinity_np, "GLIBC_2.3.4");
IDLESCOPE_GLIBC_BIND(pthread_setconcurrency, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_setname_np, "GLIBC_2.12");
IDLESCOPE_GLIBC_BIND(pthread_setschedprio, "GLIBC_2.3.4");
IDLESCOPE_GLIBC_BIND(pthread_setspecific, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_sigmask, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_sigqueue, "GLIBC_2.11");
IDLESCOPE_GLIBC_BIND(pthread_spin_destroy, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_spin_init, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_spin_lock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_spin_trylock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_spin_unlock, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_testcancel, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(pthread_timedjoin_np, "GLIBC_2.3.3");
IDLESCOPE_GLIBC_BIND(pthread_tryjoin_np, "GLIBC_2.3.3");
IDLESCOPE_GLIBC_BIND(sem_close, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_destroy, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_getvalue, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_init, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_open, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_post, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_timedwait, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_trywait, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_unlink, "GLIBC_2.2.5");
IDLESCOPE_GLIBC_BIND(sem_wait, "GLIBC_2.2.5");

#undef IDLESCOPE_GLIBC_BIND

#endif  // __x86_64__ && __linux__
