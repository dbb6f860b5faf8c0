// posemb/streaming_stores.hpp is now posemb/machine/streaming_stores.hpp; this path keeps existing
// includes compiling.
#pragma once
#include "posemb/machine/streaming_stores.hpp"
