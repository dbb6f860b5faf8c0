/* posemb.h alone compiles as strict C99 and C11 (tests/c/CMakeLists.txt, c_api_header). */
#include "posemb/c/posemb.h"

uint32_t posemb_header_check(void);
uint32_t posemb_header_check(void) { return POSEMB_C_ABI_MAJOR; }
