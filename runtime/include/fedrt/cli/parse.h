#pragma once
// The command line of every fedrt program, parsed the same way (docs/cli.md,
// "Exit codes"): --help and --version end the program with 0; a usage error
// (an unknown or mistyped flag, a missing value, a value out of range) is
// printed as "PROG: error: ..." with "did you mean --FLAG?" when a known flag
// is close to what was typed, and ends it with 2. Every program ends with 0
// when done, 1 when the work or run failed, 2 for a usage error. Host code.

#include <string>

#include <CLI/CLI.hpp>

namespace fedrt::cli {

constexpr int kRunFailed = 1;   // every fedrt program's exit code when its work or run failed
constexpr int kUsageError = 2;  // ... and for what it was given: flags, experiment file, files they name

// Parses argv into `app`. False: the program is to end now with *rc.
bool Parse(CLI::App& app, int argc, char** argv, int* rc);

// The flag of `app` (or of its subcommands) nearest to `typed` within a few
// edits, "" when none is close ("--rouns" -> "--rounds").
std::string Suggest(const CLI::App& app, const std::string& typed);

// "<what>[; did you mean --X?]" for a parse error of `app`, the suggestion
// taken from the arguments in argv that no flag took.
std::string UsageMessage(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv);

}  // namespace fedrt::cli
