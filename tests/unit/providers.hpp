// The NIC providers, for doctest's TEST_CASE_TEMPLATE: `TEST_CASE_TEMPLATE("...", P, MORI_PROVIDERS)`
// runs a case once per provider, named after it.
#pragma once

#include <doctest/doctest.h>

#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"

TYPE_TO_STRING(mori::provider::Mlx5);
TYPE_TO_STRING(mori::provider::Ionic);
TYPE_TO_STRING(mori::provider::Bnxt);

#define MORI_PROVIDERS mori::provider::Mlx5, mori::provider::Ionic, mori::provider::Bnxt
