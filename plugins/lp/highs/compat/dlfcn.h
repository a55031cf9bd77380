/* No dynamic libraries in a WASI sandbox: every dlopen fails, as it would for a missing
   file, and HiGHS goes on without its optional extras. */
#ifndef CASELOAD_DLFCN_H
#define CASELOAD_DLFCN_H
#define RTLD_LAZY 1
#define RTLD_NOW 2
#define RTLD_GLOBAL 4
#define RTLD_LOCAL 0
static inline void* dlopen(const char* file, int mode) { (void)file; (void)mode; return 0; }
static inline void* dlsym(void* handle, const char* name) { (void)handle; (void)name; return 0; }
static inline int dlclose(void* handle) { (void)handle; return 0; }
static inline char* dlerror(void) { return (char*)"no dynamic libraries in the sandbox"; }
#endif
