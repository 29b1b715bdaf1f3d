#include "transport/response_head.hpp"

namespace troupe::transport {

response_head::response_head(const http::response_header<>& h) : status_(h.result_int()) {
  for (auto& f : h) {
    owned_.push_back(head_field{f.name(), f.name_string(), f.value()});
  }
  fields_ = owned_;
}

std::string_view response_head::operator[](http::field name) const noexcept {
  for (auto& f : fields_) {
    if (f.known == name) {
      return f.value_text;
    }
  }
  return {};
}

} // namespace troupe::transport
