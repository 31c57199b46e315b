#include "interpose/hooks/net_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace idlescope::io {
namespace {

NetScope ScopeOfIpv4(uint32_t host_order) {
  uint8_t a = host_order >> 24, b = (host_order >> 16) & 0xff;
  if (a == 127) return kNetLoopback;
  if (a == 10) return kNetPrivate;
  if (a == 172 && (b & 0xf0) == 16) return kNetPrivate;
  if (a == 192 && b == 168) return kNetPrivate;
  if (a == 100 && (b & 0xc0) == 64) return kNetPrivate;
  if (a == 169 && b == 254) return kNetPrivate;
  if (a == 0) return kNetLoopback;  // 0.0.0.0 connects to the local host
  return kNetPublic;
}

}  // namespace

size_t FormatSockaddr(const sockaddr* addr, socklen_t len, char* buf, size_t size) {
  if (addr == nullptr || size == 0 || len < sizeof(sa_family_t)) return 0;
  char host[INET6_ADDRSTRLEN] = {};
  int n = 0;
  switch (addr->sa_family) {
    case AF_INET: {
      if (len < sizeof(sockaddr_in)) return 0;
      const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
      n = snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
      break;
    }
    case AF_INET6: {
      if (len < sizeof(sockaddr_in6)) return 0;
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
      n = snprintf(buf, size, "[%s]:%u", host, ntohs(in6->sin6_port));
      break;
    }
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(addr);
      size_t path_len =
          len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
      path_len = strnlen(un->sun_path, std::min(path_len, sizeof(un->sun_path)));
      if (path_len == 0 && len > offsetof(sockaddr_un, sun_path) + 1 && un->sun_path[0] == '\0') {
        // Abstract namespace: leading NUL, name is the remaining bytes (not NUL-terminated).
        size_t abstract_len =
            std::min<size_t>(len - offsetof(sockaddr_un, sun_path) - 1, sizeof(un->sun_path) - 1);
        n = snprintf(buf, size, "unix:@%.*s", static_cast<int>(abstract_len), un->sun_path + 1);
      } else {
        n = snprintf(buf, size, "unix:%.*s", static_cast<int>(path_len), un->sun_path);
      }
      break;
    }
    default:
      return 0;
  }
  if (n < 0) return 0;
  return std::min<size_t>(static_cast<size_t>(n), size - 1);
}

NetScope ScopeOfSockaddr(const sockaddr* addr, socklen_t len) {
  if (addr == nullptr || len < sizeof(sa_family_t)) return kNetUnspecified;
  switch (addr->sa_family) {
    case AF_UNIX:
      return kNetLoopback;
    case AF_INET: {
      if (len < sizeof(sockaddr_in)) return kNetUnspecified;
      return ScopeOfIpv4(ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr));
    }
    case AF_INET6: {
      if (len < sizeof(sockaddr_in6)) return kNetUnspecified;
      const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr;
      if (IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_UNSPECIFIED(&a)) return kNetLoopback;
      if (IN6_IS_ADDR_V4MAPPED(&a)) {
        uint32_t v4;
        memcpy(&v4, &a.s6_addr[12], 4);
        return ScopeOfIpv4(ntohl(v4));
      }
      if ((a.s6_addr[0] & 0xfe) == 0xfc) return kNetPrivate;                          // fc00::/7
      if (a.s6_addr[0] == 0xfe && (a.s6_addr[1] & 0xc0) == 0x80) return kNetPrivate;  // fe80::/10
      return kNetPublic;
    }
    default:
      return kNetUnspecified;
  }
}

}  // namespace idlescope::io
