/* HiGHS is compiled with C++ exceptions, which clang lowers to plain calls for a wasm target
   without exception handling: a `catch` can never be reached, and a `throw` reaches these.
   HiGHS throws only on internal errors (and to unwind parallel tasks, which a one-thread run
   never starts), so a throw ends the run as a trap: the job fails, the server goes on. */
#include <stdlib.h>

void* __cxa_allocate_exception(unsigned long size) { return malloc(size); }
void __cxa_free_exception(void* exception) { free(exception); }
__attribute__((noreturn)) void __cxa_throw(void* exception, void* type, void (*destructor)(void*)) {
  (void)exception;
  (void)type;
  (void)destructor;
  abort();
}
__attribute__((noreturn)) void __cxa_rethrow(void) { abort(); }

/* A `thread_local` with a destructor registers it here. The one thread of a component never
   exits before the instance is dropped, so there is nothing to run. */
int __cxa_thread_atexit(void (*destructor)(void*), void* object, void* dso_handle) {
  (void)destructor;
  (void)object;
  (void)dso_handle;
  return 0;
}
