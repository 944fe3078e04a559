// The names every provider's test helpers (tests/unit/<nic>_wqe_helpers.hpp) use, said once: the
// provider-neutral work request and poll result, and the software NIC's completion status.
#pragma once

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/work_request.hpp"

// Each helper namespace takes them with a using-directive, so that a test file's
// `using namespace mori::test::<nic>_wqe` brings them along.
namespace mori::test::provider_names {

using mori::provider::CqPoll;
using mori::provider::Opcode;
using mori::provider::WorkRequest;
using mori::softnic::CompletionStatus;

}  // namespace mori::test::provider_names
