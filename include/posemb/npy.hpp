// posemb/npy.hpp is now posemb/io/npy.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/io/npy.hpp"
