#pragma once
// The one way configuration files (plans, node-name maps, thresholds, the
// web config) are read: the whole file, handed to a pure parser whose "line N: reason"
// becomes "FILE:N: reason".

#include <functional>
#include <string>

namespace ibfabric::config {

using TextParser = std::function<bool(const std::string& text, std::string* why)>;

// A file whose text is not valid UTF-8 is refused before it is parsed
// ("FILE:N: not valid UTF-8 at column C (byte 0xFF)").
// False with "FILE:N: reason" (or "FILE: reason" when the parser names no
// line) or "FILE: cannot read: <errno text>".
bool ParseFile(const std::string& path, const TextParser& parse, std::string* error);

}  // namespace ibfabric::config
