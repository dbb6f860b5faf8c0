// posemb/xpos.hpp is now posemb/rotary/xpos.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/rotary/xpos.hpp"
