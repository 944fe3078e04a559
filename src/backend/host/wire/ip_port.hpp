// The software NIC's port on an IP network: where its RoCEv2 datagrams leave and arrive. A raw
// IPv4 socket sends the datagrams the NIC built whole (IP_HDRINCL, raw(7)), since the ICRC covers
// the IPv4 header's identification and flags (IBTA A17.8); a raw UDP socket bound to the port's
// address receives them with their IPv4 header; a UDP socket bound to port 4791 that drops
// everything (a socket filter) keeps the kernel from answering each datagram with an ICMP
// port-unreachable. Needs CAP_NET_RAW.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/host/wire/roce.hpp"
#include "mori/status.hpp"

namespace mori::wire {

// An interface's IPv4 addresses (network byte order, in ascending numeric order) and MTU; a clear
// error naming the interface when it does not exist or has no IPv4 address.
Status interface_ipv4(const std::string& ifname, std::vector<uint32_t>* addresses, uint32_t* mtu);

class IpPort {
 public:
  // Opens the sockets for `address` (network byte order, one of the host's addresses).
  static Status open(uint32_t address, std::unique_ptr<IpPort>* out);
  ~IpPort();
  IpPort(const IpPort&) = delete;
  IpPort& operator=(const IpPort&) = delete;

  // Sends one datagram (IPv4 header first). False when the kernel refused it (EMSGSIZE over the
  // interface's MTU, ENETUNREACH, ...), with errno's text in *why: the packet is lost.
  bool send(std::span<const uint8_t> datagram, std::string* why);
  // Receives one datagram addressed to this port's address, without blocking: its bytes (IPv4
  // header first), or 0 when none is waiting. Datagrams that are not UDP to port 4791 are skipped.
  size_t receive(std::span<uint8_t> buffer);
  // The receive socket, for poll(2) (POLLIN).
  int fd() const { return receive_fd_; }
  uint32_t address() const { return address_; }

 private:
  IpPort() = default;
  int send_fd_ = -1, receive_fd_ = -1, sink_fd_ = -1;
  uint32_t address_ = 0;
};

}  // namespace mori::wire
