#pragma once
// The JIT cache: compiled cubins on disk, keyed by content.
//
// A key is the SHA-256 of everything the result depends on (the IR, the target, the options, the warpweave
// version, the digests of the plugins used). Entries are written to a temporary file and renamed into place, so
// concurrent writers never leave a partial entry; each entry carries its own key and a digest of key and payload,
// so a damaged file reads as a miss (and is removed) and another key's entry copied into its place reads as a miss
// with a warning, never as a wrong cubin. Only regular files are read (no links, FIFOs or devices), and at most
// kMaxEntryBytes of them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ww::jit_cache {

// Hex SHA-256 of the concatenated parts, each length-prefixed so that part boundaries matter.
std::string key_of(const std::vector<std::string_view>& parts);
std::string sha256_hex(std::string_view data);

struct Entry {
  std::vector<uint8_t> payload;
  std::string meta;  // free text stored beside the payload (e.g. the kernel names)
};

class Cache {
 public:
  // `dir` empty: $WARPWEAVE_CACHE_DIR, else $XDG_CACHE_HOME/warpweave, else ~/.cache/warpweave.
  explicit Cache(std::string dir = {});
  const std::string& dir() const { return dir_; }
  // $WARPWEAVE_DISABLE_CACHE set to anything but "" or "0".
  static bool disabled_by_env();

  // The largest entry read (cubins are at most a few MB).
  static constexpr size_t kMaxEntryBytes = size_t{256} << 20;

  // The entry stored under `key`, or nullopt. `problem` (when given) says why a file present in the entry's place
  // was not used, when that is worth a warning (another key's entry, a link, a FIFO, an oversized file).
  std::optional<Entry> load(const std::string& key, std::string* problem = nullptr) const;
  // Returns false (and leaves no partial file) if the entry could not be written.
  bool store(const std::string& key, const Entry& entry) const;
  std::string path_of(const std::string& key) const;

 private:
  std::string dir_;
};

}  // namespace ww::jit_cache
