// posemb/alibi.hpp is now posemb/bias/alibi.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/bias/alibi.hpp"
