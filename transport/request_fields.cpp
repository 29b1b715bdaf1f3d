#include "transport/request_fields.hpp"

#include <algorithm>
#include <boost/beast/http/rfc7230.hpp>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace troupe::transport {

namespace http = boost::beast::http;

namespace {

/// The first block's size: a typical head's names, values and target fit (an OpenAI client
/// sends ~400 bytes of them).
constexpr std::size_t first_block = 512;

bool same_name(const request_field& f, std::string_view name) noexcept {
  return f.name_text.size() == name.size() && boost::beast::iequals(f.name_text, name);
}

bool same_name(const request_field& f, http::field name) noexcept {
  return f.known == name;
}

/// A test for fields named `name` (Beast's enum, or text ignoring case).
template <class Name> auto named(Name name) noexcept {
  return [name](const request_field& f) { return same_name(f, name); };
}

/// A field's name as Beast would resolve it (`unknown` for a name Beast does not know).
http::field known_name(std::string_view name) {
  return http::string_to_field(name);
}

/// `tokens` without the token `drop` (ignoring case), as a comma-separated list.
std::string without_token(std::string_view tokens, std::string_view drop) {
  std::string out;
  for (auto token : http::token_list{tokens}) {
    if (boost::beast::iequals(token, drop)) {
      continue;
    }
    if (!out.empty()) {
      out += ", ";
    }
    out.append(token.data(), token.size());
  }
  return out;
}

/// `tokens` with `add` appended when it is not there already.
std::string with_token(std::string_view tokens, std::string_view add) {
  std::string out = without_token(tokens, add);
  if (!out.empty()) {
    out += ", ";
  }
  out += add;
  return out;
}

} // namespace

request_fields::request_fields(const request_fields& other) {
  *this = other;
}

request_fields::request_fields(request_fields&& other) noexcept {
  *this = std::move(other);
}

request_fields& request_fields::operator=(request_fields&& other) noexcept {
  if (this != &other) {
    fields_ = std::move(other.fields_);
    blocks_ = std::move(other.blocks_);
    next_ = std::exchange(other.next_, nullptr);
    limit_ = std::exchange(other.limit_, nullptr);
    method_ = std::exchange(other.method_, {});
    target_ = std::exchange(other.target_, {});
    other.fields_.clear();
    other.blocks_.clear();
  }
  return *this;
}

request_fields& request_fields::operator=(const request_fields& other) {
  if (this == &other) {
    return *this;
  }
  fields_.clear();
  blocks_.clear();
  next_ = limit_ = nullptr;
  std::size_t bytes = other.method_.size() + other.target_.size();
  for (const auto& f : other.fields_) {
    bytes += f.name_text.size() + f.value_text.size();
  }
  reserve_text(bytes);
  method_ = keep(other.method_);
  target_ = keep(other.target_);
  for (const auto& f : other.fields_) {
    insert(f.known, f.name_text, f.value_text);
  }
  return *this;
}

// -- reading --

request_fields::const_iterator request_fields::find(http::field name) const noexcept {
  return std::find_if(begin(), end(), named(name));
}

request_fields::const_iterator request_fields::find(std::string_view name) const noexcept {
  return std::find_if(begin(), end(), named(name));
}

std::size_t request_fields::count(http::field name) const noexcept {
  return static_cast<std::size_t>(std::count_if(begin(), end(), named(name)));
}

std::size_t request_fields::count(std::string_view name) const noexcept {
  return static_cast<std::size_t>(std::count_if(begin(), end(), named(name)));
}

std::string_view request_fields::operator[](http::field name) const noexcept {
  auto it = find(name);
  return it == end() ? std::string_view{} : it->value_text;
}

std::string_view request_fields::operator[](std::string_view name) const noexcept {
  auto it = find(name);
  return it == end() ? std::string_view{} : it->value_text;
}

std::string_view request_fields::at(http::field name) const {
  return value_at(find(name));
}

std::string_view request_fields::at(std::string_view name) const {
  return value_at(find(name));
}

std::string_view request_fields::value_at(const_iterator it) const {
  if (it == end()) {
    throw std::out_of_range("no such header field");
  }
  return it->value_text;
}

// -- writing --

