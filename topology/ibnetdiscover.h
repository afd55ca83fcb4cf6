#pragma once
// ibnetdiscover's topology output (infiniband-diags ibnetdiscover(8)), read
// as operators save and publish it, and the Fabric it describes: what the
// offline analysis (`ibfabric_exporter --analyze=FILE`) and a cabling plan
// in that format (plan.h) are read from.
//
// The grammar, per node: `key=value` lines (vendid, devid, sysimgguid,
// switchguid, caguid, rtguid), then a header
//   Switch|Ca|Hca|Rt <ports> "<id>" [# "<description>" [base|enhanced] port 0 lid N lmc M]
// and one line per cabled port:
//   [<port>](<CA port GUID>)? "<peer id>"[<peer port>](<peer CA port GUID>)? [# ... <rate>]
// Ids are "S-", "H-" or "R-" and the node GUID in hex (ibsim's net files use
// names instead). A switch port line's comment is the peer's description,
// "lid N" and the rate (4xHDR); a CA port line's starts with its own
// "lid N lmc M". ibdiagnet's .ibnetdiscover labels switch ports:
// `[1](1/1/1)`. `ibnetdiscover -g` groups nodes under "Chassis N (guid G)"
// and "Non-Chassis Nodes" headers.
//
// What saved files hold besides (all seen in published captures): a
// terminal log's banner and prompt, an error line of ibnetdiscover's own
// ("src/query_smp.c:195; umad ... bad status 110"), carriage returns, tabs
// lost (`Switch41 "S-..."# "..."`), LID 65535 (unassigned: the SM had not
// given one). Such lines are skipped and listed with the reason; a LID of
// 65535 is no LID.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/fabric.h"

namespace ibfabric::topology {

struct NetPort {
  int port = 0;
  std::string label;                  // ibdiagnet's port label ("1/1/1"); empty in ibnetdiscover's
  std::optional<std::uint64_t> guid;  // a CA port's GUID, where printed
  std::string peer_id;                // as quoted
  int peer_port = 0;
  std::optional<std::uint64_t> peer_guid;  // the peer CA port's GUID, where printed
  std::string peer_description;            // from the comment; empty when none
  std::uint16_t lid = 0;                   // this CA port's LID ("# lid N lmc M ..."); 0: none
  std::uint16_t peer_lid = 0;              // the peer's LID as printed; 0: none
  std::string rate;                        // "4xQDR", "4xFDR10"; empty when not printed
  int line = 0;
};

struct NetNode {
  NodeKind kind = NodeKind::kUnknown;
  int ports = 0;                        // the header's port count
  std::string id;                       // as quoted in the header
  std::optional<std::uint64_t> guid;    // from the id, else the switchguid=/caguid=/rtguid= line
  std::string description;              // the header comment's quoted text; empty when none
  std::uint16_t lid = 0;                // a switch's port 0 LID; 0: none
  std::uint32_t vendor_id = 0;          // vendid=
  std::uint16_t device_id = 0;          // devid=
  std::uint64_t system_image_guid = 0;  // sysimgguid= (the chassis of a director's ASICs)
  int line = 0;
  std::vector<NetPort> links;  // its port lines, in file order
};

struct NetFile {
  std::vector<NetNode> nodes;
  // "line N: why: 'text'" for each line passed over, in file order.
  std::vector<std::string> skipped;
};

// "S-0008f10400410015" (S-, H- or R- and 16 hex digits) -> the GUID; a
// name (ibsim's net files) -> nullopt.
std::optional<std::uint64_t> GuidOfNetId(std::string_view id);

// Pure. False with "line N: reason" for what no reading can make sense of:
// a port line before any node header, a port number outside 0..254 (IBTA
// NodeInfo.NumPorts is 8 bits, 255 reserved), or no node header at all.
bool ParseNetFile(std::string_view text, NetFile* out, std::string* error);

// The fabric the file describes, as a walk would have found it: every
// listed port up and Active at its printed rate (enabled and supported
// equal to active: the file does not say more, so nothing is judged below
// what its ends allow), a cable wherever both ends are listed or one end
// names a node the file has. Nodes without a GUID (ibsim's net files) get
// 0xfe00000000000000 plus their position. False with "line N: reason"
// where the file contradicts itself: a port cabled to two different peers,
// two headers for one GUID. `notes` gets one line per cable the file
// names only half of ("line N: ... names a node the file does not list").
bool FabricFromNetFile(const NetFile& file, Fabric* out, std::vector<std::string>* notes, std::string* error);

// Reads, parses and builds; false with "FILE:N: reason" or
// "FILE: cannot read: ...". `notes` gets the skipped lines and the notes.
bool LoadNetFile(const std::string& path, Fabric* out, std::vector<std::string>* notes, std::string* error);

}  // namespace ibfabric::topology
