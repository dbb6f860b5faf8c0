// posemb/vision_rope.hpp is now posemb/rotary/vision.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/rotary/vision.hpp"
