//===- mp-strip-weights.cpp - saves a plan without its large weights ------===//
//
//   mp-strip-weights model.mpplan --weights=DIR|FILE -o out.mpplan
//                    [--min-bytes=N] [-v]
//
// Writes `out.mpplan`, the plan with every weight of at least N bytes
// (default 65536) that the model's weights reproduce exactly made external
// (format 1.2, docs/plan-format.md): the file keeps their names, dtypes,
// shapes and checksums but not their bytes, which `mp-run --weights=DIR|FILE`
// (fillExternalWeights) puts back from the same weights. A weight that the
// source does not reproduce exactly (padded, folded or cast at compile time
// into other bytes) stays in the plan, so the stripped plan always runs with
// the weights it was compiled with. DIR holds <name>.npy per weight (the
// model's initializers); FILE is a plan that has them.
//
// Exit status 0, or 2 with one line "mp-strip-weights: <file>: error: ...".
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Plan.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

using namespace mp::rt;

namespace {

const char kUsage[] =
    R"(USAGE: mp-strip-weights model.mpplan --weights=DIR|FILE -o out.mpplan
                        [--min-bytes=N] [-v]

Saves the plan without the bytes of its weights of at least N bytes (default
65536) that the given weights reproduce exactly (external weights, plan
format 1.2); mp-run --weights=DIR|FILE fills them again. DIR: <name>.npy per
weight (characters other than letters, digits, '.', '-', '_' in the name
become '_'); FILE: a plan that has the weights. -v lists the weights kept
although the source has them (not reproduced exactly).
)";

int error(const std::string &file, const std::string &message) {
  std::string m = message;
  if (!file.empty() && m.rfind(file + ": ", 0) == 0)
    m = m.substr(file.size() + 2);
  if (file.empty())
    std::fprintf(stderr, "mp-strip-weights: error: %s\n", m.c_str());
  else
    std::fprintf(stderr, "mp-strip-weights: %s: error: %s\n", file.c_str(),
                 m.c_str());
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string planPath, weightsPath, outPath;
  uint64_t minBytes = 65536;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string &key, std::string &out) {
      if (arg.rfind(key + "=", 0) == 0) {
        out = arg.substr(key.size() + 1);
        return true;
      }
      if (arg == key && i + 1 < argc) {
        out = argv[++i];
        return true;
      }
      return false;
    };
    std::string text;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "-v") {
      verbose = true;
    } else if (value("--weights", weightsPath) || value("-o", outPath)) {
    } else if (value("--min-bytes", text)) {
      char *end = nullptr;
      errno = 0;
      unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end || errno || text[0] == '-')
        return error("", "--min-bytes needs a number of bytes, got '" + text +
                             "'");
      minBytes = v;
    } else if (arg.rfind("-", 0) == 0) {
      return error("", "unknown option '" + arg + "' (see --help)");
    } else if (planPath.empty()) {
      planPath = arg;
    } else {
      return error("", "more than one plan given ('" + planPath + "', '" +
                           arg + "')");
    }
  }
  if (planPath.empty() || weightsPath.empty() || outPath.empty())
    return error("", "needs a plan, --weights=DIR|FILE and -o OUT (see --help)");

  Result<Plan> plan = loadPlan(planPath);
  if (!plan)
    return error(planPath, plan.message());
  Result<WeightSource> source = WeightSource::open(weightsPath);
  if (!source)
    return error(weightsPath, source.message());
  Result<ExternalizeReport> report =
      externalizeWeights(*plan, *source, minBytes);
  if (!report)
    return error(weightsPath, report.message());
  if (Status s = savePlan(*plan, outPath); !s)
    return error(outPath, s.message());
  // Kept bytes are the weights' sizes in memory (a splat takes one element
  // in the file).
  std::printf("%s: %zu weights external (%llu bytes), %zu kept (%llu bytes)",
              outPath.c_str(), report->external,
              static_cast<unsigned long long>(report->externalBytes),
              report->kept, static_cast<unsigned long long>(report->keptBytes));
  if (!report->notReproduced.empty())
    std::printf("; %zu of at least %llu bytes kept because the weights do not "
                "reproduce them",
                report->notReproduced.size(),
                static_cast<unsigned long long>(minBytes));
  std::error_code ec;
  uintmax_t fileBytes = std::filesystem::file_size(outPath, ec);
  if (!ec)
    std::printf("; the file has %ju bytes", fileBytes);
  std::printf("\n");
  if (verbose)
    for (const std::string &line : report->notReproduced)
      std::printf("  kept %s\n", line.c_str());
  return 0;
}
