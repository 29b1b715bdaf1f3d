#include "apps/troupe-bench/connection_pool.hpp"

#include <algorithm>

namespace troupe::bench {

connection_pool::connection_pool(boost::asio::any_io_executor ex, const target& t,
                                 std::size_t max_connections)
    : ex_(std::move(ex)), target_(t), max_(max_connections) {}

std::shared_ptr<connection> connection_pool::make() {
  ++open_;
  peak_ = std::max(peak_, open_);
  return std::make_shared<connection>(ex_, target_);
}

void connection_pool::acquire(use_fn use) {
  if (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    return use(std::move(c));
  }
  if (open_ < max_) {
    return use(make());
  }
  ++waited_;
  waiting_.push_back(std::move(use));
}

void connection_pool::release(std::shared_ptr<connection> c, bool reusable) {
  if (!reusable) {
    --open_;
    c.reset();
    if (!waiting_.empty() && open_ < max_) {
      auto use = std::move(waiting_.front());
      waiting_.pop_front();
      use(make());
    }
    return;
  }
  if (!waiting_.empty()) {
    auto use = std::move(waiting_.front());
    waiting_.pop_front();
    return use(std::move(c));
  }
  idle_.push_back(std::move(c));
}

} // namespace troupe::bench
