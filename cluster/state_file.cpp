#include "cluster/state_file.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace troupe::cluster {

std::vector<protocol::worker_record> load_state(const std::string& path, std::string& why) {
  std::ifstream in{path, std::ios::binary};
  if (!in) {
    return {}; // a first start: nothing saved yet
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto file = protocol::decode_registry_file(bytes.str(), why);
  if (!file) {
    auto aside = path + ".corrupt";
    std::rename(path.c_str(), aside.c_str());
    why = "state file " + path + " is unreadable (" + why + "); moved to " + aside;
    return {};
  }
  return std::move(file->records);
}

bool save_state(const std::string& path, const std::string& node,
                const std::vector<protocol::worker_record>& records, std::string& why) {
  protocol::registry_file file;
  file.node = node;
  file.saved_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  file.records = records;
  auto bytes = protocol::encode(file);
  auto tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    why = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      why = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  // On the disk before it replaces the old file, and the rename on the disk before a write
  // counts as durable (a 202 promises that it survives this node: docs/cluster.md).
  if (::fsync(fd) != 0) {
    why = "cannot sync " + tmp + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    why = "cannot replace " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  auto slash = path.rfind('/');
  auto dir = slash == std::string::npos ? std::string{"."}
             : slash == 0               ? std::string{"/"}
                                        : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) {
    why = "cannot sync the directory " + dir + ": " + std::strerror(errno);
    if (dfd >= 0) {
      ::close(dfd);
    }
    return false;
  }
  ::close(dfd);
  return true;
}

} // namespace troupe::cluster
