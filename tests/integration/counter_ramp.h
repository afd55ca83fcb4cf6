#pragma once
// A counter of one simulated port that rises with the clock, for tests that
// need a rate (errors, waits) rather than a count.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {

// Raises `field` of the port ibsim's console spells `port` ("node"[n]) by
// `step` for every 100 ms since the ramp began, until stopped; past
// `wrap_at` it starts again from `step` (as a counter cleared by another
// tool would), so that a ramp never pins ibsim's counter at its limit. The
// value follows the clock, not the commands that got through, and every
// ramp of the process is set in one console transaction a tick per fabric
// (Driver): on a loaded machine a console command can take longer than
// 100 ms, and seven ramps each waiting for its own prompt were set a second
// apart, their rates over a 2 s window off by half. Once Stop returns,
// nothing of the ramp reaches ibsim. The fabric must outlive the ramp.
class CounterRamp {
 public:
  CounterRamp(SimFabric& sim, const std::string& port, const std::string& field, unsigned long long step,
              unsigned long long wrap_at = ~0ULL)
      : fabric_(&sim),
        prefix_("PerformanceSet " + port + " " + field + "="),
        step_(std::max(1ULL, step)),
        steps_to_wrap_(std::max(1ULL, wrap_at / step_)),
        start_(std::chrono::steady_clock::now()) {
    Ramps().Add(this);
  }
  ~CounterRamp() { Stop(); }
  CounterRamp(const CounterRamp&) = delete;
  CounterRamp& operator=(const CounterRamp&) = delete;
  void Stop() { Ramps().Remove(this); }

 private:
  // The command that sets the ramp's value for `now`.
  std::string Command(std::chrono::steady_clock::time_point now) const {
    const auto n = static_cast<unsigned long long>((now - start_) / std::chrono::milliseconds(100)) + 1;
    return prefix_ + std::to_string(((n - 1) % steps_to_wrap_ + 1) * step_);
  }
  // Sets every live ramp every 100 ms, one console write a fabric. Its
  // thread starts with the first ramp and ends with the process.
  class Driver {
   public:
    ~Driver() {
      stop_ = true;
      if (thread_.joinable()) thread_.join();
    }
    void Add(CounterRamp* r) {
      std::lock_guard<std::mutex> lock(tick_);
      ramps_.insert(r);
      if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    }
    // Waits out a tick in flight, so none of `r`'s lands after.
    void Remove(CounterRamp* r) {
      std::lock_guard<std::mutex> lock(tick_);
      ramps_.erase(r);
    }

   private:
    void Run() {
      for (auto next = std::chrono::steady_clock::now(); !stop_; std::this_thread::sleep_until(next)) {
        next += std::chrono::milliseconds(100);
        std::lock_guard<std::mutex> lock(tick_);
        std::map<SimFabric*, std::string> commands;
        const auto now = std::chrono::steady_clock::now();
        for (const CounterRamp* r : ramps_) {
          std::string& c = commands[r->fabric_];
          c += (c.empty() ? "" : "\n") + r->Command(now);
        }
        for (const auto& [sim, c] : commands) sim->Console(c);
        // Late (a slow console): the next tick after a breath, not a burst to catch up.
        next = std::max(next, std::chrono::steady_clock::now() + std::chrono::milliseconds(10));
      }
    }
    std::mutex tick_;
    std::set<const CounterRamp*> ramps_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
  };
  static Driver& Ramps() {
    static Driver driver;
    return driver;
  }

  SimFabric* fabric_;
  std::string prefix_;
  unsigned long long step_, steps_to_wrap_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ibfabric::testbed
