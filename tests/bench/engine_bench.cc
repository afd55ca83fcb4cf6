// Port reads per second through the real engine and sweep code on the fake
// transport, with a modeled MAD round trip and loss rate, against the window
// size. A port read is PortCounters + PortCountersExtended (two MADs).
//
//   build/tests/engine_bench [--benchmark_format=json]
//
// Arguments of each run: window, round trip in microseconds, loss in 1/1000.

#include <benchmark/benchmark.h>

#include <cstring>

#include "collectors/reads/sweep.h"
#include "transport/codec.h"
#include "transport/testing/encoders.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric {
namespace {

constexpr int kPorts = 4096;

// Answers every PMA query from a prepared reply, with PortSelect and the
// TID patched in: the responder must cost far less than the engine itself.
class Responder {
 public:
  Responder() {
    transport::PortCounters pc;
    pc.rcv_errors = 3;
    transport::PortCountersExtended x;
    x.xmit_data = 1ULL << 33;
    const auto req_pc = transport::EncodeRequest(transport::PortCountersQuery(1, 1), 0);
    const auto req_x = transport::EncodeRequest(transport::PortCountersExtendedQuery(1, 1), 0);
    pc_ = transport::EncodeResponse(req_pc, transport::testing::EncodePortCounters(pc));
    ext_ = transport::EncodeResponse(req_x, transport::testing::EncodePortCountersExtended(x));
  }
  std::optional<transport::MadBytes> operator()(const transport::MadAddress& to, const transport::MadBytes& req) const {
    transport::MadBytes out;
    const std::uint16_t attr = static_cast<std::uint16_t>(req[16] << 8 | req[17]);
    if (req[1] == 0x01) {  // LID-routed NodeInfo: answer as the node owning that LID
      transport::NodeInfo ni;
      ni.node_type = transport::NodeType::kSwitch;
      ni.node_guid = 0x1000u + to.lid;
      return transport::EncodeResponse(req, transport::testing::EncodeNodeInfo(ni));
    } else {
      out = attr == transport::pma_attr::kPortCounters ? pc_ : ext_;
      out[transport::kMadDataOffset + 1] = req[transport::kMadDataOffset + 1];  // PortSelect
    }
    std::memcpy(out.data() + 8, req.data() + 8, 8);  // TID
    return out;
  }

 private:
  transport::MadBytes pc_, ext_;
};

std::vector<collectors::SweepTarget> Targets() {
  collectors::PmaCapabilities caps{true, transport::pma_cap::kExtWidth | transport::pma_cap::kXmitWait, 0};
  std::vector<collectors::SweepTarget> t;
  for (int i = 0; i < kPorts; ++i) {
    const auto lid = static_cast<std::uint16_t>(1 + i / 32);
    t.push_back({{0x1000u + lid, static_cast<std::uint8_t>(1 + i % 32)}, lid, caps});
  }
  return t;
}

void BM_Sweep(benchmark::State& state) {
  const int window = static_cast<int>(state.range(0));
  transport::testing::FakeFaults faults;
  faults.latency = std::chrono::microseconds(state.range(1));
  faults.drop_rate = static_cast<double>(state.range(2)) / 1000.0;
  transport::testing::FakeMadPort port(Responder(), faults, 42,
                                       transport::testing::FakeMadPort::Time::kReal);  // real latency
  port.set_record_sent(false);
  transport::MadEngine engine(port, {window, std::chrono::milliseconds(5), 5});
  const auto targets = Targets();
  std::size_t failed = 0;
  for (auto _ : state) {
    const auto r = collectors::Sweep(targets, engine);
    failed += r.failed_ports;
    benchmark::DoNotOptimize(r.readings.data());
  }
  state.SetItemsProcessed(state.iterations() * kPorts);
  state.counters["failed_ports"] = static_cast<double>(failed);
  state.counters["retries"] = static_cast<double>(engine.stats().total().retries);
  state.counters["mads_per_s"] =
      benchmark::Counter(static_cast<double>(engine.stats().total().sent), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Sweep)
    ->ArgNames({"window", "rtt_us", "loss_permille"})
    ->Args({1, 200, 0})
    ->Args({8, 200, 0})
    ->Args({32, 200, 0})
    ->Args({64, 200, 0})
    ->Args({128, 200, 0})
    ->Args({256, 200, 0})
    ->Args({512, 200, 0})
    ->Args({128, 200, 10})
    ->Args({128, 1000, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);

}  // namespace
}  // namespace ibfabric

BENCHMARK_MAIN();
