// Libraries for real_symbol_test: `linked` is a link dependency of the test (RTLD_NEXT sees it),
// `local` is dlopen'ed RTLD_LOCAL by the test (only its handle sees it).
#if defined(PROBE_LINKED)
int real_symbol_probe(void) { return 1; }  // the test defines its own: this one is "next"
int real_symbol_probe_alternate(void) { return 2; }
#else
int real_symbol_local_probe(void) { return 3; }
int real_symbol_local_probe_alternate(void) { return 4; }
#endif
