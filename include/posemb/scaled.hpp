// posemb/scaled.hpp is now posemb/rotary/scaled.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/rotary/scaled.hpp"
