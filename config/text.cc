#include "config/text.h"

#include <cstdint>
#include <cstdio>

namespace ibfabric::config {
namespace {

// The length of the well-formed sequence at text[i] (1-4), or 0 when
// none begins there; *bad is then how many bytes form the maximal
// ill-formed subpart (at least 1) to replace by one U+FFFD.
// The ranges are RFC 3629 section 4's (Unicode Table 3-7).
std::size_t Sequence(std::string_view text, std::size_t i, std::size_t* bad) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
  const std::uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  std::size_t need = 0;
  std::uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 == 0xE0) {
    need = 3, lo = 0xA0;  // no overlong three-byte forms
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 3;
  } else if (b0 == 0xED) {
    need = 3, hi = 0x9F;  // no surrogates (U+D800..U+DFFF)
  } else if (b0 == 0xF0) {
    need = 4, lo = 0x90;  // no overlong four-byte forms
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 4;
  } else if (b0 == 0xF4) {
    need = 4, hi = 0x8F;  // nothing above U+10FFFF
  } else {
    *bad = 1;  // 0x80..0xC1 (continuations, overlong leads), 0xF5..0xFF
    return 0;
  }
  for (std::size_t k = 1; k < need; ++k) {
    const bool in = i + k < text.size() && byte(i + k) >= (k == 1 ? lo : 0x80) && byte(i + k) <= (k == 1 ? hi : 0xBF);
    if (!in) {
      *bad = k;  // the lead and the continuations that were right so far
      return 0;
    }
  }
  return need;
}

}  // namespace

std::optional<std::size_t> FirstInvalidUtf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t bad = 0;
    const std::size_t n = Sequence(text, i, &bad);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

std::string ValidUtf8(std::string_view text) {
  if (!FirstInvalidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    std::size_t bad = 0;
    const std::size_t n = Sequence(text, i, &bad);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
      i += bad;
    }
  }
  return out;
}

std::string Excerpt(std::string_view text, std::size_t max_chars) {
  const std::string valid = ValidUtf8(text);
  std::size_t chars = 0;
  for (std::size_t i = 0; i < valid.size();) {
    if (chars == max_chars) return valid.substr(0, i) + "...";
    std::size_t bad = 0;
    i += Sequence(valid, i, &bad);  // valid: always a whole character
    ++chars;
  }
  return valid;
}

std::string Utf8Problem(std::string_view text) {
  const auto at = FirstInvalidUtf8(text);
  if (!at) return {};
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < *at; ++i) {
    if (text[i] == '\n') ++line, line_start = i + 1;
  }
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<std::uint8_t>(text[*at])));
  return "line " + std::to_string(line) + ": not valid UTF-8 at column " + std::to_string(*at - line_start + 1) +
         " (byte " + byte + ")";
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    out.push_back(l);
    start = end + 1;
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace ibfabric::config
