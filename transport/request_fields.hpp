#pragma once

// A client request's header fields, kept flat: the fields in one array in the order they came,
// their names and values (and the request's target) copied into one block of text. Beast's own
// `basic_fields` keeps every field in a node of its own (an allocation, a case-insensitive tree
// insertion and a list link per field; ~470 instructions a field, and `keep_alive()` or
// `chunked()` a tree search each); a request's head is written once by the parser and then read.
// It satisfies Beast's Fields concept, so `http::message<true, Body, request_fields>` has
// Beast's interface (method, target, version, keep_alive, find, operator[], set, erase, and
// serialization by `http::write`).

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/optional/optional.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

namespace troupe::transport {

/// One field of a request: the accessors are those of a Beast field (`name`, `name_string`,
/// `value`), so code that reads either reads both.
struct request_field {
  boost::beast::http::field known = boost::beast::http::field::unknown; ///< Beast's enum, if any.
  std::string_view name_text;  ///< The name as the client wrote it.
  std::string_view value_text; ///< The value, without surrounding whitespace.

  /// Beast's enum for the name (`unknown` when it has none).
  boost::beast::http::field name() const noexcept { return known; }
  /// The name as written.
  std::string_view name_string() const noexcept { return name_text; }
  /// The value.
  std::string_view value() const noexcept { return value_text; }
};

/// The header fields (and the target, and the method's text when Beast has no verb for it) of
/// one request. Views it hands out (values, names, the target) stay valid while the object
/// lives, across moves and later insertions: text is never moved once written. Erasing or
/// replacing a field leaves its old text in place until the object dies (a request's fields are
/// set a handful of times at most).
class request_fields {
  using field_list = boost::container::small_vector<request_field, 10>;

public:
  using value_type = request_field;
  using const_iterator = field_list::const_iterator;
  using iterator = const_iterator;

  request_fields() = default;
  request_fields(request_fields&& other) noexcept;
  request_fields& operator=(request_fields&& other) noexcept;
  request_fields(const request_fields& other);
  request_fields& operator=(const request_fields& other);
  ~request_fields() = default;

  // -- reading --

  const_iterator begin() const noexcept { return fields_.begin(); }
  const_iterator end() const noexcept { return fields_.end(); }
  const_iterator cbegin() const noexcept { return fields_.begin(); }
  const_iterator cend() const noexcept { return fields_.end(); }
  /// How many fields there are (a name given twice counts twice).
  std::size_t size() const noexcept { return fields_.size(); }
  bool empty() const noexcept { return fields_.empty(); }

  /// The first field `name`, or `end()`.
  const_iterator find(boost::beast::http::field name) const noexcept;
  /// The first field named `name` (ignoring case), or `end()`.
  const_iterator find(std::string_view name) const noexcept;
  /// How many fields `name` there are.
  std::size_t count(boost::beast::http::field name) const noexcept;
  std::size_t count(std::string_view name) const noexcept;
  /// The value of the first field `name`, or empty (as Beast's `operator[]`).
  std::string_view operator[](boost::beast::http::field name) const noexcept;
  std::string_view operator[](std::string_view name) const noexcept;
  /// The value of the first field `name`; throws `std::out_of_range` when there is none.
  std::string_view at(boost::beast::http::field name) const;
  std::string_view at(std::string_view name) const;

  // -- writing --

  /// Adds a field after the others (the parser's way in).
  void insert(boost::beast::http::field name, std::string_view name_text, std::string_view value);
  void insert(boost::beast::http::field name, std::string_view value);
  void insert(std::string_view name, std::string_view value);
  /// Replaces every field `name` by one with `value`.
  void set(boost::beast::http::field name, std::string_view value);
  void set(std::string_view name, std::string_view value);
  /// Removes every field `name`; says how many there were.
  std::size_t erase(boost::beast::http::field name);
  std::size_t erase(std::string_view name);
  /// Removes every field (the target and method stay).
  void clear() noexcept { fields_.clear(); }

  /// Room for `bytes` more bytes of text before another block is needed.
  void reserve_text(std::size_t bytes) {
    if (static_cast<std::size_t>(limit_ - next_) < bytes) {
      add_block(bytes);
    }
  }

  /// Serializes the head for Beast's serializer (`http::write` of a request).
  class writer;

protected:
  // -- Beast's Fields concept: what `http::header` and `http::message` call --

  std::string_view get_method_impl() const noexcept { return method_; }
  std::string_view get_target_impl() const noexcept { return target_; }
  std::string_view get_reason_impl() const noexcept { return {}; }
  bool get_chunked_impl() const;
  bool get_keep_alive_impl(unsigned version) const;
  bool has_content_length_impl() const noexcept;
  void set_method_impl(std::string_view s) { method_ = keep(s); }
  void set_target_impl(std::string_view s) { target_ = keep(s); }
  void set_reason_impl(std::string_view) {}
  void set_chunked_impl(bool value);
  void set_content_length_impl(const boost::optional<std::uint64_t>& value);
  void set_keep_alive_impl(unsigned version, bool keep_alive);

private:
  /// Makes a lasting copy of `s` in the text blocks.
  std::string_view keep(std::string_view s) {
    if (s.empty()) {
      return {};
    }
    reserve_text(s.size());
    char* at = next_;
    std::memcpy(at, s.data(), s.size());
    next_ += s.size();
    return {at, s.size()};
  }
  /// Starts a block with room for at least `bytes`.
  void add_block(std::size_t bytes);
  /// The value `it` points at; throws `std::out_of_range` at `end()`.
  std::string_view value_at(const_iterator it) const;
  /// Removes every field `name` (Beast's enum, or text ignoring case); says how many.
  template <class Name> std::size_t erase_named(Name name);
  /// Replaces the `name` fields' token list (Connection, Transfer-Encoding) by `tokens`
  /// (erasing the fields when it is empty).
  template <class Name> void set_list(Name name, std::string_view tokens);

  field_list fields_;
  /// The blocks of text; never resized, so views into them stay valid. Text goes to the last,
  /// at `next_`, up to `limit_`.
  boost::container::small_vector<std::unique_ptr<char[]>, 2> blocks_;
  char* next_ = nullptr;
  char* limit_ = nullptr;
  std::string_view method_; ///< The method's text when Beast has no verb for it.
  std::string_view target_;
};

/// Writes a request's head (request line, fields, empty line) as Beast's serializer wants it.
class request_fields::writer {
public:
  using const_buffers_type = boost::asio::const_buffer;

  writer(const request_fields& fields, unsigned version, boost::beast::http::verb method);

  /// The head's bytes.
  const_buffers_type get() const;

private:
  std::string head_;
};

} // namespace troupe::transport
