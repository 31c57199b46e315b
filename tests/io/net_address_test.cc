#include "interpose/hooks/net_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace idlescope::io {
namespace {

sockaddr_in V4(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

sockaddr_in6 V6(const char* ip, uint16_t port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  return a;
}

template <typename T>
std::string Text(const T& addr, socklen_t len = sizeof(T)) {
  char buf[128];
  size_t n = FormatSockaddr(reinterpret_cast<const sockaddr*>(&addr), len, buf, sizeof(buf));
  return std::string(buf, n);
}

template <typename T>
NetScope Scope(const T& addr) {
  return ScopeOfSockaddr(reinterpret_cast<const sockaddr*>(&addr), sizeof(T));
}

TEST(NetAddress, FormatsIpv4AndIpv6) {
  EXPECT_EQ(Text(V4("10.1.2.3", 29500)), "10.1.2.3:29500");
  EXPECT_EQ(Text(V6("2001:db8::1", 443)), "[2001:db8::1]:443");
}

TEST(NetAddress, FormatsUnixPathsAndAbstractNames) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  strcpy(un.sun_path, "/run/x.sock");
  EXPECT_EQ(Text(un, offsetof(sockaddr_un, sun_path) + strlen(un.sun_path) + 1),
            "unix:/run/x.sock");
  sockaddr_un abs{};
  abs.sun_family = AF_UNIX;
  memcpy(abs.sun_path, "\0torch-123", 10);
  EXPECT_EQ(Text(abs, offsetof(sockaddr_un, sun_path) + 10), "unix:@torch-123");
}

TEST(NetAddress, TruncatesAndRejectsShortOrUnknown) {
  char buf[6];
  auto a = V4("192.168.100.200", 1);
  size_t n = FormatSockaddr(reinterpret_cast<const sockaddr*>(&a), sizeof(a), buf, sizeof(buf));
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(std::string(buf), "192.1");
  EXPECT_EQ(FormatSockaddr(reinterpret_cast<const sockaddr*>(&a), 4, buf, sizeof(buf)), 0u);
  sockaddr other{};
  other.sa_family = AF_PACKET;
  EXPECT_EQ(Text(other), "");
  EXPECT_EQ(ScopeOfSockaddr(&other, sizeof(other)), kNetUnspecified);
  EXPECT_EQ(ScopeOfSockaddr(nullptr, 0), kNetUnspecified);
}

TEST(NetAddress, Scopes) {
  EXPECT_EQ(Scope(V4("127.0.0.1", 1)), kNetLoopback);
  EXPECT_EQ(Scope(V4("127.8.9.10", 1)), kNetLoopback);
  EXPECT_EQ(Scope(V4("10.0.0.7", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V4("172.16.0.1", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V4("172.31.255.1", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V4("172.32.0.1", 1)), kNetPublic);
  EXPECT_EQ(Scope(V4("192.168.1.1", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V4("100.64.0.1", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V4("169.254.169.254", 80)), kNetPrivate);
  EXPECT_EQ(Scope(V4("8.8.8.8", 53)), kNetPublic);
  EXPECT_EQ(Scope(V4("52.216.0.1", 443)), kNetPublic);
  EXPECT_EQ(Scope(V6("::1", 1)), kNetLoopback);
  EXPECT_EQ(Scope(V6("fd00::5", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V6("fe80::1", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V6("::ffff:10.0.0.1", 1)), kNetPrivate);
  EXPECT_EQ(Scope(V6("::ffff:127.0.0.1", 1)), kNetLoopback);
  EXPECT_EQ(Scope(V6("2606:4700::1111", 443)), kNetPublic);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EXPECT_EQ(Scope(un), kNetLoopback);
}

}  // namespace
}  // namespace idlescope::io
