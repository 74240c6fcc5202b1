// On-disk entries: header, payload digest, meta, payload; written atomically.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "ww/jit_cache/jit_cache.hpp"

namespace ww::jit_cache {
namespace {

constexpr char kMagic[] = "WWJC1\n";

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

std::optional<Entry> Cache::load(const std::string& key) const {
  std::string path = path_of(key);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string data = ss.str();
  auto damaged = [&]() -> std::optional<Entry> {
    ::unlink(path.c_str());
    return std::nullopt;
  };
  // magic, 64 hex digest, '\n', meta length (decimal) '\n', meta, payload
  size_t pos = sizeof(kMagic) - 1;
  if (data.compare(0, pos, kMagic) != 0 || data.size() < pos + 65) return damaged();
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
  if (key_of({e.meta, payload}) != digest) return damaged();
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
  std::string header = std::string(kMagic) + key_of({entry.meta, payload}) + "\n" + std::to_string(entry.meta.size()) + "\n";
  bool ok = write_all(fd, header.data(), header.size()) && write_all(fd, entry.meta.data(), entry.meta.size()) &&
            write_all(fd, payload.data(), payload.size()) && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace ww::jit_cache
