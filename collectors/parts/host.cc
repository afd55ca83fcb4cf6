#include "collectors/parts/host.h"

#include "collectors/framework/render.h"

namespace ibfabric::collectors {

std::string HostOfDevice(const Snapshot& s, const host::HostDevice& d) {
  const std::uint64_t guid = host::ParseSysfsGuid(d.node_guid);
  std::string host = guid ? HostOf(s, guid) : "";
  return host.empty() ? d.node_desc.substr(0, d.node_desc.find(' ')) : host;
}

}  // namespace ibfabric::collectors
