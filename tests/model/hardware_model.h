#pragma once
// A model of real InfiniBand hardware behind the MadPort seam, for tests
// and benchmarks of how the exporter loads a fabric: what ibsim does not
// show (it answers every MAD at once and never drops one).
//
// A discrete-event simulation in simulated time (the model is also the
// engine's Clock), so a fabric of 16k hosts and slow agents plays out
// faster than real time and the same on every run:
// - every node has one management agent (the switch's management CPU, or
//   the host's kernel for an HCA) that serves one MAD at a time, with a
//   service time per MAD, and a bounded queue: a MAD that finds it full
//   is dropped (VL15 has no flow control; a full QP1 receive queue of an
//   unreliable-datagram QP drops too);
// - a LID-routed MAD (SMP or GMP) costs service time at its target only;
//   a directed-route SMP at every switch on its route, going out and
//   coming back (IBTA 14.2.2: each hop's SMA forwards it), and at its target;
// - the local HCA puts MADs on the wire at a bounded rate; every hop adds
//   a wire latency; service times vary around their mean;
// - a subnet manager runs inside the model on its own host, doing what
//   opensm does: at most 4 SMPs on the wire, 200 ms timeout, 3 retries, a
//   light sweep (SwitchInfo of every switch) every 10 s and a heavy sweep
//   (every node and port read, forwarding tables written) at start and on
//   demand. Its loss and sweep times are what the exporter must not change.
//
// The MAD contents are plausible, not a fabric's state: enough for
// discovery, sweeps, routing and partition reads to run their real code.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "tests/testbed/fat_tree.h"
#include "transport/clock.h"
#include "transport/mad_port.h"

namespace ibfabric::model {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Every number the model runs on. Each is labelled where it comes from:
// documented (a specification or a tool's documented default), measured
// (on ibsim here), or assumed (no public figure; the benchmark varies it).
struct ModelParams {
  // assumed: a switch agent's time to answer one MAD or forward one
  // directed-route SMP one way (varied 20-200 us by the benchmark).
  microseconds switch_service{100};
  // assumed: MADs a switch agent holds waiting besides the one it serves
  // (varied 2-16 by the benchmark).
  int switch_queue = 4;
  // assumed: an HCA's MADs are answered by the host's kernel/firmware.
  microseconds hca_service{10};
  int hca_queue = 64;
  // assumed: cable plus cut-through switching per hop, one way.
  microseconds hop_latency{1};
  // assumed: MADs per second the local HCA puts on the wire (the umad
  // write path of one process).
  double send_rate = 250'000;
  // assumed: each service time is uniform in mean*(1 +- jitter).
  double jitter = 0.3;
  // documented (opensm 3.3 defaults): max_wire_smps 4,
  // transaction_timeout 200 ms, transaction_retries 3, sweep_interval 10 s.
  int sm_window = 4;
  milliseconds sm_timeout{200};
  int sm_retries = 3;
  milliseconds sm_light_sweep_interval{10'000};
  // documented (IBTA 14.2.5.6 / 13.4.8.1): what the agents declare.
  std::uint8_t subnet_timeout = 18;  // opensm's default subnet_timeout
  std::uint8_t resp_time_value = 8;  // measured: ibsim's HCA ports say 8 (1 ms)
  unsigned seed = 1;
};

// What the simulated subnet manager saw.
struct SmStats {
  std::uint64_t sent = 0;      // SMPs put on the wire, retries included
  std::uint64_t dropped = 0;   // of those, lost at a full agent queue
  std::uint64_t timeouts = 0;  // attempts that timed out (the SM waited sm_timeout)
  std::uint64_t failed = 0;    // SMPs that failed every retry
  int light_sweeps = 0;
  double light_sweep_seconds_total = 0;
  double light_sweep_seconds_max = 0;
  int heavy_sweeps = 0;
  double heavy_sweep_seconds_total = 0;
  double mean_light() const { return light_sweeps ? light_sweep_seconds_total / light_sweeps : 0; }
  double mean_heavy() const { return heavy_sweeps ? heavy_sweep_seconds_total / heavy_sweeps : 0; }
};

// What the exporter's MADs did to the fabric, and the model's lower bound
// on the time they needed (reset with ResetExporterStats).
struct ExporterLoad {
  std::uint64_t mads = 0;
  std::uint64_t dropped = 0;
  std::array<double, 3> unloaded_rtt_sum{};  // seconds, what each would take on an idle fabric
  std::map<int, double> agent_work;          // node -> seconds of its agent's time
  int peak_queued = 0;                       // most of our MADs waiting or served at one agent at once
  double busiest_agent_seconds() const;
};

class HardwareModel final : public transport::MadPort, public transport::Clock {
 public:
  // The fabric is the fat tree's cables; `local` and `sm_host` are host
  // names (the exporter's and the SM's); an empty `sm_host` runs no SM.
  HardwareModel(const testbed::FatTree& tree, const std::string& local, const std::string& sm_host, ModelParams params);

