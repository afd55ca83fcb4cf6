#pragma once
// The alert thresholds file (--alerts.config), YAML (JSON is YAML too):
//
//   window: 5m            # rates are taken over this span (ms, s, m, h)
//   raise_after: 2        # sweeps in a row with a condition before it raises
//   clear_after: 3        # sweeps in a row without it before it clears
//   keep_cleared: 100     # recently cleared alerts listed by /api/v1/alerts
//   bad_cable:
//     symbol_errors_per_second: {warning: 0.01, critical: 1}
//     link_error_recoveries_per_second: {warning: 0.001, critical: 0.1}
//     rcv_errors_per_second: {warning: 0.01, critical: 1}
//     local_link_integrity_errors_per_second: {warning: 0.001, critical: 0.1}
//     excessive_buffer_overrun_errors_per_second: {warning: 0.001, critical: 0.1}
//     bit_error_rate: {warning: 1e-12, critical: 1e-10, min_bits: 1e12}
//     packet_drop_rate: {warning: 1e-6, critical: 1e-4, min_packets: 1e6}
//     raw_bit_error_ratio: {warning: 5e-6, critical: 1e-5}          # over the FEC window, where
//     effective_bit_error_ratio: {warning: 5e-12, critical: 1e-11}  # no row of ber_levels is for the port
//     ber_levels:       # by speed, FEC mode and ASIC; the first row that fits. Unset: NVIDIA's
//       - {speed: HDR, fec: any, asic: 7nm, raw: {warning: 5e-8, critical: 1e-7},   # (collectors/
//          effective: {warning: 5e-14, critical: 1e-13}}                            # health/ber_levels.h);
//       # fec: any, none, rs, ll_rs, plr; asic: any, 7nm, 16nm, unknown; [] to use the two levels
//       # above everywhere, as setting either of them without ber_levels does
//   cable_degrading:                   # a warning, under bad_cable's raw level
//     raw_bit_error_ratio_factor: 10   # the raw ratio this many times its lowest (null: off)
//     period: 24h                      # of the last period (in 24 parts), 24s to 168h
//     min_raw_bit_error_ratio: 1e-9    # below it, not judged
//   flapping_link:
//     link_downs: {warning: 2, critical: 5}        # within the window
//   congestion:
//     xmit_wait_fraction: {warning: 0.05, critical: 0.25}
//     xmit_wait_tick_multiplier: 8   # Tick + 1 of every device; unset (the default): each device's own
//     xmit_discards_per_second: {warning: 1, critical: 100}
//   degraded_link: {severity: warning}
//   miswiring: {severity: warning}
//
// Every key is optional (the values above are the defaults); a level set
// to null is off. Unknown keys, negative or non-numeric values, a warning
// above its critical level, are errors.

#include <string>

#include "collectors/health/alerts.h"

namespace ibfabric::collectors {

// Pure. False with "line N: reason" naming the key.
bool ParseAlertConfig(const std::string& text, AlertConfig* config, std::string* error);
// False with "FILE:N: reason" or "FILE: cannot read: ...".
bool LoadAlertConfig(const std::string& path, AlertConfig* config, std::string* error);

}  // namespace ibfabric::collectors
