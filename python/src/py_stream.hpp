// The stream-ordered calls of mori._mori_shmem (py_stream.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace mori::python {

// Adds the Stream class (host backend) and the shmem_*_on_stream functions to `m`.
void add_stream_api(pybind11::module_& m);

}  // namespace mori::python
