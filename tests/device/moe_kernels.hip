// The MoE example's phases (examples/moe) as GPU kernels, each phase functor taken by value as a
// HIP program launches it: hipLaunchKernelGGL(moe_ll_combine, grid, block, 0, stream, phase).
// check_moe_isa.sh compiles them device-only for one arch and holds each kernel to
// bench/isa_budget_moe.txt (ctest device.moe_isa.<arch>): no scratch, no calls, its instructions
// and VGPRs. extern "C" names, so that the budget names a kernel as a user would.
#include "low_latency.hpp"
#include "normal.hpp"

// This code object's device state, declared as a user's code object declares it
// (examples/first_run.cpp).
MORI_SHMEM_DEFINE_GPU_STATES();

MORI_KERNEL void moe_quantize(moe::Quantize phase) { phase(); }
MORI_KERNEL void moe_normal_dispatch(moe::NormalDispatch phase) { phase(); }
MORI_KERNEL void moe_normal_expert(moe::NormalExpert phase) { phase(); }
MORI_KERNEL void moe_normal_combine(moe::NormalCombine phase) { phase(); }
MORI_KERNEL void moe_ll_dispatch(moe::LlDispatch phase) { phase(); }
MORI_KERNEL void moe_ll_expert(moe::LlExpert phase) { phase(); }
MORI_KERNEL void moe_ll_combine(moe::LlCombine phase) { phase(); }
