// A CUDA_INJECTION64_PATH library: simgpu's cuInit must load it and call InitializeInjection,
// as the real driver does. It then uses CUPTI from inside the injection, like idlescope.
#include <cupti.h>

#include <cstdio>

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  uint32_t v = 0;
  CUptiResult r = cuptiGetVersion(&v);
  fprintf(stdout, "injection: InitializeInjection called (cupti %u, %d)\n", v, r);
  fflush(stdout);
  return 1;
}
