#include "apps/troupe-bench/request_record.hpp"

namespace troupe::bench {

std::string_view to_string(outcome o) noexcept {
  switch (o) {
  case outcome::ok:
    return "ok";
  case outcome::connect_error:
    return "connect_error";
  case outcome::timeout:
    return "timeout";
  case outcome::closed:
    return "closed";
  case outcome::http_error:
    return "http_error";
  case outcome::stream_error:
    return "stream_error";
  case outcome::bad_response:
    return "bad_response";
  }
  return "ok";
}

} // namespace troupe::bench
