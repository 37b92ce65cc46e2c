// Name tables: the one place an enum's text names live, read both ways. For an enum whose
// values run 0..N-1, `names` lists the canonical name of each value in value order; extra
// names a parser also accepts go in a small alias table of {name, value} pairs. name_of is an
// index; find_name scans (for option parsing, not per-element work). The caller words the
// parse error, so each enum keeps its own message.
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

namespace hora {

template <typename E>
using NameAlias = std::pair<const char*, E>;

// The canonical name of `value`, or `unknown` when it is past the table.
template <typename E, size_t N>
const char* name_of(const char* const (&names)[N], E value, const char* unknown = "unknown") {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : unknown;
}

// The value whose canonical name is `text`, or nullopt.
template <typename E, size_t N>
std::optional<E> find_name(const char* const (&names)[N], const std::string& text) {
  for (size_t i = 0; i < N; ++i)
    if (text == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

// The value whose alias is `text`, or nullopt.
template <typename E, size_t M>
std::optional<E> find_alias(const NameAlias<E> (&aliases)[M], const std::string& text) {
  for (const NameAlias<E>& alias : aliases)
    if (text == alias.first) return alias.second;
  return std::nullopt;
}

// The value whose canonical name or alias is `text`, or nullopt.
template <typename E, size_t N, size_t M>
std::optional<E> find_name(const char* const (&names)[N], const NameAlias<E> (&aliases)[M],
                           const std::string& text) {
  if (auto value = find_name<E>(names, text)) return value;
  return find_alias(aliases, text);
}

}  // namespace hora
