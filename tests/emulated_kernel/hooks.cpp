// The LD_PRELOAD face of the emulated kernel: the libc calls through which libibverbs, libmlx5 and
// libnl reach Linux, answered for the emulated device and passed through for everything else.
//   open/openat of /dev/infiniband/uverbs0     a File (an eventfd stands in for the cdev's fd)
//   stat/fstat of it                           a character device 231:192, as util/open_cdev.c
//                                              (open_cdev_internal) and init.c
//                                              (try_access_device) check
//   write() on it                              the uverbs command (uverbs_cmd.cpp)
//   ioctl() on it                              ENOTTY: no ioctl framework (kernel.hpp)
//   mmap() of it                               the driver's pages (UAR, clock: mlx5_driver.cpp)
//   close() of it                              releases the context, as uverbs_close does
//   socket(AF_NETLINK, .., NETLINK_RDMA)       EPROTONOSUPPORT, so that libibverbs finds devices
//                                              through sysfs (init.c: find_sysfs_devs_nl fails,
//                                              find_sysfs_devs follows)
//   read() of an empty gid_attrs file          EINVAL, as core/sysfs.c _show_port_gid_attr
// The first open of the process writes the sysfs tree under SYSFS_PATH if it is not there yet.
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "connectx7.hpp"
#include "kernel.hpp"

namespace ek = mori::emulated_kernel;

namespace {

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

using OpenFn = int (*)(const char*, int, ...);
using OpenatFn = int (*)(int, const char*, int, ...);
using StatFn = int (*)(const char*, struct stat*);
using FstatFn = int (*)(int, struct stat*);
using XstatFn = int (*)(int, const char*, struct stat*);
using FxstatFn = int (*)(int, int, struct stat*);
using ReadFn = ssize_t (*)(int, void*, size_t);
using WriteFn = ssize_t (*)(int, const void*, size_t);
using IoctlFn = int (*)(int, unsigned long, ...);
using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);
using CloseFn = int (*)(int);
using SocketFn = int (*)(int, int, int);

constexpr const char* kDevice = "/dev/infiniband/uverbs0";
constexpr int kMaxFd = 4096;

// Per fd: 1 an open emulated device, 2 a gid_attrs file whose read fails with EINVAL.
std::atomic<uint8_t> g_kind[kMaxFd];
ek::File* g_files[kMaxFd];
std::mutex g_mutex;  // guards g_files and the objects behind them (one command at a time)

bool is_device(const char* path) { return path && std::strcmp(path, kDevice) == 0; }

uint8_t kind_of(int fd) {
  return fd >= 0 && fd < kMaxFd ? g_kind[fd].load(std::memory_order_acquire) : 0;
}

void fake_cdev(struct stat* st) {
  std::memset(st, 0, sizeof(*st));
  st->st_mode = S_IFCHR | 0666;
  st->st_rdev = makedev(ek::cx7::kCdevMajor, ek::cx7::kCdevMinor);
  st->st_nlink = 1;
  st->st_blksize = 4096;
}

