// How the two ends of a socket are matched across the job's processes (analysis/identities.h,
// SocketPeers): each end records its own address and its peer's (trace.proto, NET_SOCKET), and an
// address is looked up in this canonical form.
#pragma once

#include <string>
#include <string_view>

namespace idlescope {

// `address` as the trace writes it ("10.0.0.7:29500", "[2001:db8::1]:443", "unix:/tmp/x.sock"),
// of a socket on host `host` (ProcessInfo.host), in the form both ends agree on: IPv4-mapped IPv6
// as IPv4 ("[::ffff:10.0.0.7]:29500", a dual-stack listener's accepted socket, is
// "10.0.0.7:29500"), and the host in front of an address that names a socket on one host only
// (loopback, unix sockets, 0.0.0.0): two hosts' 127.0.0.1:29500 are different sockets.
inline std::string SocketAddressKey(std::string_view host, std::string_view address) {
  std::string a(address);
  constexpr std::string_view kMapped = "[::ffff:";
  if (a.starts_with(kMapped)) {
    size_t close = a.find(']');
    if (close != std::string::npos) {
      a = a.substr(kMapped.size(), close - kMapped.size()) + a.substr(close + 1);
    }
  }
  const bool one_host = a.starts_with("unix:") || a.starts_with("127.") || a.starts_with("[::1]") ||
                        a.starts_with("0.0.0.0:") || a.starts_with("[::]:");
  if (!one_host) return a;
  std::string key(host);
  key += '\0';
  key += a;
  return key;
}

}  // namespace idlescope
