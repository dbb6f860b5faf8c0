// posemb/config.hpp is now posemb/model/config.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/model/config.hpp"
