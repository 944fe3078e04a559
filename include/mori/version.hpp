// Library version and the backend the runtime was built for.
#pragma once

#define MORI_VERSION_MAJOR 0
#define MORI_VERSION_MINOR 1
#define MORI_VERSION_PATCH 0
#define MORI_VERSION_STRING "0.1.0"

namespace mori {

// "0.1.0"
const char* version();
// "host" or "hip": where this runtime runs device code.
const char* backend();

}  // namespace mori
