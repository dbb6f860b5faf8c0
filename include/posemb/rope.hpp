// posemb/rope.hpp is now posemb/rotary/rope.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/rotary/rope.hpp"
