// The doorbell page's fault handler (bnxt_doorbell.hpp). libbnxt_re 44 rings every doorbell with
// one 64-bit store of a register to the address in another (`mov %rax,(%rdx)`: REX.W 89 /r, see
// `objdump -d libbnxt_re-rdmav34.so` at bnxt_re_ring_*_db); the decoder takes that form with any
// register and addressing mode, and anything else is reported and left to fault for real.
#include "bnxt_doorbell.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace mori::emulated_kernel::bnxt {
namespace {

constexpr int kMaxPages = 64;
constexpr uint32_t kCells = 1u << 16;
constexpr uint32_t kQueTypeSq = 0x00;  // bnxt_re_db_que_type: BNXT_RE_QUE_TYPE_SQ

struct Page {
  std::atomic<uintptr_t> base{0};
  std::atomic<size_t> bytes{0};
};
Page g_pages[kMaxPages];
std::atomic<uint64_t> g_cells[kCells];
struct sigaction g_previous;

bool watched(uintptr_t a) {
  for (const Page& p : g_pages) {
    const uintptr_t b = p.base.load(std::memory_order_acquire);
    if (b && a >= b && a < b + p.bytes.load(std::memory_order_relaxed)) return true;
  }
  return false;
}

// ModR/M register number -> gregs index (x86-64 <sys/ucontext.h>).
constexpr int kGreg[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                           REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

// The length of a REX.W 89 /r store at `code` and its source register; false for any other form.
bool decode_store(const uint8_t* code, int* length, int* source) {
  const uint8_t rex = code[0];
  if ((rex & 0xf8) != 0x48 || code[1] != 0x89) return false;
  const uint8_t modrm = code[2];
  const int mod = modrm >> 6, rm = modrm & 7;
  if (mod == 3) return false;  // a register destination does not fault
  int n = 3;
  if (rm == 4) {  // a SIB byte; base 5 with mod 0 means disp32 without a base
    if (mod == 0 && (code[3] & 7) == 5) n += 4;
    n += 1;
  } else if (mod == 0 && rm == 5) {
    n += 4;  // RIP-relative
  }
  n += mod == 1 ? 1 : mod == 2 ? 4 : 0;
  *length = n;
  *source = ((rex >> 2) & 1) << 3 | ((modrm >> 3) & 7);
  return true;
}

void on_fault(int sig, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const auto* rip = reinterpret_cast<const uint8_t*>(uc->uc_mcontext.gregs[REG_RIP]);
  int length = 0, source = 0;
  if (watched(reinterpret_cast<uintptr_t>(info->si_addr)) && decode_store(rip, &length, &source)) {
    const uint64_t value = static_cast<uint64_t>(uc->uc_mcontext.gregs[kGreg[source]]);
    // bnxt_re_db_hdr: indx in the low word, typ (4 bits at 28) and qid (20 bits) in the high one.
    const uint32_t typ_qid = static_cast<uint32_t>(value >> 32);
    if ((typ_qid >> 28) == kQueTypeSq)
      g_cells[(typ_qid & 0xfffff) % kCells].store(value, std::memory_order_release);
    uc->uc_mcontext.gregs[REG_RIP] += length;
    return;
  }
  if (watched(reinterpret_cast<uintptr_t>(info->si_addr))) {
    static const char kWhy[] = "emulated Thor2: a doorbell write the fault handler cannot decode\n";
    (void)!::write(2, kWhy, sizeof(kWhy) - 1);
  }
  // Not ours: the previous disposition, as if this handler were not there.
  if (g_previous.sa_flags & SA_SIGINFO && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != SIG_DFL) {
    g_previous.sa_handler(sig);
  } else {
    signal(sig, SIG_DFL);  // the fault repeats on return and kills the process
  }
}

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous);
  });
}

}  // namespace

void* map_doorbell_page(size_t bytes) {
  install();
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  for (Page& page : g_pages) {
    uintptr_t expected = 0;
    if (page.base.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(p))) {
      page.bytes.store(bytes, std::memory_order_release);  // before the library sees the page
      return p;
    }
  }
  ::munmap(p, bytes);
  errno = ENOMEM;
  return nullptr;
}

void forget_doorbell_page(void* page) {
  for (Page& p : g_pages)
    if (p.base.load() == reinterpret_cast<uintptr_t>(page)) p.base.store(0);
}

uint64_t* sq_doorbell(uint32_t qpn) { return reinterpret_cast<uint64_t*>(&g_cells[qpn % kCells]); }

void reset_sq_doorbell(uint32_t qpn) { g_cells[qpn % kCells].store(0); }

}  // namespace mori::emulated_kernel::bnxt
