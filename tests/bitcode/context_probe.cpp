// A test module (linked like any host module, by tools/link_shmem_module.sh) that reports the
// launch context its own code reads. test_host_module.cpp checks that it is the launcher's.
#include "mori/platform.hpp"

extern "C" const void* mori_test_launch_context() { return mori::platform::host::tls_context; }
