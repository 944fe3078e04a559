# netns.fault_*: faults of the network. Each runs tests/netns/wire_traffic.cpp (4 ranks, 2
# nodes, every byte checked) while the wire misbehaves; tests/netns/fault.sh <case> sets the fault up and takes it
# down. No sch_netem in this kernel: loss is nftables in the node namespaces, delay with jitter, reordering and
# duplication are tests/netns/wire_switch.cpp, a userspace switch in the bridge namespace (faults.sh).
add_executable(mori_netns_wire_traffic wire_traffic.cpp)
mori_test_target(mori_netns_wire_traffic MAIN mpi)
target_include_directories(mori_netns_wire_traffic PRIVATE ${PROJECT_SOURCE_DIR}/tests/mpi)
target_compile_features(mori_netns_wire_traffic PRIVATE cxx_std_20)

add_executable(mori_netns_wire_switch wire_switch.cpp)
target_compile_features(mori_netns_wire_switch PRIVATE cxx_std_20)
target_compile_options(mori_netns_wire_switch PRIVATE -Wall -Wextra)

# One test a case; fault_case.sh says what each does and checks, and prints the wire's counts (nft's drops, the
# switch's drops, duplicates and reorderings, the nics' packets). Every case over mlx5; the 1% loss case each over
# bnxt and ionic (retransmission is the wire's, one code for every family; their 10% runs took 12-13 s each).
# 3-22 s each here under a load average of 100-150 (the nine: about 2 minutes); the timeouts leave room for more.
set(_fault_run ${CMAKE_CURRENT_SOURCE_DIR}/fault_case.sh)
set(_fault_bins $<TARGET_FILE:mori_netns_wire_traffic> $<TARGET_FILE:mori_netns_wire_switch> ${MORI_MPIRUN}
                ${MORI_MPIRUN_FLAGS})
foreach(_case IN ITEMS loss1 loss10 delay_jitter duplicate reorder link_flap link_down)
  mori_netns_test(NAME netns.fault_${_case} COMMAND ${_fault_run} ${_case} mlx5 ${_fault_bins} TIMEOUT 120
                  PROCESSORS 2)
endforeach()
foreach(_nic IN ITEMS bnxt ionic)
  mori_netns_test(NAME netns.fault_loss1_${_nic} COMMAND ${_fault_run} loss1 ${_nic} ${_fault_bins} TIMEOUT 120
                  PROCESSORS 2)
endforeach()
