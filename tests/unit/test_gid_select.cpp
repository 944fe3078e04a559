// rdma gid: choosing a RoCE v2 GID from a port's table (src/rdma/gid_select.hpp) when
// MORI_IB_GID_INDEX is not set, on tables modelled on those of ConnectX ports, and the exact text
// of the error when the table has no RoCE v2 entry.
#include <arpa/inet.h>
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "rdma/gid_select.hpp"

namespace rdma = mori::rdma;
using rdma::GidType;

namespace {

constexpr GidType kV1 = GidType::kRoceV1;
constexpr GidType kV2 = GidType::kRoceV2;

rdma::GidEntry entry(int index, const char* address, GidType type) {
  rdma::GidEntry e;
  e.index = index;
  e.type = type;
  REQUIRE_MESSAGE(inet_pton(AF_INET6, address, e.gid) == 1, address);
  return e;
}

int chosen(const std::vector<rdma::GidEntry>& table) {
  int index = -1;
  const mori::Status s = rdma::select_roce_gid(table, "mlx5_0 port 1", &index);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return index;
}

std::string error(const std::vector<rdma::GidEntry>& table) {
  int index = -7;
  const mori::Status s = rdma::select_roce_gid(table, "mlx5_0 port 1", &index);
  REQUIRE_FALSE(s.ok());
  CHECK(index == -7);  // untouched on failure
  return s.message();
}

}  // namespace

TEST_CASE("rdma gid: a ConnectX table with v1 and v2 pairs picks the IPv4 RoCE v2 entry") {
  // The usual layout: each address once as RoCE v1, once as RoCE v2.
  CHECK(chosen({entry(0, "fe80::ba59:9fff:fe1e:7a2c", kV1),
                entry(1, "fe80::ba59:9fff:fe1e:7a2c", kV2), entry(2, "::ffff:10.0.0.5", kV1),
                entry(3, "::ffff:10.0.0.5", kV2)}) == 3);
}

TEST_CASE("rdma gid: RoCE v2 at index 1 with an IPv4 address only") {
  CHECK(chosen({entry(0, "::ffff:10.0.0.5", kV1), entry(1, "::ffff:10.0.0.5", kV2)}) == 1);
  // Index 3, the old guess, would be empty here.
  CHECK(chosen({entry(0, "::ffff:10.0.0.5", kV1), entry(1, "::ffff:10.0.0.5", kV2),
                entry(2, "::", kV1), entry(3, "::", kV2)}) == 1);
}

TEST_CASE("rdma gid: without a RoCE v2 entry the error lists the table") {
  CHECK(error({entry(0, "fe80::1", kV1), entry(1, "::", kV1), entry(2, "::ffff:10.0.0.5", kV1),
               entry(3, "fe80::2", GidType::kIb)}) ==
        "rdma: mlx5_0 port 1 has no RoCE v2 GID (its table: 0 fe80::1 RoCE v1, 2 "
        "::ffff:10.0.0.5 RoCE v1, 3 fe80::2 IB): set MORI_IB_GID_INDEX");
  CHECK(error({}) ==
        "rdma: mlx5_0 port 1 has no RoCE v2 GID (its table is empty): set MORI_IB_GID_INDEX");
  CHECK(error({entry(0, "::", kV2), entry(1, "::", kV1)}) ==
        "rdma: mlx5_0 port 1 has no RoCE v2 GID (its table is empty): set MORI_IB_GID_INDEX");
}

TEST_CASE("rdma gid: empty entries are skipped, even when typed RoCE v2") {
  CHECK(chosen({entry(0, "::", kV2), entry(1, "fe80::1", kV2)}) == 1);
  CHECK(chosen({entry(0, "fe80::1", kV2), entry(1, "::", kV2), entry(2, "::ffff:10.0.0.5", kV1)}) ==
        0);
}

TEST_CASE("rdma gid: IPv4-mapped before global IPv6 before link-local, among RoCE v2") {
  CHECK(chosen({entry(0, "fe80::1", kV2), entry(1, "2001:db8::5", kV2)}) == 1);
  CHECK(chosen({entry(0, "2001:db8::5", kV2), entry(1, "fe80::1", kV2)}) == 0);
  CHECK(chosen({entry(0, "2001:db8::5", kV2), entry(1, "::ffff:10.0.0.5", kV2)}) == 1);
  // fe80::/10 ends at febf::; fec0:: is not link-local.
  CHECK(chosen({entry(0, "febf::1", kV2), entry(1, "fec0::1", kV2)}) == 1);
  CHECK(chosen({entry(0, "fe80::1", kV2), entry(1, "2001:db8::5", kV2),
                entry(5, "::ffff:192.168.1.7", kV2), entry(6, "::ffff:192.168.1.7", kV1)}) == 5);
  // A better address as RoCE v1 does not beat a RoCE v2 entry.
  CHECK(chosen({entry(0, "::ffff:10.0.0.5", kV1), entry(1, "fe80::1", kV2)}) == 1);
}

TEST_CASE("rdma gid: equally good entries go to the lowest index, whatever the order") {
  CHECK(chosen({entry(4, "::ffff:10.0.0.5", kV2), entry(2, "::ffff:10.0.1.5", kV2)}) == 2);
  CHECK(chosen({entry(2, "::ffff:10.0.1.5", kV2), entry(4, "::ffff:10.0.0.5", kV2)}) == 2);
  CHECK(chosen({entry(7, "fe80::2", kV2), entry(3, "fe80::1", kV2)}) == 3);
}

TEST_CASE("rdma gid: addresses print as IPv6 text") {
  CHECK(rdma::format_gid(entry(0, "::ffff:10.0.0.5", kV2).gid) == "::ffff:10.0.0.5");
  CHECK(rdma::format_gid(entry(0, "fe80::ba59:9fff:fe1e:7a2c", kV2).gid) ==
        "fe80::ba59:9fff:fe1e:7a2c");
  CHECK(rdma::format_gid(entry(0, "::", kV2).gid) == "empty");
  CHECK(std::string(rdma::gid_type_name(GidType::kIb)) == "IB");
}
