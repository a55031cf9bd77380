/* What the lp plugin's Rust asks of HiGHS beyond its C API's plain functions: a callback
   that stops a run when the job is cancelled or out of time, passes each better MIP
   solution on as an incumbent, and HiGHS's log lines to the job's log. The Rust side
   defines the three functions it calls. */
#include "interfaces/highs_c_api.h"

/* Nonzero when the run should stop now. */
extern int caseload_lp_should_stop(void);
/* A better MIP solution: its objective and the values of its `size` columns. */
extern void caseload_lp_improving(double objective, const double* values, int size);
/* A piece of HiGHS's log (a line or part of one). */
extern void caseload_lp_log(const char* message);

static void caseload_lp_callback(int type, const char* message,
                                 const HighsCallbackDataOut* out, HighsCallbackDataIn* in,
                                 void* user_data) {
  (void)user_data;
  if (type == kHighsCallbackLogging) {
    if (message) caseload_lp_log(message);
    return;
  }
  if (type == kHighsCallbackMipImprovingSolution) {
    if (out && out->mip_solution)
      caseload_lp_improving(out->objective_function_value, out->mip_solution,
                            (int)out->mip_solution_size);
    return;
  }
  if (in && caseload_lp_should_stop()) in->user_interrupt = 1;
}

/* Installs the callback on `highs`: kHighsStatusOk (0) or an error. */
int caseload_highs_watch(void* highs) {
  HighsInt status = Highs_setCallback(highs, caseload_lp_callback, 0);
  const HighsInt types[] = {kHighsCallbackLogging, kHighsCallbackSimplexInterrupt,
                            kHighsCallbackIpmInterrupt, kHighsCallbackMipInterrupt,
                            kHighsCallbackMipImprovingSolution};
  for (unsigned i = 0; status == 0 && i < sizeof types / sizeof types[0]; ++i)
    status = Highs_startCallback(highs, types[i]);
  return (int)status;
}
