#pragma once
// What a client's Accept-Encoding asks for (RFC 9110 12.5.3), as the HTTP
// routes answer it: gzip for scrapes (compressed once per publication,
// exporter/gzip.h), never brotli. Pure functions.

#include <string>

namespace ibfabric::exporter {

// Accept-Encoding without brotli. httplib prefers brotli whenever a client
// offers it (browsers do) and compresses at quality 11: about 30 s of CPU
// for a 10 MB exposition. gzip costs ~0.1 s and is what Prometheus asks for.
// httplib takes "br" anywhere in the header for an offer of brotli (a
// coding "xbr", a parameter "q=br"), so every entry holding it goes.
std::string WithoutBrotli(const std::string& accept);

// Whether an Accept-Encoding takes gzip: a "gzip", "x-gzip" or "*" coding
// whose q is not 0.
bool AcceptsGzip(const std::string& accept);

}  // namespace ibfabric::exporter
