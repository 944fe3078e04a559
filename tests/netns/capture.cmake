# netns.wire_capture_<nic>: Wireshark as the oracle we did not write. wire_capture.sh captures the bridge
# while mori_netns_wire_capture (4 ranks, only PE 0 -> PE 2 on the wire) puts, gets and fetch-adds, with an nftables
# rule in node 1 that drops one packet of the first put; then mori_netns_capture_check reads the capture: nothing
# malformed under Wireshark's InfiniBand dissector, every ICRC right (zlib, IBTA A17.8), and the opcodes, PSNs and
# DestQPs of each operation and of the retransmission.
add_executable(mori_netns_wire_capture wire_capture.cpp)
mori_test_target(mori_netns_wire_capture MAIN mpi)

find_package(ZLIB REQUIRED)
add_executable(mori_netns_capture_check capture_check.cpp capture_pcap.cpp capture_render.cpp)
mori_test_target(mori_netns_capture_check MAIN doctest)
target_link_libraries(mori_netns_capture_check PRIVATE ZLIB::ZLIB)

# The three NIC families' WQEs differ; their packets on the wire must not.
foreach(_nic IN ITEMS mlx5 bnxt ionic)
  mori_netns_test(NAME netns.wire_capture_${_nic}
                  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/wire_capture.sh ${CMAKE_CURRENT_BINARY_DIR}/wire_capture_${_nic}
                          $<TARGET_FILE:mori_netns_capture_check>
                          ${MORI_MPIRUN} ${MORI_MPIRUN_FLAGS} -np 4 $<TARGET_FILE:mori_netns_wire_capture>
                  ENVIRONMENT MORI_DEVICE_NIC=${_nic} MORI_SHMEM_BOOTSTRAP_TIMEOUT=20 MORI_SHMEM_TIMEOUT_MS=20000
                  TIMEOUT 180 PROCESSORS 2)
endforeach()
