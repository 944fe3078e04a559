// The command line of an MPI program (the benches, the soak test): CLI11's parse, then the
// program's own checks, which throw CLI::ValidationError. On a parse error or --help: CLI11's
// message, MPI_Finalize, and the exit code for main to return; otherwise nullopt.
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <optional>

namespace mori::bench {

template <typename Checks>
std::optional<int> parse_mpi_cli(CLI::App& app, int argc, char** argv, Checks&& checks) {
  try {
    app.parse(argc, argv);
    checks();
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    MPI_Finalize();
    return rc;
  }
  return std::nullopt;
}

inline std::optional<int> parse_mpi_cli(CLI::App& app, int argc, char** argv) {
  return parse_mpi_cli(app, argc, argv, [] {});
}

}  // namespace mori::bench
