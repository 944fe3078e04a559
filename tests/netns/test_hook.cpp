// netns.mpi_hook: the MORI_TEST_NETNS hook of tests/mpi/mpi_main.cpp, under mpirun -np 4 with the
// fixture's nodes (mori-t, 2 PEs a node): each rank is in its node's namespace with the node's
// hostname and the hook's variables, MPI still works across nodes (btl vader predates setns), and
// a TCP connection from node 0's eth0 reaches node 1's eth0 (the unique-ID bootstrap's path).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <mpi.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kHostBytes = 65;  // HOST_NAME_MAX (64) + the NUL

sockaddr_in node1_eth0() {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(47910);
  inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
  return a;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "(unset)";
}

}  // namespace

TEST_CASE("each rank is in its node, and MPI and TCP between nodes work") {
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  REQUIRE(n == 4);
  const std::string prefix = env("MORI_TEST_NETNS");
  char host[kHostBytes] = {};
  REQUIRE(gethostname(host, sizeof(host)) == 0);
  CHECK(std::string(host) == prefix + std::to_string(rank / 2));
  CHECK(env("MORI_SOCKET_IFNAME") == "eth0");
  CHECK(env("MORI_SOFTNIC_IFNAME") == "nic" + std::to_string(rank % 2));
  CHECK(env("MORI_TEST_UID_BOOTSTRAP") == "1");

  // Every rank's hostname at every rank: MPI across the namespaces.
  char all[4][kHostBytes] = {};
  MPI_Allgather(host, sizeof(host), MPI_CHAR, all, sizeof(host), MPI_CHAR, MPI_COMM_WORLD);
  for (int r = 0; r < 4; ++r) CHECK(std::string(all[r]) == prefix + std::to_string(r / 2));

  int listener = -1;
  if (rank == 2) {  // node 1's first PE
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    const sockaddr_in a = node1_eth0();
    REQUIRE(bind(listener, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(listen(listener, 1) == 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in a = node1_eth0();
    REQUIRE(connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0);
    sockaddr_in me{};
    socklen_t len = sizeof(me);
    REQUIRE(getsockname(c, reinterpret_cast<sockaddr*>(&me), &len) == 0);
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &me.sin_addr, text, sizeof(text));
    CHECK(std::string(text) == "198.18.0.1");
    CHECK(write(c, "node0", 5) == 5);
    close(c);
  }
  if (rank == 2) {
    const int s = accept(listener, nullptr, nullptr);
    REQUIRE(s >= 0);
    char got[6] = {};
    CHECK(read(s, got, 5) == 5);
    CHECK(std::string(got) == "node0");
    close(s);
    close(listener);
  }
  // Node 1's eth0 is not reachable from node 1 on node 0's address: each node has only its own.
  if (rank == 3) {
    const int c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "198.18.0.1", &a.sin_addr);
    CHECK(bind(c, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0);
    close(c);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
