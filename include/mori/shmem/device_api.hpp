// The device API of mori::shmem: OpenSHMEM semantics for kernels, with the scope as a template
// parameter and the element type deduced. docs/device-api.md lists every call and its ordering
// guarantee.
#pragma once

#include "mori/shmem/atomic.hpp"
#include "mori/shmem/barrier.hpp"
#include "mori/shmem/collectives.hpp"
#include "mori/shmem/ctx.hpp"
#include "mori/shmem/lock.hpp"
#include "mori/shmem/order.hpp"
#include "mori/shmem/query.hpp"
#include "mori/shmem/rma.hpp"
#include "mori/shmem/signal.hpp"
#include "mori/shmem/single.hpp"
#include "mori/shmem/strided.hpp"
#include "mori/shmem/symm_obj.hpp"
#include "mori/shmem/team.hpp"
#include "mori/shmem/vocabulary.hpp"
#include "mori/shmem/wait.hpp"
