#pragma once

#include "apps/troupe-bench/connection.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <vector>

namespace troupe::bench {

/// The connections to one target: idle ones are reused, new ones opened up to a cap; beyond
/// it, requests wait for a connection in arrival order. Single-threaded (one event loop).
class connection_pool {
public:
  using use_fn = std::function<void(std::shared_ptr<connection>)>;

  connection_pool(boost::asio::any_io_executor ex, const target& t, std::size_t max_connections);

  /// Calls `use` with a connection now (idle or new), or when one is released.
  void acquire(use_fn use);

  /// Gives `c` back after its request; a connection that cannot be reused is dropped.
  void release(std::shared_ptr<connection> c, bool reusable);

  /// Connections open or being opened.
  std::size_t open() const noexcept { return open_; }

  /// Most connections open at once.
  std::size_t peak() const noexcept { return peak_; }

  /// Requests that had to wait for a connection.
  std::size_t waited() const noexcept { return waited_; }

private:
  std::shared_ptr<connection> make();

  boost::asio::any_io_executor ex_;
  const target& target_;
  std::size_t max_;
  std::vector<std::shared_ptr<connection>> idle_;
  std::deque<use_fn> waiting_;
  std::size_t open_ = 0;
  std::size_t peak_ = 0;
  std::size_t waited_ = 0;
};

} // namespace troupe::bench
