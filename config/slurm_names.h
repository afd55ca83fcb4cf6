#pragma once
// Slurm's names for the fabric's hosts: what a Slurm NodeName may hold, and
// the map file that names the fabric's hosts as Slurm knows them
// (--slurm.node-name-map: the topology files and the drain list use it).

#include <map>
#include <string>

namespace ibfabric::config {

// `text` as a Slurm name: letters, digits, '.', '-' and '_' kept, anything
// else '_' (Slurm's hostlist parser reads ',', '[' and ' ' as its own; a
// switch's description holds ';', ':' and '/').
std::string SlurmSafe(const std::string& text);

// A CA in no host, as Slurm's files name it: the first word of its
// description (the host name rdma-ndd's "%h %d" starts with), Slurm-safe.
std::string FirstWordName(const std::string& description);

// "FABRIC_HOST SLURM_NODE" per line, '#' comments; false with
// "line N: reason" (a line of one word or three, a Slurm name with other
// characters than SlurmSafe keeps, a host named twice).
bool ParseSlurmNodeNames(const std::string& text, std::map<std::string, std::string>* names, std::string* error);

}  // namespace ibfabric::config
