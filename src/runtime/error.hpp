// How host API calls fail: one line on stderr naming the call and the cause, kept for last_error().
#pragma once

#include <string>

#include "mori/status.hpp"

namespace mori::runtime {

// Logs "mori: <api>: <reason>", records it for last_error(), and returns -1.
int report(const char* api, const Status& status);
inline int report(const char* api, const std::string& reason) {
  return report(api, Status::error(reason));
}
// Forgets the last error of this thread (a call that succeeds clears nothing; callers use this at
// API entry).
void clear_error();

}  // namespace mori::runtime
