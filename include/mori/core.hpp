// Core: scope tags, scope copies and the type lists.
#pragma once

#include "mori/core/copy.hpp"
#include "mori/core/scope.hpp"
#include "mori/core/types.hpp"
#include "mori/platform.hpp"
