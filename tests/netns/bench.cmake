# netns.bench.*: the shmem benchmarks between two nodes, each program once at tiny sizes (included from
# tests/netns/CMakeLists.txt). On the fixture's nodes (2 nodes of 2 PEs), with MORI_TEST_PES_PER_NODE=1 for the
# two ranks, so that rank 1 is node 1's PE 0: the pair 0-1 is two nodes, its software NICs talk RoCEv2 over nic0
# of each node, and every row must say "between_nodes":true. The harness checks the bytes each put and get moved.
# netns.bench.veth_bw measures the bound on the same nodes; netns.bench.script runs scripts/bench-nodes.sh --quick
# on namespaces of its own (prefix mori-sb), table and cleanup included.
if(NOT TARGET put_latency OR NOT TARGET veth_bw)
  return()
endif()

set(_tiny_lat -b 8 -e 1K -f 128 --iters 20 --warmup 2 --reps 1)
set(_tiny_bw -b 4K -e 64K -f 16 --iters 8 --warmup 1 --reps 1)
foreach(_bench IN ITEMS put_latency get_latency atomic_latency put_bw get_bw)
  if(_bench MATCHES "_bw$")
    set(_sizes ${_tiny_bw})
  else()
    set(_sizes ${_tiny_lat})
  endif()
  mori_netns_test(NAME netns.bench.${_bench}
                  COMMAND env MORI_TEST_PES_PER_NODE=1 ${MORI_MPIRUN} ${MORI_MPIRUN_FLAGS} -np 2
                          $<TARGET_FILE:${_bench}> ${_sizes} --transport rdma --provider mlx5 --json
                  ENVIRONMENT MORI_SHMEM_BOOTSTRAP_TIMEOUT=20 MORI_SHMEM_TIMEOUT_MS=20000
                  TIMEOUT 120 PROCESSORS 2)
  set_tests_properties(netns.bench.${_bench} PROPERTIES
                       PASS_REGULAR_EXPRESSION "\"bench\":\"${_bench}\".*\"between_nodes\":true"
                       FAIL_REGULAR_EXPRESSION "failed|expected|MPI_ABORT|netns hook")
endforeach()

mori_netns_test(NAME netns.bench.veth_bw
                COMMAND $<TARGET_FILE:veth_bw> --ns-a ${MORI_NETNS_PREFIX}0 --ns-b ${MORI_NETNS_PREFIX}1
                        --seconds 0.2 --pings 200 --json
                TIMEOUT 60 PROCESSORS 2)
set_tests_properties(netns.bench.veth_bw PROPERTIES PASS_REGULAR_EXPRESSION "\"bench\":\"veth_bw\"")

mori_netns_test(NAME netns.bench.script
                COMMAND env MORI_BUILD_DIR=${PROJECT_BINARY_DIR} MORI_BENCH_PREFIX=mori-sb
                        ${PROJECT_SOURCE_DIR}/scripts/bench-nodes.sh --quick
                TIMEOUT 180 PROCESSORS 2)  # its exit status: the table needs every row, between nodes
