#pragma once
// Private: the checks a plugin file passes before dlopen sees it. The dynamic loader maps a library's segments as
// its program headers describe them and touches them; a truncated file (a copy cut short, a full disk) then
// kills the process with SIGBUS inside dlopen, where no error can be reported. So the headers are read here first
// and checked against the file's real size.
#include <string>

namespace ww::plugins {

// "" when `path` is a regular file holding an ELF shared object for this machine whose every segment and table
// lies inside the file; otherwise why not, in a sentence (the caller names the file).
std::string check_elf_file(const std::string& path);

}  // namespace ww::plugins
