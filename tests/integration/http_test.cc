// The HTTP API of the real binary on the simulated fabric, under hostile
// input (issue 41): every request of the HTTP fuzz target's hostile seeds
// (tests/fuzz/corpus/http/hostile-*: bad bytes in the query strings of every
// JSON route, as a value, as an unknown parameter's value and name, and
// values whose 40th or 80th byte splits a character), each sent as it is on
// a connection of its own with "Connection: close". Every answer is below
// 500, carries only documented headers, has a valid UTF-8 JSON body, and
// its connection is closed at once; requests httplib cannot parse are
// answered and closed too; the error replies are counted exactly in
// infiniband_exporter_http_errors_total.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exporter/http_routes.h"
#include "tests/integration/fabric_suite.h"
#include "tests/testbed/http_reply.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

// What one connection got: everything the server sent until it closed,
// and how long it took to close (or the 10 s read timeout).
struct Exchange {
  std::string bytes;
  milliseconds took{0};
  bool closed = false;  // the server closed; false: still open after 10 s
};

Exchange Send(int port, const std::string& request) {
  Exchange x;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto start = steady_clock::now();
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) x.bytes.append(buf, static_cast<std::size_t>(n));
    x.closed = n == 0;
  }
  x.took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
  close(fd);
  return x;
}

std::set<std::string> Documented() { return {exporter::kResponseHeaders.begin(), exporter::kResponseHeaders.end()}; }

class HttpHostileTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    FatTreeSpec spec = Spec(2, 2, 2, 1, 8);
    spec.hcas_per_host = 1;  // hosts named as rdma-ndd names them: /api/v1/host has hosts
    StartFabric(spec);
  }
};

TEST_F(HttpHostileTest, BadBytesInEveryQueryAreAnsweredBelow500WithValidJsonAndCountedExactly) {
  auto exporter = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1m", "--mad.timeout=20ms"});
  ASSERT_NE(exporter, nullptr);

  std::vector<std::filesystem::path> seeds;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(IBFABRIC_SOURCE_DIR) + "/tests/fuzz/corpus/http")) {
    if (e.path().filename().string().rfind("hostile-", 0) == 0) seeds.push_back(e.path());
  }
  std::sort(seeds.begin(), seeds.end());
  ASSERT_GE(seeds.size(), 300u) << "the hostile seeds (tests/fuzz/http_seeds.py)";

  std::map<int, int> statuses;  // status -> replies
  int broken = 0;
  milliseconds slowest{0};
  const std::set<std::string> documented = Documented();
  for (const auto& path : seeds) {
    const std::string request = ReadFile(path.string());
    const Exchange x = Send(exporter->port(), request);
    slowest = std::max(slowest, x.took);
    std::string error;
    const auto reply = ParseReply(x.bytes, &error);
    const std::string problem = !x.closed ? "the connection stayed open"
                                : !reply  ? error
                                          : BrokenPromise(*reply, reply->body, documented);
    if (!problem.empty()) {
      ++broken;
      ADD_FAILURE() << path.filename() << ": " << problem << "\n" << x.bytes.substr(0, 600);
      continue;
    }
    ++statuses[reply->status];
    // Connection: close asked, and kept: closed as soon as the reply went,
    // not after the 5 s keep-alive timeout.
    EXPECT_LT(x.took, milliseconds(2000)) << path.filename();
    EXPECT_EQ(reply->Header("Connection"), "close") << path.filename();
  }
  EXPECT_EQ(broken, 0);
  int at_least_500 = 0;
  std::string summary;
  for (const auto& [status, n] : statuses) {
    if (status >= 500) at_least_500 += n;
    summary += " " + std::to_string(status) + ":" + std::to_string(n);
  }
  EXPECT_EQ(at_least_500, 0) << summary;
  // Most are refused (400) or name nothing there is (404); a valid value
  // next to bad bytes can still be answered.
  EXPECT_GT(statuses[400], 200) << summary;
  std::cout << "[ hostile  ] " << seeds.size() << " requests:" << summary << "; slowest " << slowest.count() << " ms\n";

  // Requests httplib cannot parse: answered once, and the connection closed
  // at once (httplib alone kept it open for the keep-alive timeout).
  const std::vector<std::pair<std::string, int>> unparsed{
      {"GET /api/v1/alerts?x=%ff HTTP/9\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n", 400},
      {"GET /api/v1/search?q=" + std::string(9000, 'a') + " HTTP/1.1\r\nConnection: close\r\n\r\n", 414},
      {"GET /healthz HTTP/1.1\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n", 400},  // a header over 8 KiB
  };
  for (const auto& [request, status] : unparsed) {
    const Exchange x = Send(exporter->port(), request);
    EXPECT_TRUE(x.closed);
    EXPECT_LT(x.took, milliseconds(2000));
    std::string error;
    const auto reply = ParseReply(x.bytes, &error);
    ASSERT_TRUE(reply) << error << "\n" << x.bytes;
    EXPECT_EQ(reply->status, status);
    EXPECT_EQ(reply->Header("Connection"), "close");
    EXPECT_EQ(BrokenPromise(*reply, reply->body, documented), "");
    EXPECT_EQ(x.bytes.find("HTTP/1.1", 8), std::string::npos) << "one reply only:\n" << x.bytes;
    ++statuses[status];
  }

  // Every error reply counted, by status, once the next sweep published.
  const auto counted = [&](const Scrape& s) {
    for (const auto& [status, n] : statuses) {
      if (status < 400) continue;
      const auto v = s.Value("infiniband_exporter_http_errors_total", {{"code", std::to_string(status)}});
      if (!v || *v != n) return false;
    }
    return true;
  };
  const auto s = exporter->WaitFor(counted, seconds(20));
  ASSERT_TRUE(s) << "infiniband_exporter_http_errors_total never matched" << summary;
  EXPECT_EQ(s->Value("infiniband_exporter_http_errors_total", {{"code", "500"}}), 0.0);
  std::size_t codes = 0;
  for (const auto& [status, n] : statuses) codes += status >= 400 ? 1 : 0;
  EXPECT_EQ(s->Find("infiniband_exporter_http_errors_total").size(), codes + (statuses.count(500) ? 0 : 1))
      << "a code counted that no reply had";
}

}  // namespace
}  // namespace ibfabric::testbed
