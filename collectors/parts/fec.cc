#include "collectors/parts/fec.h"

namespace ibfabric::collectors {

const char* ToString(FecSource s) {
  switch (s) {
    case FecSource::kPmaExtendedSpeeds: return "pma_extended_speeds";
    case FecSource::kPpcnt: return "ppcnt";
    case FecSource::kNone: break;
  }
  return "none";
}

}  // namespace ibfabric::collectors
