// Finding the CUDA pieces we do not link (libnvJitLink, ptxas, nvdisasm, cuobjdump) and running tools. They come
// from a CUDA toolkit, or from pip wheels (nvidia-*-cu13 put them under site-packages/nvidia/cu13/{bin,lib}), so
// the search covers both, plus whatever the Python layer hands us.
#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "internal.hpp"

extern char** environ;

namespace ww::compiler {
namespace {

std::mutex g_dirs_mutex;
std::vector<std::string> g_dirs;

}  // namespace

void set_search_dirs(std::vector<std::string> dirs) {
  std::lock_guard lock(g_dirs_mutex);
  g_dirs = std::move(dirs);
}

namespace detail {
namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// When we run inside Python, /proc/self/exe is the interpreter: its bin directory and its site-packages hold the
// pip-installed CUDA wheels even if the Python layer did not tell us.
std::vector<std::string> interpreter_dirs() {
  std::vector<std::string> dirs;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return dirs;
  std::string bin = exe.parent_path().string();
  if (exe.filename().string().rfind("python", 0) != 0) return dirs;
  dirs.push_back(bin);
  glob_t found{};
  std::string pattern = bin + "/../lib/python3*/site-packages";
  if (::glob(pattern.c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) dirs.emplace_back(found.gl_pathv[i]);
  }
  ::globfree(&found);
  return dirs;
}

}  // namespace

std::string getenv_str(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_executable_file(const std::string& path) {
  return is_regular_file(path) && ::access(path.c_str(), X_OK) == 0;
}

std::vector<std::string> configured_search_dirs() {
  std::vector<std::string> dirs;
  {
    std::lock_guard lock(g_dirs_mutex);
    dirs = g_dirs;
  }
  static const std::vector<std::string> interpreter = interpreter_dirs();
  dirs.insert(dirs.end(), interpreter.begin(), interpreter.end());
  return dirs;
}

std::vector<std::string> expand_search_dirs(const std::vector<std::string>& dirs) {
  static constexpr const char* kSubdirs[] = {"",         "/bin",          "/lib",          "/lib64",
                                             "/nvidia/cu13/bin", "/nvidia/cu13/lib", "/nvidia/nvjitlink/lib"};
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& dir : dirs) {
    for (const char* sub : kSubdirs) {
      std::string candidate = dir + sub;
      if (is_directory(candidate) && seen.insert(candidate).second) out.push_back(std::move(candidate));
    }
  }
  return out;
}

std::string find_tool(const std::vector<std::string>& names, const std::vector<std::string>& dirs) {
  std::vector<std::string> all = expand_search_dirs(dirs);
  for (auto& dir : split_path_list(getenv_str("PATH"))) all.push_back(std::move(dir));
  if (std::string cuda_home = getenv_str("CUDA_HOME"); !cuda_home.empty()) all.push_back(cuda_home + "/bin");
  all.emplace_back("/usr/local/cuda/bin");
  for (const std::string& dir : all) {
    for (const std::string& name : names) {
      std::string path = dir + "/" + name;
      if (is_executable_file(path)) return path;
    }
  }
  return {};
}

int run_process(const std::vector<std::string>& argv, std::string& output) {
  output.clear();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    output = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  // posix_spawn, not fork: the host may be a large, multi-threaded Python process.
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    output = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      output.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  output += "\n" + argv[0] + " was killed by signal " + std::to_string(WTERMSIG(status));
  return 128 + WTERMSIG(status);
}

TempDir::TempDir() {
  std::string base = getenv_str("TMPDIR");
  if (base.empty()) base = "/tmp";
  std::string pattern = base + "/warpweave-XXXXXX";
  if (::mkdtemp(pattern.data())) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, std::string_view data) const {
  std::string path = path_ + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return out.good() ? path : std::string();
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  out = std::move(buffer).str();
  return true;
}

void* open_library(const std::vector<std::string>& candidates, const std::function<bool(void*)>& bind,
                   std::string* path, std::string* tried) {
  for (const std::string& candidate : candidates) {
    if (candidate.find('/') != std::string::npos && !is_regular_file(candidate)) {
      *tried += "\n  " + candidate + ": no such file";
      continue;
    }
    void* lib = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = ::dlerror();
      *tried += "\n  " + candidate + ": " + (err ? err : "not loadable");
      continue;
    }
    if (!bind(lib)) {
      *tried += "\n  " + candidate + ": lacks the entry points";
      ::dlclose(lib);
      continue;
    }
    *path = candidate;
    return lib;
  }
  return nullptr;
}

std::string own_directory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || !info.dli_fname) return {};
  std::string file = info.dli_fname;
  size_t slash = file.rfind('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

}  // namespace detail
}  // namespace ww::compiler
