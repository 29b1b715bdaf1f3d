#include "transport/transfer_at_once.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/completion_condition.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace troupe::transport;
namespace net = boost::asio;
using boost::system::error_code;

namespace {

// A socket stand-in: each call moves at most `cap` bytes and records how many it was offered;
// the call numbered `fail_at` (from 0) fails instead.
struct recording_stream {
  explicit recording_stream(std::size_t cap, std::size_t fail_at = SIZE_MAX)
      : cap(cap), fail_at(fail_at) {}

  std::size_t cap;
  std::size_t fail_at;
  std::vector<std::size_t> offered;

  template <class Buffers> std::size_t write_some(const Buffers& b, error_code& ec) {
    return move_some(net::buffer_size(b), ec);
  }
  template <class Buffers> std::size_t write_some(const Buffers& b) {
    error_code ec;
    return write_some(b, ec);
  }
  template <class Buffers> std::size_t read_some(const Buffers& b, error_code& ec) {
    return move_some(net::buffer_size(b), ec);
  }
  template <class Buffers> std::size_t read_some(const Buffers& b) {
    error_code ec;
    return read_some(b, ec);
  }

private:
  std::size_t move_some(std::size_t n, error_code& ec) {
    ec = {};
    if (offered.size() == fail_at) {
      offered.push_back(n);
      ec = net::error::connection_reset;
      return 0;
    }
    offered.push_back(n);
    return std::min(n, cap);
  }
};

} // namespace

TEST_CASE("transfer_at_once offers a 100 KB write whole, where transfer_all splits it at 64 KB") {
  const std::string head(165, 'h');
  const std::string body(100'000, 'b');
  std::vector<net::const_buffer> bufs{net::buffer(head), net::buffer(body)};

  recording_stream whole{SIZE_MAX};
  error_code ec;
  CHECK(net::write(whole, bufs, transfer_at_once{}, ec) == 100'165);
  CHECK_FALSE(ec);
  CHECK(whole.offered == std::vector<std::size_t>{100'165});

  recording_stream capped{SIZE_MAX};
  CHECK(net::write(capped, bufs, net::transfer_all(), ec) == 100'165);
  CHECK(capped.offered == std::vector<std::size_t>{65'536, 34'629});
}

TEST_CASE("transfer_at_once offers each call all that is left when the socket takes less") {
  const std::string body(100'000, 'b');
  recording_stream s{30'000};
  error_code ec;
  CHECK(net::write(s, net::buffer(body), transfer_at_once{}, ec) == 100'000);
  CHECK_FALSE(ec);
  CHECK(s.offered == std::vector<std::size_t>{100'000, 70'000, 40'000, 10'000});
}

TEST_CASE("transfer_at_once reads a body's rest in calls offered all of what is missing") {
  std::string body(96'085, '\0');
  recording_stream s{40'000};
  error_code ec;
  CHECK(net::read(s, net::buffer(body.data(), body.size()), transfer_at_once{}, ec) == 96'085);
  CHECK_FALSE(ec);
  CHECK(s.offered == std::vector<std::size_t>{96'085, 56'085, 16'085});
}

TEST_CASE("transfer_at_once stops at the first error with what was moved before it") {
  const std::string body(100'000, 'b');
  recording_stream s{30'000, 1};
  error_code ec;
  CHECK(net::write(s, net::buffer(body), transfer_at_once{}, ec) == 30'000);
  CHECK(ec == net::error::connection_reset);
  CHECK(s.offered.size() == 2);
}
