// The socket addresses of a process, read from the start of its trace file before the analysis,
// so that the other end of a socket is found whatever part of the job is analyzed: one pass or
// shards, in which another rank's file is not read (analysis/identities.h, SocketPeers;
// docs/attribution.md, "Who is at the other end"). A job's sockets between its processes (a
// rank's Gloo connections, a launcher's store, workers' resource sharers) are made at start; a
// socket first used later is found only by its own family's records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace idlescope {

// How much of each file is read for its sockets, at most (as much as the clock alignment reads).
inline constexpr uint64_t kSocketScanBytes = 8ull << 20;

// The local addresses of the file's NET_SOCKET events within its first kSocketScanBytes, in
// SocketAddressKey form (model/socket_address.h) with the file's host, each once, in the order
// they come. Empty for a file that cannot be read.
std::vector<std::string> ReadSocketAddressKeys(const std::string& path);

}  // namespace idlescope
