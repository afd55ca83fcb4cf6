#!/usr/bin/env python3
"""Writes the seed corpus of tests/fuzz/http_fuzz.cc into tests/fuzz/corpus/http.

hostile-*: the requests of issue 41, each one GET with bad bytes in its query
string and "Connection: close": every JSON route with each bad value as each of
its parameters, as an unknown parameter's value and as an unknown parameter's
name, and values whose 40th or 80th byte splits a character (where error
messages cut). integration.http sends every hostile-* to the real binary.
keepalive-*, broken-*: requests on one connection, and requests httplib cannot
parse, for the fuzzer to start from.

Run it again after changing the cases; the files are committed.
"""
import os
import sys

ROUTES = {
    "/api/v1/topology": ["view", "node", "tier"],
    "/api/v1/alerts": ["severity", "node", "state"],
    "/api/v1/search": ["q", "limit"],
    "/api/v1/node": ["guid"],
    "/api/v1/host": ["name"],
    "/api/v1/port": ["guid", "port"],
    "/api/v1/route": ["from", "to"],
    "/api/v1/structure": [],
    "/api/v1/subnet_managers": [],
}

# Each a query-string value, percent-encoded as a client would send it.
BAD = {
    "invalid": "%ff%fe",
    "overlong2": "%c0%af",
    "overlong3": "%e0%80%af",
    "truncated": "%e2%82",
    "continuation": "%80abc",
    "surrogate": "%ed%a0%80",
    "nul": "a%00b",
    "above-max": "%f4%90%80%80",
    "mixed": "cn%ffnode%c3",
    "split40": "a" * 39 + "%c3%a9",
    "split80": "a" * 79 + "%c3%a9",
}


def request(target, extra=""):
    return f"GET {target} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n".encode("latin-1")


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "http")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name.startswith(("hostile-", "keepalive-", "broken-")):
            os.remove(os.path.join(out, name))
    seeds = {}
    for route, params in ROUTES.items():
        short = route.rsplit("/", 1)[1]
        for kind, value in BAD.items():
            for p in params:
                seeds[f"hostile-{short}-{p}-{kind}"] = request(f"{route}?{p}={value}")
            seeds[f"hostile-{short}-unknown-value-{kind}"] = request(f"{route}?zz={value}")
            seeds[f"hostile-{short}-unknown-name-{kind}"] = request(f"{route}?{value}=1")
    # Raw bytes, not percent-encoded, in the request line.
    seeds["hostile-search-raw-bytes"] = b"GET /api/v1/search?q=\xff\xfe\xc0 HTTP/1.1\r\nConnection: close\r\n\r\n"
    seeds["keepalive-two-requests"] = (b"GET /api/v1/search?q=cn%ff HTTP/1.1\r\nHost: x\r\n\r\n"
                                       b"GET /api/v1/alerts?state=active HTTP/1.1\r\nHost: x\r\n\r\n")
    seeds["keepalive-metrics-gzip"] = b"GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip, br\r\n\r\nHEAD / HTTP/1.1\r\n\r\n"
    seeds["keepalive-topology-node"] = b"GET /api/v1/topology?node=leaf0&view=findings HTTP/1.1\r\n\r\n"
    seeds["keepalive-host"] = b"GET /api/v1/host?name=cn0002 HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n"
    seeds["broken-request-line"] = b"GET /api/v1/alerts?x=%ff HTTP/9\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    seeds["broken-long-uri"] = b"GET /api/v1/search?q=" + b"a" * 9000 + b" HTTP/1.1\r\nConnection: close\r\n\r\n"
    seeds["broken-header"] = b"GET /healthz HTTP/1.1\r\nno colon here\r\nConnection: close\r\n\r\n"
    seeds["broken-range"] = b"GET / HTTP/1.1\r\nRange: bytes=x-\r\n\r\n"
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    hostile = sum(1 for n in seeds if n.startswith("hostile-"))
    print(f"{len(seeds)} seeds ({hostile} hostile) in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
