#pragma once
// Getting the MAD transport back after the local HCA (or the simulator)
// went away. A process cannot always reopen its port in place (umad2sim
// connects to the simulator once per process; a reset HCA may come back as
// a new device), so recovery is: probe from a fresh process whether the
// local port answers again, and when it does, save the counter state and
// re-execute this program with the same arguments, which restores it.

#include <optional>
#include <string>
#include <vector>

#include "exporter/state.h"

namespace ibfabric::exporter {

// Environment variable naming the state file a re-executed exporter loads.
inline constexpr const char* kRestoreStateEnv = "IBFABRIC_RESTORE_STATE";

// Runs `<this program> --check <port_args>` and waits up to `timeout_ms`.
// True when it exited 0; *detail gets its output either way.
bool ProbeLocalPort(const std::vector<std::string>& port_args, int timeout_ms, std::string* detail);

// Writes `state` to a file, sets kRestoreStateEnv and execs /proc/self/exe
// with `argv`. Returns only on failure, with a one-line reason.
std::string ReexecWithState(char** argv, const collectors::PersistedState& state);

// When kRestoreStateEnv is set: loads the file, removes it and the variable.
// nullopt when there is nothing to restore; *error set when the file was bad.
std::optional<collectors::PersistedState> TakeRestoredState(std::string* error);

}  // namespace ibfabric::exporter
