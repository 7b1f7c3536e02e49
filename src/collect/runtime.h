// C++ control of the process's recording session (the C API in strata.h wraps these).
#pragma once

#include "collect/session.h"

namespace strata::collect {

// Starts recording with an explicit configuration; false if already recording or on failure.
bool start_recording(SessionConfig config);
void stop_recording();

}  // namespace strata::collect