  // MadPort
  bool Send(const transport::MadAddress& to, const transport::MadBytes& mad) override;
  std::optional<transport::InboundMad> Receive(std::chrono::microseconds timeout) override;
  const transport::Clock* clock() const override { return this; }  // simulated time
  // Clock
  TimePoint Now() const override { return now_; }

  // Runs the model (the SM included) until `t` with no exporter activity.
  void AdvanceTo(TimePoint t);
  // Starts a heavy sweep of the SM now (as after a fabric change).
  void StartHeavySweep();

  const SmStats& sm() const { return sm_stats_; }
  const ExporterLoad& load() const { return load_; }
  void ResetExporterStats() { load_ = ExporterLoad{}; }
  const ModelParams& params() const { return params_; }
  std::size_t nodes() const { return nodes_.size(); }
  std::size_t switches() const { return switches_; }
  std::size_t ports() const { return ports_; }  // connected ports

 private:
  struct Peer {
    int node = -1;
    int port = 0;
  };
  struct Node {
    std::string name;
    bool is_switch = false;
    int num_ports = 0;
    std::uint16_t lid = 0;
    std::vector<Peer> ports;  // index 0 unused
    // Agent
    TimePoint busy_until{};
    int queued = 0;       // waiting or in service
    int ours_queued = 0;  // of them, the exporter's
  };
  // A MAD on its way: which nodes serve it, in order, and what happens
  // after the last one.
  struct Packet {
    bool ours = true;           // the exporter's (false: the SM's)
    std::uint64_t sm_id = 0;    // the SM's request id
    std::vector<int> stops;     // nodes whose agent serves it, in order
    std::vector<bool> answers;  // at that stop the target answers (else it forwards)
    std::size_t next = 0;
    transport::MadBytes mad{};
    int entered_port = 0;  // at the target
    microseconds leg{0};   // wire time between two stops (and to the first, and back)
  };
  enum class EventType : std::uint8_t { kArrive, kServed, kDeliver, kSmTimeout, kSmLightSweep };
  struct Event {
    TimePoint at;
    std::uint64_t seq;
    EventType type;
    std::size_t packet;  // index into packets_ (kArrive/kServed/kDeliver), or SM request id
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  int NodeOfLid(std::uint16_t lid) const;
  // The route of a directed-route SMP from `from`: the nodes after each hop
  // and the port it entered the last one by; nullopt if it leads nowhere.
  bool Walk(int from, const std::vector<std::uint8_t>& path, std::vector<int>* nodes, int* entered) const;
  // The agents a directed-route SMP along `route` visits (IBTA 14.2.2).
  static void StopsOfRoute(const std::vector<int>& route, Packet* p);
  std::size_t NewPacket(Packet p);
  void Schedule(TimePoint at, EventType type, std::size_t what);
  void Arrive(std::size_t packet);
  void Served(std::size_t packet);
  microseconds MeanServiceOf(int node) const;
  microseconds ServiceOf(int node);  // drawn around the mean
  std::optional<transport::MadBytes> Answer(const Packet& p);
  bool Step(TimePoint limit);  // processes the next event at or before limit

  // The subnet manager.
  struct SmRequest {
    std::vector<std::uint8_t> path;
    std::uint16_t attr = 0;
    std::uint32_t mod = 0;
    int attempt = 0;
    std::uint64_t generation = 0;  // of the attempt in flight
  };
  void SmPump();
  void SmSend(std::uint64_t id);
  void SmDone(std::uint64_t id, bool answered);
  void SmLightSweep();
  void SmQueueSweep(bool heavy);

  ModelParams params_;
  std::vector<Node> nodes_;
  std::map<std::string, int> by_name_;
  std::vector<int> lid_owner_;  // LID -> node
  std::vector<int> hops_;       // node -> hops from the local node
  std::size_t switches_ = 0;
  std::size_t ports_ = 0;
  int local_ = 0;
  int local_port_ = 1;
  int sm_node_ = -1;
  std::vector<std::vector<std::uint8_t>> sm_routes_;  // node -> a directed route from the SM

  TimePoint now_{};
  TimePoint wire_free_{};  // when the local HCA can send the next MAD
  std::uint64_t seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Packet> packets_;
  std::vector<std::size_t> free_packets_;
  std::deque<transport::MadBytes> inbox_;
  std::mt19937_64 rng_;

  std::map<std::uint64_t, SmRequest> sm_requests_;
  std::deque<std::uint64_t> sm_queue_;
  int sm_in_flight_ = 0;
  std::uint64_t sm_next_id_ = 1;
  bool sm_sweeping_ = false;
  bool sm_sweep_heavy_ = false;
  TimePoint sm_sweep_start_{};
  std::uint64_t sm_sweep_left_ = 0;
  bool sm_heavy_pending_ = false;
  SmStats sm_stats_;
  ExporterLoad load_;
};

}  // namespace ibfabric::model
