#pragma once
// Text that is written back where it must be valid UTF-8: JSON bodies,
// error messages that quote what a request or a file said, label values.
// Pure functions; UTF-8 as RFC 3629 defines it (no overlong forms, no
// surrogates, nothing above U+10FFFF), the same rule nlohmann::json and
// Prometheus apply.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibfabric::config {

// `text` split at '\n', a '\r' before it dropped (files saved on Windows or
// through a terminal): line N of a file is element N-1. No element after a
// final newline.
std::vector<std::string_view> Lines(std::string_view text);
// `s` without the spaces, tabs and carriage returns at either end.
std::string_view Trim(std::string_view s);

// The offset of the first byte that does not begin a well-formed UTF-8
// sequence (or begins one that is cut short); nullopt when `text` is valid.
std::optional<std::size_t> FirstInvalidUtf8(std::string_view text);

// `text` with each maximal ill-formed subsequence replaced by U+FFFD (the
// Unicode standard's "maximal subpart" practice, as browsers decode).
// Valid text is returned unchanged.
std::string ValidUtf8(std::string_view text);

// `text` made valid (ValidUtf8) and cut after `max_chars` characters, never
// inside one, with "..." appended when it was cut: for quoting a value
// someone else chose in a one-line message.
std::string Excerpt(std::string_view text, std::size_t max_chars);

// "line N: not valid UTF-8 at column C (byte 0xFF)" for the first invalid
// byte of a file's text (columns in bytes, from 1); empty when it is valid.
std::string Utf8Problem(std::string_view text);

}  // namespace ibfabric::config
