// Wireshark's dissectors as an independent reader of our packets: runs tshark over a pcap file
// and returns one row of fields per packet. The InfiniBand dissector is bound to UDP 4791
// explicitly (-d), so that the decoding does not depend on the RoCEv2 heuristics' preferences.
//
// Wireshark 4.0's InfiniBand dissector shows the ICRC (field infiniband.invariant.crc) but does
// not verify it: it has no checksum-status field and no expert info of its own (tshark -G fields,
// tshark -G expert). An ICRC check must therefore be ours (roce.cpp's icrc() against zlib).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace mori::test {

// Where tshark is, or "" when it is not installed (scripts/install-deps.sh installs it).
inline std::string tshark_path() {
  for (const char* p : {"/usr/bin/tshark", "/usr/local/bin/tshark"}) {
    if (std::FILE* f = std::fopen(p, "rb")) {
      std::fclose(f);
      return p;
    }
  }
  return "";
}

// Splits s at `sep` (keeping empty pieces).
inline std::vector<std::string> split_tshark_output(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// Runs `tshark -r pcap -d udp.port==4791,infiniband -T fields -e f1 -e f2 ...` and returns one
// row per packet, one string per field (several occurrences of a field joined by ','; absent:
// ""). The fields are Wireshark's names (tshark -G fields), e.g. infiniband.bth.opcode,
// infiniband.bth.psn, _ws.expert.message, _ws.malformed. A capture from a bridge holds other
// traffic too (ARP, IPv6 neighbour discovery): `display_filter` (tshark -Y, e.g. "infiniband")
// keeps the rows it matches. False, with a one-line reason, when tshark is missing, fails, or
// prints a row of the wrong width. tshark's stderr (its warning about running as root) is
// discarded.
inline bool run_tshark(const std::string& pcap, const std::vector<std::string>& fields,
                       std::vector<std::vector<std::string>>* rows, std::string* why,
                       const std::string& display_filter = "") {
  const std::string tshark = tshark_path();
  if (tshark.empty()) {
    *why = "tshark is not installed (scripts/install-deps.sh installs it)";
    return false;
  }
  // The path and the filter go to the shell in single quotes: they must not hold one.
  if ((pcap + display_filter).find('\'') != std::string::npos) {
    *why = "a single quote in the pcap path or the display filter: " + pcap;
    return false;
  }
  std::string command = tshark + " -n -r '" + pcap + "' -d udp.port==4791,infiniband -T fields" +
                        " -E separator=/t -E occurrence=a -E aggregator=,";
  if (!display_filter.empty()) command += " -Y '" + display_filter + "'";
  for (const auto& f : fields) command += " -e " + f;
  command += " 2>/dev/null";
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    *why = "cannot run: " + command;
    return false;
  }
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = "tshark failed (status " + std::to_string(status) + "): " + command;
    return false;
  }
  rows->clear();
  // One line per packet, each ending in '\n'; a line may be empty (one field, absent).
  std::vector<std::string> lines = split_tshark_output(out, '\n');
  if (lines.back().empty()) lines.pop_back();  // what follows the last '\n'
  for (const auto& line : lines) {
    rows->push_back(split_tshark_output(line, '\t'));
    if (rows->back().size() != fields.size()) {
      *why = "tshark printed " + std::to_string(rows->back().size()) + " fields, not " +
             std::to_string(fields.size()) + ": " + line;
      return false;
    }
  }
  return true;
}

}  // namespace mori::test
