//===- AutocastReport.cpp - text, JSON, DOT and SVG autocast reports ------===//
#include "mp/Autocast/AutocastReport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

using namespace llvm;

namespace mp::autocast {

int64_t FunctionReport::castBytes() const {
  int64_t total = 0;
  for (const CastRecord &c : casts)
    total += std::max<int64_t>(c.bytes, 0);
  return total;
}

namespace {
std::string percent(int64_t part, int64_t whole) {
  if (whole == 0)
    return "0.0%";
  return formatv("{0:F1}%", 100.0 * static_cast<double>(part) /
                                static_cast<double>(whole))
      .str();
}

StringRef kindName(PictureNode::Kind k) {
  switch (k) {
  case PictureNode::Kind::Low:
    return "low";
  case PictureNode::Kind::FP32:
    return "fp32";
  case PictureNode::Kind::Cast:
    return "cast";
  case PictureNode::Kind::Other:
    return "other";
  case PictureNode::Kind::Input:
    return "input";
  case PictureNode::Kind::Output:
    return "output";
  }
  return "other";
}
} // namespace

void AutocastReport::writeText(raw_ostream &os) const {
  os << "mp-autocast report: target " << stringify(target) << ", level "
     << stringify(level) << "\n";
  for (const std::string &note : validationNotes)
    os << "validation: " << note << "\n";
  for (const FunctionReport &f : functions) {
    os << "\nfunction @" << f.function << "\n";
    os << "  converted " << f.convertedOps << "/" << f.consideredOps
       << " ops to " << stringify(target) << " ("
       << percent(f.convertedOps, f.consideredOps) << ") using "
       << f.casts.size() << " casts (" << f.castBytes()
       << " bytes written per run); precision boundaries: "
       << f.precisionBoundaries << " (" << f.castsReused
       << " served by casts already in the model)\n";
    os << "  weights: " << f.weightBytesBefore << " -> " << f.weightBytesAfter
       << " bytes (saved " << (f.weightBytesBefore - f.weightBytesAfter)
       << ")\n";
    os << "  activations (dynamic dims counted as 1): " << f.activationBytesBefore
       << " -> " << f.activationBytesAfter << " bytes (saved "
       << (f.activationBytesBefore - f.activationBytesAfter) << ")\n";
    if (!f.clamped.empty()) {
      os << "  constants converted with values out of range:\n";
      for (const ClampRecord &c : f.clamped)
        os << "    '" << c.constant << "' (read by '" << c.consumer
           << "'): " << c.clamped << " of " << c.elements
           << " clamped, " << c.flushedToZero << " flushed to zero\n";
    }
    os << "  casts:\n";
    for (const CastRecord &c : f.casts)
      os << "    '" << c.value << "' " << c.from << " -> " << c.to << " ("
         << c.bytes << " bytes)\n";
    os << "  nodes:\n";
    for (const NodeDecision &n : f.nodes)
      os << "    " << (n.lowPrecision ? stringify(target) : StringRef("f32"))
         << "  " << n.opType << " '" << n.name << "'  [" << stringify(n.policyClass)
         << "] " << n.rule << "\n";
  }
}

void AutocastReport::writeJSON(raw_ostream &os) const {
  json::Array functionsJSON;
  for (const FunctionReport &f : functions) {
    json::Array nodes, casts, clamped;
    for (const NodeDecision &n : f.nodes)
      nodes.push_back(json::Object{
          {"name", n.name},
          {"op_type", n.opType},
          {"precision", n.lowPrecision ? stringify(target).str() : "f32"},
          {"class", stringify(n.policyClass)},
          {"rule", n.rule}});
    for (const CastRecord &c : f.casts)
      casts.push_back(json::Object{
          {"value", c.value}, {"from", c.from}, {"to", c.to}, {"bytes", c.bytes}});
    for (const ClampRecord &c : f.clamped)
      clamped.push_back(json::Object{{"constant", c.constant},
                                     {"consumer", c.consumer},
                                     {"elements", c.elements},
                                     {"clamped", c.clamped},
                                     {"flushed_to_zero", c.flushedToZero}});
    functionsJSON.push_back(json::Object{
        {"function", f.function},
        {"ops", json::Object{{"considered", f.consideredOps},
                             {"converted", f.convertedOps}}},
        {"casts", json::Object{{"inserted", static_cast<int64_t>(f.casts.size())},
                               {"bytes", f.castBytes()},
                               {"reused", f.castsReused},
                               {"list", std::move(casts)}}},
        {"precision_boundaries", f.precisionBoundaries},
        {"weight_bytes", json::Object{{"before", f.weightBytesBefore},
                                      {"after", f.weightBytesAfter},
                                      {"saved", f.weightBytesBefore -
                                                    f.weightBytesAfter}}},
        {"activation_bytes", json::Object{{"before", f.activationBytesBefore},
                                          {"after", f.activationBytesAfter},
                                          {"saved", f.activationBytesBefore -
                                                        f.activationBytesAfter}}},
        {"clamped_constants", std::move(clamped)},
        {"nodes", std::move(nodes)}});
  }
  json::Array notes;
  for (const std::string &note : validationNotes)
    notes.push_back(note);
  json::Value root = json::Object{{"target", stringify(target)},
                                  {"level", stringify(level)},
                                  {"validation", std::move(notes)},
                                  {"functions", std::move(functionsJSON)}};
  os << formatv("{0:2}", root) << "\n";
}

void AutocastReport::writeDOT(raw_ostream &os) const {
  auto escape = [](StringRef s) {
    std::string out;
    for (char c : s) {
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      if (c == '"' || c == '\\')
        out += '\\';
      out += c;
    }
    return out;
  };
  os << "// mp-autocast: the graph coloured by precision (target "
     << stringify(target) << ")\n";
  os << "digraph autocast {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,"
        "filled\", fontname=\"Helvetica\", fontsize=10];\n";
  os << "  subgraph cluster_legend { label=\"legend\"; fontname=\"Helvetica\";\n"
     << "    legend_low [label=\"" << stringify(target)
     << "\", fillcolor=\"#9fdf9f\"];\n"
     << "    legend_fp32 [label=\"f32\", fillcolor=\"#f4a6a6\"];\n"
     << "    legend_cast [label=\"cast\", shape=ellipse, fillcolor=\"#ffe08a\"];\n"
     << "    legend_other [label=\"no float data / untouched\", "
        "fillcolor=\"#e0e0e0\"];\n  }\n";
  for (auto [index, f] : llvm::enumerate(functions)) {
    os << "  subgraph cluster_f" << index << " { label=\"@"
       << escape(f.function) << "\"; fontname=\"Helvetica\";\n";
    for (auto [i, n] : llvm::enumerate(f.pictureNodes)) {
      const char *color = "#e0e0e0";
      const char *shape = "box";
      switch (n.kind) {
      case PictureNode::Kind::Low:
        color = "#9fdf9f";
        break;
      case PictureNode::Kind::FP32:
        color = "#f4a6a6";
        break;
      case PictureNode::Kind::Cast:
        color = "#ffe08a";
        shape = "ellipse";
        break;
      case PictureNode::Kind::Input:
      case PictureNode::Kind::Output:
        color = "#bcd4f6";
        shape = "invhouse";
        break;
      case PictureNode::Kind::Other:
        break;
      }
      os << "    f" << index << "n" << i << " [label=\"" << escape(n.label)
         << "\", fillcolor=\"" << color << "\", shape=" << shape
         << ", class=\"" << kindName(n.kind) << "\"];\n";
    }
    for (auto [from, to] : f.pictureEdges)
      os << "    f" << index << "n" << from << " -> f" << index << "n" << to
         << ";\n";
    os << "  }\n";
  }
  os << "}\n";
}

namespace {
/// Writes `path` through a temporary file in its directory and renames it
/// into place, so a failure leaves no partial file.
Error writeAtomically(StringRef path,
                      function_ref<Error(StringRef tempPath)> write) {
  SmallString<256> temp;
  SmallString<256> model(path);
  model += ".tmp%%%%%%";
  int fd;
  if (std::error_code ec = sys::fs::createUniqueFile(model, fd, temp))
    return createStringError(ec, "cannot write report '" + path +
                                     "': " + ec.message());
  sys::Process::SafelyCloseFileDescriptor(fd);
  if (Error e = write(temp)) {
    sys::fs::remove(temp);
    return e;
  }
  if (std::error_code ec = sys::fs::rename(temp, path)) {
    sys::fs::remove(temp);
    return createStringError(ec, "cannot write report '" + path +
                                     "': " + ec.message());
  }
  return Error::success();
}

Error writeStream(StringRef path, StringRef finalPath,
                  function_ref<void(raw_ostream &)> print) {
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    return createStringError(ec, "cannot write report '" + finalPath +
                                     "': " + ec.message());
  print(os);
  os.close();
  if (os.has_error())
    return createStringError(os.error(), "cannot write report '" + finalPath +
                                             "': " + os.error().message());
  return Error::success();
}
} // namespace

Error AutocastReport::writeFile(StringRef path) const {
  StringRef ext = sys::path::extension(path);
  if (ext == ".svg") {
    ErrorOr<std::string> dot = sys::findProgramByName("dot");
    if (!dot)
      return createStringError(inconvertibleErrorCode(),
                               "cannot write '" + path +
                                   "': SVG pictures are drawn by Graphviz's "
                                   "`dot`, which is not on PATH (apt install "
                                   "graphviz), or ask for a .dot file");
    return writeAtomically(path, [&](StringRef temp) -> Error {
      SmallString<256> dotFile(temp);
      dotFile += ".dot";
      if (Error e = writeStream(dotFile, path,
                                [&](raw_ostream &os) { writeDOT(os); }))
        return e;
      std::string errorMessage;
      StringRef args[] = {*dot, "-Tsvg", dotFile, "-o", temp};
      int rc = sys::ExecuteAndWait(*dot, args, std::nullopt, {}, 0, 0,
                                   &errorMessage);
      sys::fs::remove(dotFile);
      if (rc != 0)
        return createStringError(inconvertibleErrorCode(),
                                 "cannot write '" + path + "': dot failed" +
                                     (errorMessage.empty()
                                          ? " (exit " + std::to_string(rc) + ")"
                                          : ": " + errorMessage));
      return Error::success();
    });
  }
  return writeAtomically(path, [&](StringRef temp) {
    return writeStream(temp, path, [&](raw_ostream &os) {
      if (ext == ".json")
        writeJSON(os);
      else if (ext == ".dot" || ext == ".gv")
        writeDOT(os);
      else
        writeText(os);
    });
  });
}

} // namespace mp::autocast
