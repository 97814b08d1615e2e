// Command-line parsing with one exit-code convention and flag suggestions
// (fedrt/cli/parse.h).
#include "fedrt/cli/parse.h"

#include "fedrt/core/closest_name.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace fedrt::cli {
namespace {

void Names(const CLI::App& app, std::vector<std::string>& out) {
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) Names(*sub, out);
}

}  // namespace

std::string Suggest(const CLI::App& app, const std::string& typed_in) {
  const std::string typed = typed_in.substr(0, typed_in.find('='));
  if (typed.size() < 3 || typed[0] != '-') return "";
  std::vector<std::string> names;
  Names(app, names);
  return ClosestName(typed, names);
}

std::string UsageMessage(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::string msg = e.what();
  std::vector<std::string> names;
  Names(app, names);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') continue;
    const std::string flag = a.substr(0, a.find('='));
    if (std::find(names.begin(), names.end(), flag) != names.end()) continue;
    const std::string s = Suggest(app, flag);
    if (!s.empty()) return msg + "; did you mean " + s + "?";
  }
  return msg;
}

bool Parse(CLI::App& app, int argc, char** argv, int* rc) {
  try {
    app.parse(argc, argv);
    return true;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      *rc = app.exit(e);
      return false;
    }
    std::string prog = argc > 0 ? std::string(argv[0]) : app.get_name();
    prog = prog.substr(prog.find_last_of('/') + 1);  // npos + 1 = 0: the whole name
    std::fprintf(stderr, "%s: error: %s\nRun with --help for more information.\n", prog.c_str(),
                 UsageMessage(app, e, argc, argv).c_str());
    *rc = kUsageError;
    return false;
  }
}

}  // namespace fedrt::cli
