// posemb/model_families.hpp is now posemb/model/families.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/model/families.hpp"
