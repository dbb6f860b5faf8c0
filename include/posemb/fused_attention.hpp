// posemb/fused_attention.hpp is now posemb/attention/fused.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/attention/fused.hpp"
