// Fuzzes the state file reader as a node runs it at start-up: whatever bytes lie at the path
// (a file truncated by a crash, a disk error, another program's file), load_state must return
// the records it can read or none, say why, and move an unreadable file aside rather than let
// the next save destroy it. A save followed by a load gives back what was saved.

#include "cluster/state_file.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace troupe;

namespace {

/// A private directory for this process, removed at exit: in memory (/dev/shm) where there is
/// one, since a disk's file system costs more than the reader (4x fewer inputs a second).
struct scratch_dir {
  std::string path;
  scratch_dir() {
    std::string tmpl = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    tmpl += "/troupe-state-fuzz-XXXXXX";
    auto* p = ::mkdtemp(tmpl.data());
    FUZZ_CHECK(p != nullptr);
    path = p;
  }
  ~scratch_dir() {
    for (auto* name : {"/state", "/state.corrupt", "/state.tmp"}) {
      ::unlink((path + name).c_str());
    }
    ::rmdir(path.c_str());
  }
};

bool exists(const std::string& p) {
  return ::access(p.c_str(), F_OK) == 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static scratch_dir dir;
  auto path = dir.path + "/state";
  auto aside = path + ".corrupt";
  ::unlink(aside.c_str());
  {
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    FUZZ_CHECK(out.good());
  }
  std::string why;
  auto records = cluster::load_state(path, why);
  std::string decode_why;
  bool readable = protocol::decode_registry_file(
                      std::string_view{reinterpret_cast<const char*>(data), size}, decode_why)
                      .has_value();
  if (readable) {
    FUZZ_CHECK(why.empty());
    FUZZ_CHECK(exists(path) && !exists(aside));
    // What was read survives a save and a load.
    std::string save_why;
    FUZZ_CHECK(cluster::save_state(path, "fuzz-node", records, save_why));
    std::string load_why;
    auto again = cluster::load_state(path, load_why);
    FUZZ_CHECK(load_why.empty());
    FUZZ_CHECK(again == records);
  } else {
    FUZZ_CHECK(records.empty());
    FUZZ_CHECK(!why.empty());
    FUZZ_CHECK(!exists(path) && exists(aside));
  }
  return 0;
}
