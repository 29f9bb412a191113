// Command-line parsing shared by every patchfuse tool, so they agree on DESIGN.md §4's exit
// codes: --help and --version print and exit 0; any other parse error is one line and exit 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

namespace patchfuse {

// Returns nullopt when the tool should go on, else the exit code to return from main().
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* tool) {
  app.set_version_flag("--version", std::string(tool) + " " + PATCHFUSE_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: usage error: %s (see --help)\n", tool, e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace patchfuse