void request_fields::add_block(std::size_t bytes) {
  // Each block twice the one before: a request with many fields has few blocks.
  auto size = std::max(bytes, first_block << std::min<std::size_t>(blocks_.size(), 16));
  // One byte more than is handed out: Boost 1.74's `beast::iequals` reads one byte past both
  // strings when they differ in case (found by request_parser_diff_fuzz). Beast's own fields
  // never end where their allocation does; text kept here may.
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(size + 1));
  next_ = blocks_.back().get();
  limit_ = next_ + size;
}

void request_fields::insert(http::field name, std::string_view name_text, std::string_view value) {
  if (name_text.empty()) {
    name_text = http::to_string(name);
  }
  reserve_text(name_text.size() + value.size()); // both in one block: one check for room
  auto kept_name = keep(name_text);
  fields_.push_back(request_field{name, kept_name, keep(value)});
}

void request_fields::insert(http::field name, std::string_view value) {
  insert(name, http::to_string(name), value);
}

void request_fields::insert(std::string_view name, std::string_view value) {
  insert(known_name(name), name, value);
}

void request_fields::set(http::field name, std::string_view value) {
  erase(name);
  insert(name, value);
}

void request_fields::set(std::string_view name, std::string_view value) {
  erase(name);
  insert(name, value);
}

std::size_t request_fields::erase(http::field name) {
  return erase_named(name);
}

std::size_t request_fields::erase(std::string_view name) {
  return erase_named(name);
}

template <class Name> std::size_t request_fields::erase_named(Name name) {
  auto before = fields_.size();
  fields_.erase(std::remove_if(fields_.begin(), fields_.end(), named(name)), fields_.end());
  return before - fields_.size();
}

// -- Beast's Fields concept (the same meaning as `basic_fields`) --

bool request_fields::get_chunked_impl() const {
  http::token_list list{(*this)[http::field::transfer_encoding]};
  for (auto it = list.begin(); it != list.end();) {
    auto next = std::next(it);
    if (next == list.end()) {
      return boost::beast::iequals(*it, "chunked");
    }
    it = next;
  }
  return false;
}

bool request_fields::get_keep_alive_impl(unsigned version) const {
  auto it = find(http::field::connection);
  if (it == end()) {
    return version >= 11;
  }
  http::token_list list{it->value_text};
  return version < 11 ? list.exists("keep-alive") : !list.exists("close");
}

bool request_fields::has_content_length_impl() const noexcept {
  return find(http::field::content_length) != end();
}

template <class Name> void request_fields::set_list(Name name, std::string_view tokens) {
  if (tokens.empty()) {
    erase(name);
  } else {
    set(name, tokens);
  }
}

void request_fields::set_chunked_impl(bool value) {
  auto te = (*this)[http::field::transfer_encoding];
  set_list(http::field::transfer_encoding,
           value ? with_token(te, "chunked") : without_token(te, "chunked"));
}

void request_fields::set_content_length_impl(const boost::optional<std::uint64_t>& value) {
  if (!value) {
    erase(http::field::content_length);
  } else {
    set(http::field::content_length, std::to_string(*value));
  }
}

void request_fields::set_keep_alive_impl(unsigned version, bool keep_alive) {
  auto connection = std::string((*this)[http::field::connection]);
  std::string tokens;
  if (version < 11) {
    tokens = keep_alive ? with_token(without_token(connection, "close"), "keep-alive")
                        : without_token(without_token(connection, "close"), "keep-alive");
  } else {
    tokens = keep_alive ? without_token(connection, "close")
                        : with_token(without_token(connection, "keep-alive"), "close");
  }
  set_list(http::field::connection, tokens);
}

// -- the writer --

request_fields::writer::writer(const request_fields& fields, unsigned version, http::verb method) {
  auto verb = method == http::verb::unknown ? fields.method_ : http::to_string(method);
  head_.reserve(64 + fields.target_.size());
  head_.append(verb).append(" ").append(fields.target_).append(" HTTP/");
  head_.push_back(static_cast<char>('0' + version / 10));
  head_.push_back('.');
  head_.push_back(static_cast<char>('0' + version % 10));
  head_.append("\r\n");
  for (const auto& f : fields) {
    head_.append(f.name_text).append(": ").append(f.value_text).append("\r\n");
  }
  head_.append("\r\n");
}

request_fields::writer::const_buffers_type request_fields::writer::get() const {
  return {head_.data(), head_.size()};
}

} // namespace troupe::transport
