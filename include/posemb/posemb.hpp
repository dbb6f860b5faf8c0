// posemb: positional embeddings for transformer models. The umbrella header.
#pragma once

#include "posemb/version.hpp"
#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/rope.hpp"
#include "posemb/npy.hpp"
