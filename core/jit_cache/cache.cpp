// On-disk entries: header (with the entry's own key), digest, meta, payload; written atomically, read only from a
// regular file of bounded size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ww/jit_cache/jit_cache.hpp"

namespace ww::jit_cache {
namespace {

// Version 2 carries the key: a file copied or moved over another key's path is a miss, never that key's cubin.
constexpr char kMagic[] = "WWJC2\n";
constexpr char kOldMagic[] = "WWJC1\n";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool make_dirs(const std::string& dir) {
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
    if (i < dir.size()) cur += dir[i];
  }
  return true;
}

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Cache::Cache(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) dir_ = env("WARPWEAVE_CACHE_DIR");
  if (dir_.empty() && !env("XDG_CACHE_HOME").empty()) dir_ = env("XDG_CACHE_HOME") + "/warpweave";
  if (dir_.empty() && !env("HOME").empty()) dir_ = env("HOME") + "/.cache/warpweave";
  if (dir_.empty()) dir_ = "/tmp/warpweave-cache";
}

bool Cache::disabled_by_env() {
  std::string v = env("WARPWEAVE_DISABLE_CACHE");
  return !v.empty() && v != "0";
}

std::string Cache::path_of(const std::string& key) const { return dir_ + "/" + key.substr(0, 2) + "/" + key + ".wwc"; }

namespace {

// The whole of a regular file of at most `limit` bytes, or nullopt with `problem` set. O_NOFOLLOW: a link in the
// entry's place is not followed (a link to /dev/zero would never end); O_NONBLOCK: opening a FIFO does not wait
// for a writer, and fstat then shows it is no regular file.
std::optional<std::string> read_regular_file(const std::string& path, size_t limit, std::string& problem) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) problem = "it is a symbolic link, which the cache does not follow";
    else if (errno != ENOENT && errno != ENOTDIR) problem = std::string("it cannot be opened: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) != 0) {
    problem = std::string("it cannot be examined: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = "it is not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > limit) {
    problem = "it holds " + std::to_string(st.st_size) + " bytes, more than an entry may (" + std::to_string(limit) + ")";
  } else {
    std::string data(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < data.size()) {
      ssize_t r = ::read(fd, data.data() + got, data.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    data.resize(got);  // shorter if it shrank meanwhile: the digest check then fails
    out = std::move(data);
  }
  ::close(fd);
  return out;
}

}  // namespace

std::optional<Entry> Cache::load(const std::string& key, std::string* problem) const {
  std::string path = path_of(key);
  auto report = [&](const std::string& what) {
    if (problem) *problem = "warpweave JIT cache: " + path + " " + what + "; compiling afresh";
  };
  std::string why;
  std::optional<std::string> read = read_regular_file(path, kMaxEntryBytes, why);
  if (!read) {
    if (!why.empty()) report("is not used: " + why);
    return std::nullopt;
  }
  std::string& data = *read;
  auto damaged = [&]() -> std::optional<Entry> {
    ::unlink(path.c_str());
    return std::nullopt;
  };
  // magic, 64 hex key, '\n', 64 hex digest of key + meta + payload, '\n', meta length (decimal) '\n', meta, payload
  size_t pos = sizeof(kMagic) - 1;
  if (data.compare(0, pos, kOldMagic) == 0) return damaged();  // an older warpweave's entry: replaced when stored
  if (data.compare(0, pos, kMagic) != 0 || data.size() < pos + 130) return damaged();
  std::string stored_key = data.substr(pos, 64);
  pos += 64;
  if (data[pos++] != '\n') return damaged();
  std::string digest = data.substr(pos, 64);
  pos += 64;
  if (data[pos++] != '\n') return damaged();
  size_t nl = data.find('\n', pos);
  if (nl == std::string::npos) return damaged();
  size_t meta_len = 0;
  for (size_t i = pos; i < nl; ++i) {
    if (data[i] < '0' || data[i] > '9') return damaged();
    meta_len = meta_len * 10 + static_cast<size_t>(data[i] - '0');
  }
  pos = nl + 1;
  if (meta_len > data.size() - pos) return damaged();
  Entry e;
  e.meta = data.substr(pos, meta_len);
  pos += meta_len;
  std::string_view payload(data.data() + pos, data.size() - pos);
  if (key_of({stored_key, e.meta, payload}) != digest) return damaged();
  if (stored_key != key) {
    // An intact entry of another key (copied over this one's file): never served as this key's result. It stays
    // (the compile that follows replaces it); the warning says where it came from.
    report("holds the entry of another key (" + stored_key + "), copied or moved there");
    return std::nullopt;
  }
  e.payload.assign(payload.begin(), payload.end());
  return e;
}

bool Cache::store(const std::string& key, const Entry& entry) const {
  std::string path = path_of(key);
  std::string dir = path.substr(0, path.rfind('/'));
  if (!make_dirs(dir)) return false;
  std::random_device rd;
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return false;
  std::string_view payload(reinterpret_cast<const char*>(entry.payload.data()), entry.payload.size());
  std::string header = std::string(kMagic) + key + "\n" + key_of({key, entry.meta, payload}) + "\n" +
                       std::to_string(entry.meta.size()) + "\n";
  bool ok = write_all(fd, header.data(), header.size()) && write_all(fd, entry.meta.data(), entry.meta.size()) &&
            write_all(fd, payload.data(), payload.size()) && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  bool placed = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  struct stat st {};
  if (ok && !placed && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) &&
      ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    // A directory in the entry's place (rename replaces files and links, not directories): nothing of the cache
    // lives there, and left alone it would keep this key from ever being cached again. It goes, as a damaged
    // entry does.
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    placed = !ec && ::rename(tmp.c_str(), path.c_str()) == 0;
  }
  if (!placed) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace ww::jit_cache
