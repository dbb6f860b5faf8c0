// posemb/attention.hpp is now posemb/attention/scores.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/attention/scores.hpp"
