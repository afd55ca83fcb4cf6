#include "collectors/parts/drain.h"

namespace ibfabric::collectors {

const char* ToString(DrainHost::State s) {
  switch (s) {
    case DrainHost::State::kFaulty: return "faulty";
    case DrainHost::State::kHolding: return "holding";
    case DrainHost::State::kResume: return "resume";
  }
  return "unknown";
}

}  // namespace ibfabric::collectors
