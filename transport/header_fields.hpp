#pragma once

// Header field text on the hot path: a value appended without CR or LF (so no header can be
// injected), and the first field of several names found in one pass over a message's fields (a
// Beast lookup per name is a case-insensitive tree search, ~250-600 instructions each).

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace troupe::transport {

/// Appends `v` to `out` without its CR and LF characters (most values hold neither: one append).
inline void append_without_crlf(std::string& out, std::string_view v) {
  if (v.empty()) {
    return; // (memchr must not see the null data() of an empty view)
  }
  if (!std::memchr(v.data(), '\r', v.size()) && !std::memchr(v.data(), '\n', v.size())) {
    out.append(v);
    return;
  }
  for (char c : v) {
    if (c != '\r' && c != '\n') {
      out.push_back(c);
    }
  }
}

/// For each of `names` (field names compared case-insensitively, or Beast's `http::field`
/// values for known fields: an integer compare), the value of its first field in `fields`, or
/// nullopt when it has none: what `fields.find(names[i])` finds, in one pass over the fields.
/// `out` has a slot per name.
template <class Fields, class Names>
void first_fields(const Fields& fields, const Names& names,
                  std::span<std::optional<std::string_view>> out) {
  using name_type = std::decay_t<decltype(names[0])>;
  auto is = [](const auto& f, const name_type& name) {
    if constexpr (std::is_same_v<name_type, boost::beast::http::field>) {
      return f.name() == name;
    } else {
      // The lengths first, inline: most pairs differ there, without a call of `iequals`.
      auto text = f.name_string();
      return text.size() == std::string_view(name).size() && boost::beast::iequals(text, name);
    }
  };
  for (auto& slot : out) {
    slot.reset();
  }
  for (auto& f : fields) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!out[i] && is(f, names[i])) {
        out[i] = f.value();
        break;
      }
    }
  }
}

/// Field names to look up on every request, resolved once: Beast's `http::field` for the
/// names it knows, so that a field Beast knows too is matched by an integer compare, and the
/// text of the others, compared (ignoring case) only with fields Beast does not know.
class field_names {
public:
  template <class Names> explicit field_names(const Names& names) {
    for (const auto& name : names) {
      std::string_view text(name);
      auto known = boost::beast::http::string_to_field(text);
      known_.push_back(known);
      text_.emplace_back(text);
      unknown_ += known == boost::beast::http::field::unknown ? 1 : 0;
      if (known != boost::beast::http::field::unknown) {
        auto k = static_cast<std::size_t>(known);
        if (k >= slot_.size()) {
          slot_.resize(k + 1, no_slot);
        }
        if (slot_[k] == no_slot) {
          slot_[k] = static_cast<std::uint16_t>(known_.size() - 1);
        }
      }
    }
  }

  std::size_t size() const noexcept { return known_.size(); }
  std::string_view operator[](std::size_t i) const noexcept { return text_[i]; }

private:
  template <class Fields>
  friend void first_fields(const Fields& fields, const field_names& names,
                           std::span<std::optional<std::string_view>> out);

  static constexpr std::uint16_t no_slot = 0xFFFF;

  std::vector<boost::beast::http::field> known_; ///< `unknown` for a name Beast does not know.
  /// For each of Beast's field enums up to the largest among the names, the first name's
  /// index, or `no_slot`: a field Beast knows is matched by one lookup, whatever the list's size.
  std::vector<std::uint16_t> slot_;
  std::vector<std::string> text_;
  std::size_t unknown_ = 0; ///< How many names Beast does not know.
};

/// `first_fields` for names resolved once: what `fields.find(names[i])` finds, for each name,
/// in one pass. `out` has a slot per name.
template <class Fields>
void first_fields(const Fields& fields, const field_names& names,
                  std::span<std::optional<std::string_view>> out) {
  using boost::beast::http::field;
  for (auto& slot : out) {
    slot.reset();
  }
  for (auto& f : fields) {
    auto k = f.name();
    if (k != field::unknown) {
      auto ki = static_cast<std::size_t>(k);
      if (ki >= names.slot_.size() || names.slot_[ki] == field_names::no_slot) {
        continue;
      }
      // The first name that is this field and has no value yet (a name listed twice takes
      // the field's next occurrence, as the scan of every name did).
      for (std::size_t i = names.slot_[ki]; i < out.size(); ++i) {
        if (names.known_[i] == k && !out[i]) {
          out[i] = f.value();
          break;
        }
      }
      continue;
    }
    if (names.unknown_ == 0) {
      continue;
    }
    auto text = f.name_string();
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (names.known_[i] == field::unknown && !out[i] && text.size() == names.text_[i].size() &&
          boost::beast::iequals(text, names.text_[i])) {
        out[i] = f.value();
        break;
      }
    }
  }
}

} // namespace troupe::transport
