#pragma once
// The HTTP client the collectors are handed (CollectorOptions::http): one
// request, on a connection of its own (a node's writes are minutes apart),
// over TLS for https:// with the server's certificate checked against the
// request's CA file (else the system's), within the request's timeout.

#include "collectors/framework/options.h"

namespace ibfabric::exporter {

// Never throws: a URL it cannot use, a server that does not answer in
// time, a certificate that does not verify are an answer of status 0 with
// the reason in one line.
collectors::HttpAnswer HttpFetch(const collectors::HttpRequest& request);

}  // namespace ibfabric::exporter
