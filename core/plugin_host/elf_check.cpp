// ELF checks before dlopen: the file header, then every program header (and the section header table) against
// the file's size, with overflow-checked arithmetic. Reads go through one descriptor opened without following a
// FIFO's writer (O_NONBLOCK), and only a regular file is read.
#include "elf_check.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace ww::plugins {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
constexpr const char* kMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
constexpr const char* kMachineName = "AArch64";
#else
constexpr uint16_t kMachine = 0;  // not checked
constexpr const char* kMachineName = "this machine";
#endif

// Program headers a sane shared object has (a few dozen at most); anything beyond is not a library.
constexpr uint16_t kMaxProgramHeaders = 256;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool read_at(int fd, void* out, size_t n, uint64_t offset) {
  char* p = static_cast<char*>(out);
  while (n) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

// Whether [offset, offset + length) lies inside a file of `size` bytes.
bool inside(uint64_t offset, uint64_t length, uint64_t size) { return offset <= size && length <= size - offset; }

std::string bytes(uint64_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

std::string check_elf_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return std::string("it cannot be opened: ") + std::strerror(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::string("it cannot be examined: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  Elf64_Ehdr eh{};
  if (size < sizeof(eh) || !read_at(fd.get(), &eh, sizeof(eh), 0))
    return "it is not a shared library: " + bytes(size) + ", shorter than an ELF header";
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "it is not a shared library (no ELF header)";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return "it is not a 64-bit ELF file";
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return "it is not a little-endian ELF file";
  if (eh.e_type != ET_DYN) return "it is an ELF file but not a shared library (type " + std::to_string(eh.e_type) + ")";
  if (kMachine && eh.e_machine != kMachine)
    return "it is a shared library for another machine (ELF machine " + std::to_string(eh.e_machine) +
           "), not for " + kMachineName;
  if (eh.e_phnum == 0 || eh.e_phnum > kMaxProgramHeaders || eh.e_phentsize != sizeof(Elf64_Phdr))
    return "its ELF header describes " + std::to_string(eh.e_phnum) + " program headers of " +
           bytes(eh.e_phentsize) + ": not a usable shared library";
  const uint64_t ph_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (!inside(eh.e_phoff, ph_bytes, size))
    return "it is truncated: its program headers end past the file's " + bytes(size) + " (was it copied only in part?)";
  if (eh.e_shoff != 0 && eh.e_shentsize != 0 &&
      !inside(eh.e_shoff, uint64_t{eh.e_shnum} * eh.e_shentsize, size))
    return "it is truncated: its section header table (at offset " + std::to_string(eh.e_shoff) +
           ") ends past the file's " + bytes(size) + " (was it copied only in part?)";
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(fd.get(), ph.data(), ph_bytes, eh.e_phoff)) return "its program headers cannot be read";
  bool loadable = false;
  for (size_t i = 0; i < ph.size(); ++i) {
    const Elf64_Phdr& p = ph[i];
    if (p.p_type == PT_NULL) continue;
    if (!inside(p.p_offset, p.p_filesz, size))
      return "it is truncated: segment " + std::to_string(i) + " needs bytes " + std::to_string(p.p_offset) + " to " +
             std::to_string(p.p_offset + p.p_filesz) + " but the file has " + bytes(size) +
             " (was it copied only in part?)";
    if (p.p_type == PT_LOAD) {
      loadable = true;
      if (p.p_memsz < p.p_filesz) return "segment " + std::to_string(i) + " is smaller in memory than in the file";
    }
  }
  if (!loadable) return "it has no loadable segment";
  return {};
}

}  // namespace ww::plugins
