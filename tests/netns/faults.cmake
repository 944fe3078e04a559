# netns.fault_*: faults of the network (issue 42, deliverable 4). Each runs tests/netns/wire_traffic.cpp (4 ranks, 2
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