// The tree is written once per directory, under a lock, by whichever process comes first.
// (Writing it opens files, which come back here: those pass.)
thread_local bool t_writing_sysfs = false;
void ensure_sysfs() {
  if (t_writing_sysfs) return;
  static std::once_flag once;
  std::call_once(once, [] {
    t_writing_sysfs = true;
    const char* root = std::getenv("SYSFS_PATH");
    if (!root) return;
    const std::string lock = std::string(root) + "/.emulated_kernel.lock";
    const int fd = next<OpenFn>("open")(lock.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return void(t_writing_sysfs = false);
    flock(fd, LOCK_EX);
    struct stat st;
    const std::string marker = std::string(root) + "/class/infiniband_verbs/abi_version";
    std::string why;
    if (next<StatFn>("stat")(marker.c_str(), &st) != 0 && !ek::write_sysfs_tree(root, &why))
      std::fprintf(stderr, "emulated kernel: %s\n", why.c_str());
    flock(fd, LOCK_UN);
    next<CloseFn>("close")(fd);
    t_writing_sysfs = false;
  });
}

int open_device(int flags) {
  const int fd = eventfd(0, (flags & O_CLOEXEC) ? EFD_CLOEXEC : 0);
  if (fd < 0) return -1;
  if (fd >= kMaxFd) {
    next<CloseFn>("close")(fd);
    errno = EMFILE;
    return -1;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_files[fd] = new ek::File;
  g_files[fd]->fd = fd;
  g_kind[fd].store(1, std::memory_order_release);
  ek::trace("open %s = fd %d", kDevice, fd);
  return fd;
}

// An empty file under .../gid_attrs/ of the emulated tree: the kernel fails its read.
void mark_gid_attr(int fd, const char* path) {
  const char* root = std::getenv("SYSFS_PATH");
  if (fd < 0 || fd >= kMaxFd || !root || !path || std::strncmp(path, root, std::strlen(root)) ||
      !std::strstr(path, "/gid_attrs/"))
    return;
  struct stat st;
  if (next<FstatFn>("fstat")(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
    g_kind[fd].store(2, std::memory_order_release);
}

int do_open(const char* path, int flags, mode_t mode, int dirfd, bool at) {
  ensure_sysfs();
  if (is_device(path)) return open_device(flags);
  const int fd = at ? next<OpenatFn>("openat")(dirfd, path, flags, mode)
                    : next<OpenFn>("open")(path, flags, mode);
  if (fd >= 0 && fd < kMaxFd) g_kind[fd].store(0, std::memory_order_release);
  if (path && path[0] == '/') mark_gid_attr(fd, path);
  return fd;
}

mode_t mode_arg(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

}  // namespace

namespace mori::emulated_kernel {

int real_close(int fd) { return next<CloseFn>("close")(fd); }

void trace(const char* format, ...) {
  static const bool on = std::getenv("MORI_EMU_TRACE") != nullptr;
  if (!on) return;
  char line[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(line, sizeof(line), format, ap);
  va_end(ap);
  std::fprintf(stderr, "emulated kernel [%d]: %s\n", getpid(), line);
}

}  // namespace mori::emulated_kernel

extern "C" {

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_open(path, flags, mode, AT_FDCWD, false);
}
int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_open(path, flags, mode, AT_FDCWD, false);
}
int __open_2(const char* path, int flags) { return do_open(path, flags, 0, AT_FDCWD, false); }
int __open64_2(const char* path, int flags) { return do_open(path, flags, 0, AT_FDCWD, false); }
int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_open(path, flags, mode, dirfd, true);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return do_open(path, flags, mode, dirfd, true);
}

int stat(const char* path, struct stat* st) {
  ensure_sysfs();
  if (is_device(path)) return fake_cdev(st), 0;
  return next<StatFn>("stat")(path, st);
}
int stat64(const char* path, struct stat64* st) {
  return stat(path, reinterpret_cast<struct stat*>(st));
}
int fstat(int fd, struct stat* st) {
  if (kind_of(fd) == 1) return fake_cdev(st), 0;
  return next<FstatFn>("fstat")(fd, st);
}
int fstat64(int fd, struct stat64* st) { return fstat(fd, reinterpret_cast<struct stat*>(st)); }
// glibc before 2.33 exported only these.
int __xstat(int ver, const char* path, struct stat* st) {
  ensure_sysfs();
  if (is_device(path)) return fake_cdev(st), 0;
  return next<XstatFn>("__xstat")(ver, path, st);
}
int __xstat64(int ver, const char* path, struct stat64* st) {
  return __xstat(ver, path, reinterpret_cast<struct stat*>(st));
}
int __fxstat(int ver, int fd, struct stat* st) {
  if (kind_of(fd) == 1) return fake_cdev(st), 0;
  return next<FxstatFn>("__fxstat")(ver, fd, st);
}
int __fxstat64(int ver, int fd, struct stat64* st) {
  return __fxstat(ver, fd, reinterpret_cast<struct stat*>(st));
}

ssize_t read(int fd, void* buf, size_t n) {
  if (kind_of(fd) == 2) {
    errno = EINVAL;
    return -1;
  }
  return next<ReadFn>("read")(fd, buf, n);
}

ssize_t write(int fd, const void* buf, size_t n) {
  if (kind_of(fd) != 1) return next<WriteFn>("write")(fd, buf, n);
  std::lock_guard<std::mutex> lock(g_mutex);
  return ek::uverbs_write(*g_files[fd], buf, n);
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (kind_of(fd) == 1) {
    ek::trace("ioctl 0x%lx: ENOTTY (no ioctl framework)", request);
    errno = ENOTTY;
    return -1;
  }
  return next<IoctlFn>("ioctl")(fd, request, arg);
}

void* mmap(void* addr, size_t bytes, int prot, int flags, int fd, off_t offset) {
  if (kind_of(fd) != 1) return next<MmapFn>("mmap")(addr, bytes, prot, flags, fd, offset);
  std::lock_guard<std::mutex> lock(g_mutex);
  ek::File& f = *g_files[fd];
  void* out = MAP_FAILED;
  const long page = sysconf(_SC_PAGESIZE);
  const int rc = f.has_context
                     ? ek::driver().mmap(f, static_cast<uint64_t>(offset) / page, bytes, prot, &out)
                     : EINVAL;  // uverbs_mmap: no ucontext yet
  if (rc) {
    errno = rc;
    return MAP_FAILED;
  }
  return out;
}
void* mmap64(void* addr, size_t bytes, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, bytes, prot, flags, fd, offset);
}

int close(int fd) {
  if (kind_of(fd) == 1) {
    std::lock_guard<std::mutex> lock(g_mutex);
    ek::trace("close fd %d", fd);
    ek::File* f = g_files[fd];
    ek::release_file(*f);
    if (f->async_fd >= 0) next<CloseFn>("close")(f->async_fd);
    delete f;
    g_files[fd] = nullptr;
    g_kind[fd].store(0, std::memory_order_release);
  } else if (kind_of(fd) == 2) {
    g_kind[fd].store(0, std::memory_order_release);
  }
  return next<CloseFn>("close")(fd);
}

int socket(int domain, int type, int protocol) {
  if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
    ek::trace("socket(AF_NETLINK, NETLINK_RDMA): EPROTONOSUPPORT");
    errno = EPROTONOSUPPORT;
    return -1;
  }
  return next<SocketFn>("socket")(domain, type, protocol);
}

}  // extern "C"
