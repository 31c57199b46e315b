// Socket addresses as the trace shows them: "10.0.0.7:29500", "[2001:db8::1]:443",
// "unix:/run/x.sock", and where they are (loopback, cluster-local, public), so the analyzer can
// tell "the job downloaded 2 GB from the internet during the gap" from rank-to-rank traffic.
#pragma once

#include <sys/socket.h>

#include <cstddef>

#include "interpose/hooks/io_fd_table.h"

namespace idlescope::io {

// Writes the address as text into buf (NUL-terminated, truncated to size); returns its length,
// 0 for an address family we do not describe.
size_t FormatSockaddr(const sockaddr* addr, socklen_t len, char* buf, size_t size);

// Loopback: 127/8, ::1, v4-mapped loopback, AF_UNIX. Private (cluster-local): RFC 1918
// 10/8, 172.16/12, 192.168/16, CGNAT 100.64/10, link-local 169.254/16, fc00::/7, fe80::/10.
// Public: any other IPv4/IPv6 address.
NetScope ScopeOfSockaddr(const sockaddr* addr, socklen_t len);

}  // namespace idlescope::io
