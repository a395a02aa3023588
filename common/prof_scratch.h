/* scratch profiling: not for commit */
#include <stdio.h>
#include <stdlib.h>
#include "common/timer.h"
enum { PR_GOPTYPE, PR_SUBMIT, PR_SUB_INPUT, PR_SUB_COPY, PR_SUB_BE, PR_SEARCH, PR_WAIT, PR_DOWNLOAD, PR_INTRA, PR_REACH, PR_FEJOB, PR_C_WAITEV, PR_C_MEMCPY, PR_C_DECIM, PR_C_EVREC, PR_C_SWAIT, PR_C_LAUNCH, PR_C_MVCPY, PR_N };
#ifdef __cplusplus
extern "C" {
#endif
extern double mpe_prof_ms[PR_N]; extern long mpe_prof_n[PR_N];
#ifdef __cplusplus
}
#endif
#define PROF(k, stmt) do { double _t0 = mpe_time_ms(); stmt; mpe_prof_ms[k] += mpe_time_ms() - _t0; mpe_prof_n[k]++; } while (0)
