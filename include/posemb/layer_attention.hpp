// posemb/layer_attention.hpp is now posemb/model/layer_attention.hpp; this path keeps existing
// includes compiling.
#pragma once
#include "posemb/model/layer_attention.hpp"
