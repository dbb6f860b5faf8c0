// posemb/isa.hpp is now posemb/machine/isa.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/machine/isa.hpp"
