#include "runtime/node.hpp"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

namespace mori::runtime {

namespace {
struct NodeId {
  char text[128];  // "<hostname>/<boot id>", NUL-padded
};

NodeId this_node(int rank, int pes_per_node) {
  NodeId id{};
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  if (pes_per_node > 0) {
    std::snprintf(id.text, sizeof id.text, "%s/%s#%d", host, boot.c_str(), rank / pes_per_node);
  } else {
    std::snprintf(id.text, sizeof id.text, "%s/%s", host, boot.c_str());
  }
  return id;
}
}  // namespace

Status find_same_node(bootstrap::Bootstrap& boot, int pes_per_node, std::vector<bool>* same_node,
                      int* local_rank) {
  const int n = boot.size();
  const NodeId mine = this_node(boot.rank(), pes_per_node);
  std::vector<NodeId> all(n);
  MORI_TRY(boot.allgather(&mine, all.data(), sizeof(NodeId)));
  same_node->assign(n, false);
  *local_rank = 0;
  for (int pe = 0; pe < n; ++pe) {
    (*same_node)[pe] = std::memcmp(all[pe].text, mine.text, sizeof mine.text) == 0;
    if ((*same_node)[pe] && pe < boot.rank()) ++*local_rank;
  }
  return {};
}

}  // namespace mori::runtime
