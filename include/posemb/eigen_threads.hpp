// posemb/eigen_threads.hpp is now posemb/machine/eigen_threads.hpp; this path keeps existing
// includes compiling.
#pragma once
#include "posemb/machine/eigen_threads.hpp"
