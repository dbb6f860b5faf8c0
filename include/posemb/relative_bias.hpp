// posemb/relative_bias.hpp is now posemb/bias/relative_bias.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/bias/relative_bias.hpp"
