// Initialisation over a bootstrap the caller brings, for hosts that already have a way to talk to
// every PE (the Python binding's torch.distributed process group, python/src/py_bootstrap.cpp).
#pragma once

#include <memory>

#include "bootstrap/bootstrap.hpp"

namespace mori::runtime {

// As init_attr, but every PE exchanges its setup bytes through `boot`, whose rank() and size() are
// this PE and the number of PEs. The runtime owns `boot` until finalize. Returns 0, or -1 with the
// reason in last_error() under the name `api`.
int init_with_bootstrap(const char* api, std::unique_ptr<bootstrap::Bootstrap> boot);

}  // namespace mori::runtime
