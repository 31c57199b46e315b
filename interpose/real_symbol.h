// The one way the interposer finds the real function behind a hook (or a function of a library it
// calls but does not hook): dlsym(RTLD_NEXT, name), then dlsym(RTLD_NEXT, alternate) (NCCL's weak
// `ncclX` behind the strong `pncclX`, docs/cuda-interposition.md), then the same names in a library
// that is already loaded but invisible to RTLD_NEXT: one a plugin dlopen'ed RTLD_LOCAL (the
// PyTorch pattern for libcudart and libnccl), found with dlopen(soname, RTLD_NOLOAD), which never
// loads anything.
//
// Hook paths call these, some of them in a process that fork() may copy at any moment, so what is
// resolved lives in constant-initialised atomics (constinit objects below), never in a
// function-local static with an initialiser: a thread that fork() caught inside such an
// initialiser (a dlopen) would leave its guard taken in the child (recorder.h, ApiName). No lock
// of ours is taken; two threads that resolve at once find the same thing. dlsym and dlopen may
// allocate (dlerror state) and take the loader's lock: callers that must not (allocators, signal
// handlers) resolve before they need the function.
#pragma once

#include <atomic>

namespace idlescope {

// A shared library the real symbols may live in when RTLD_NEXT cannot see them: the first of
// `sonames` that is already loaded. The handle is kept for the life of the process: a pointer we
// resolved must never dangle because the plugin that loaded the library dlclose'd it. A miss is
// not kept (the library may be loaded later).
struct RealLibrary {
  static constexpr int kMaxSonames = 3;
  const char* sonames[kMaxSonames];
  std::atomic<void*> handle{nullptr};

  // The loaded library's handle, or nullptr if none of the sonames is loaded (yet).
  void* Handle();
};

// dlsym(RTLD_NEXT, name), dlsym(RTLD_NEXT, alternate), then both names in `library` (when given
// and loaded). `alternate` and `library` may be nullptr. Nothing is cached here.
void* FindRealSymbol(const char* name, const char* alternate = nullptr,
                     RealLibrary* library = nullptr);

// What a RealFunction does when the symbol is not found.
enum class OnMiss : bool {
  kRetry,  // look again at the next call (the library may be loaded later)
  kKeep,   // remember the miss: a function we can do without, asked on a hot path
};

// A real function resolved at its first use and kept. Declare as `constinit` at namespace scope.
template <typename Fn>
class RealFunction {
 public:
  constexpr RealFunction(const char* name, const char* alternate = nullptr,
                         RealLibrary* library = nullptr, OnMiss on_miss = OnMiss::kRetry)
      : name_(name), alternate_(alternate), library_(library), on_miss_(on_miss) {}

  // The function, or nullptr if it cannot be found.
  Fn Get() {
    void* f = fn_.load(std::memory_order_acquire);
    if (__builtin_expect(f != nullptr, 1)) return reinterpret_cast<Fn>(f);
    return reinterpret_cast<Fn>(Resolve());
  }

 private:
  void* Resolve() {
    if (on_miss_ == OnMiss::kKeep && tried_.load(std::memory_order_acquire)) return nullptr;
    void* f = FindRealSymbol(name_, alternate_, library_);
    if (f != nullptr) fn_.store(f, std::memory_order_release);
    tried_.store(true, std::memory_order_release);
    return f;
  }

  const char* name_;
  const char* alternate_;
  RealLibrary* library_;
  OnMiss on_miss_;
  std::atomic<void*> fn_{nullptr};
  std::atomic<bool> tried_{false};
};

}  // namespace idlescope
