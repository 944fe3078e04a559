// The shared HCA state (hca_state.hpp): one fixed-size table in a file every process maps.
#include "hca_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

namespace mori::emulated_kernel::hca {
namespace {

constexpr uint32_t kMagic = 0x4d4f4845;  // "MOHE"
constexpr int kMaxQps = 1024, kMaxMrs = 4096;

struct Shared {
  uint32_t magic;
  uint32_t next_pdn, next_cqn, next_qpn, next_mkey_index;
  uint32_t generation;  // atomic_ref
  QpEntry qps[kMaxQps];
  MrEntry mrs[kMaxMrs];
};

struct Mapping {
  Shared* shared = nullptr;
  int fd = -1;  // -1: private to this process
  std::mutex mutex;
};

Mapping& mapping() {
  static Mapping m;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* dir = std::getenv("MORI_EMU_DIR");
    void* p = MAP_FAILED;
    if (dir) {
      const std::string path = std::string(dir) + "/hca";
      m.fd = static_cast<int>(
          syscall(SYS_openat, AT_FDCWD, path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
      if (m.fd >= 0 && ftruncate(m.fd, sizeof(Shared)) == 0)
        p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
    }
    if (p == MAP_FAILED) {
      m.fd = -1;
      p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    }
    m.shared = static_cast<Shared*>(p);
  });
  return m;
}

// Runs `f` on the table with every process excluded; initialises a new table first.
template <typename F>
auto locked(F f) {
  Mapping& m = mapping();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.fd >= 0) flock(m.fd, LOCK_EX);
  Shared& s = *m.shared;
  if (s.magic != kMagic) {
    // The first numbers a ConnectX hands out are the firmware's choice; these look like its.
    s.next_pdn = 1;
    s.next_cqn = 0x400;
    s.next_qpn = 0x100;
    s.next_mkey_index = 0x100;
    s.magic = kMagic;
  }
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) flock(fd, LOCK_UN);
    }
  } unlock{m.fd};
  return f(s);
}

void bump(Shared& s) {
  std::atomic_ref<uint32_t>(s.generation).fetch_add(1, std::memory_order_release);
}

}  // namespace

uint32_t alloc_pdn() {
  return locked([](Shared& s) { return s.next_pdn++; });
}
uint32_t alloc_cqn() {
  return locked([](Shared& s) { return s.next_cqn++; });
}

uint32_t add_qp(uint32_t pdn) {
  return locked([&](Shared& s) -> uint32_t {
    for (QpEntry& q : s.qps) {
      if (q.used) continue;
      q = QpEntry{s.next_qpn++ & 0xffffff, pdn, static_cast<int32_t>(getpid()), 0, 0, 1};
      return q.qpn;
    }
    return 0;
  });
}

void update_qp(uint32_t qpn, uint32_t state, uint32_t dest_qpn) {
  locked([&](Shared& s) {
    for (QpEntry& q : s.qps)
      if (q.used && q.qpn == qpn) q.state = state, q.dest_qpn = dest_qpn;
    return 0;
  });
}

void remove_qp(uint32_t qpn) {
  locked([&](Shared& s) {
    for (QpEntry& q : s.qps)
      if (q.used && q.qpn == qpn) q.used = 0;
    return 0;
  });
}

bool find_qp(uint32_t qpn, QpEntry* out) {
  return locked([&](Shared& s) {
    for (const QpEntry& q : s.qps)
      if (q.used && q.qpn == qpn) return *out = q, true;
    return false;
  });
}

// mlx5 keys are the mkey's index shifted past an 8-bit variant (mlx5_idx_to_mkey | key).
uint32_t add_mr(uint32_t pdn, uint32_t access, uint64_t start, uint64_t iova, uint64_t length) {
  return locked([&](Shared& s) -> uint32_t {
    for (MrEntry& m : s.mrs) {
      if (m.used) continue;
      const uint32_t index = s.next_mkey_index++;
      m = MrEntry{(index << 8) | (index & 0xff),
                  pdn,
                  static_cast<int32_t>(getpid()),
                  access,
                  start,
                  iova,
                  length,
                  1,
                  0};
      bump(s);
      return m.key;
    }
    return 0;
  });
}

void remove_mr(uint32_t key) {
  locked([&](Shared& s) {
    for (MrEntry& m : s.mrs)
      if (m.used && m.key == key) m.used = 0;
    bump(s);
    return 0;
  });
}

std::vector<MrEntry> mrs() {
  return locked([](Shared& s) {
    std::vector<MrEntry> out;
    for (const MrEntry& m : s.mrs)
      if (m.used) out.push_back(m);
    return out;
  });
}

uint32_t generation() {
  return std::atomic_ref<uint32_t>(mapping().shared->generation).load(std::memory_order_acquire);
}

}  // namespace mori::emulated_kernel::hca
