//===- FusedProgram.h - the expression program of a fused elementwise call ===//
//
// culib.fused_elementwise (plan call "kernel.fused_elementwise") runs a
// group of elementwise functions and float casts as one call. Its `program`
// attribute lists the steps, one per fused function, in the order they
// compute:
//
//   sigmoid(x0); mul(x0, t0)
//   div(x0, x1); erf(t0); add(t1, x2); mul(x0, t2); mul(t3, x3)
//   leaky_relu(x0) alpha=0.2
//
// `xK` is the call's input K (broadcast, numpy rules, to y's shape), `tK`
// the result of step K (0-based, an earlier step); the last step's result is
// y. A step is one function of ElementwiseFunctions.def that maps floats to
// floats (isFusableFn), with its inputs as culib.elementwise takes them and
// ONNX's alpha / beta defaults unless given. Every value is f32 inside the
// program: inputs are widened on load, each step computes in f32 as the
// elementwise kernel does, and y is rounded once when stored. Plain C++ (no
// MLIR): the culib verifier, the fusion pass and both runtimes read it here.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_FUSEDPROGRAM_H
#define MP_RUNTIME_FUSEDPROGRAM_H

#include "mp/Runtime/ElementwiseFunctions.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mp::rt {

/// The most steps and inputs a fused program has (the GPU's interpreter keeps
/// every step's value in registers).
constexpr size_t kMaxFusedSteps = 32;
constexpr size_t kMaxFusedInputs = 8;
/// The most inputs of one step (variadic sum / mean / max / min).
constexpr size_t kMaxFusedStepArgs = 4;

/// An argument of a step: input `index` of the call, or the result of step
/// `index`.
struct FusedOperand {
  bool isStep = false;
  uint32_t index = 0;

  bool operator==(const FusedOperand &o) const {
    return isStep == o.isStep && index == o.index;
  }
};

struct FusedStep {
  cpu::ElementwiseFn fn = cpu::ElementwiseFn::Identity;
  std::vector<FusedOperand> args;
  /// Absent: ONNX's default (ElementwiseFunctions.def).
  std::optional<double> alpha, beta;
};

struct FusedProgram {
  std::vector<FusedStep> steps;
};

/// Whether fn can be a step: it maps floats to floats elementwise (no bool
/// or integer results or inputs, no raw copies of other dtypes).
constexpr bool isFusableFn(cpu::ElementwiseFn fn) {
  using cpu::ElementwiseDtypes;
  using cpu::ElementwiseKind;
  const cpu::ElementwiseFnInfo &info = cpu::infoOf(fn);
  if (fn == cpu::ElementwiseFn::Identity)
    return true;
  if (info.dtypes != ElementwiseDtypes::Floats &&
      info.dtypes != ElementwiseDtypes::Numeric)
    return false;
  return info.kind == ElementwiseKind::Unary ||
         info.kind == ElementwiseKind::Binary ||
         info.kind == ElementwiseKind::Clip ||
         info.kind == ElementwiseKind::Variadic;
}

namespace fused_detail {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return s;
}

inline std::optional<uint32_t> parseIndex(std::string_view s) {
  if (s.empty() || s.size() > 6)
    return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

inline std::optional<double> parseNumber(std::string_view s) {
  std::string text(s);
  if (text.empty())
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE)
    return std::nullopt;
  return v;
}

/// The shortest text that reads back as v; for a value that is an f32
/// (the culib attributes'), the shortest that reads back as that f32: the
/// steps compute in f32.
inline std::string formatNumber(double v) {
  char buf[32];
  const bool isF32 = static_cast<double>(static_cast<float>(v)) == v;
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    double back = std::strtod(buf, nullptr);
    if (back == v ||
        (isF32 && static_cast<float>(back) == static_cast<float>(v)))
      break;
  }
  return buf;
}

} // namespace fused_detail

/// The program's text: steps separated by "; ".
inline std::string printFusedProgram(const FusedProgram &program) {
  std::string out;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const FusedStep &step = program.steps[s];
    if (s)
      out += "; ";
    out += cpu::elementwiseFnName(step.fn);
    out += '(';
    for (size_t a = 0; a < step.args.size(); ++a) {
      if (a)
        out += ", ";
      out += step.args[a].isStep ? 't' : 'x';
      out += std::to_string(step.args[a].index);
    }
    out += ')';
    if (step.alpha)
      out += " alpha=" + fused_detail::formatNumber(*step.alpha);
    if (step.beta)
      out += " beta=" + fused_detail::formatNumber(*step.beta);
  }
  return out;
}

/// Checks a program for a call with `numInputs` inputs: fusable functions
/// with their argument counts, arguments that are inputs of the call or
/// earlier steps, every input used, the limits. On error, returns false and
/// says why in `error`.
inline bool checkFusedProgram(const FusedProgram &program, size_t numInputs,
                              std::string &error) {
  if (numInputs == 0 || numInputs > kMaxFusedInputs) {
    error = "takes 1 to " + std::to_string(kMaxFusedInputs) + " inputs, got " +
            std::to_string(numInputs);
    return false;
  }
  if (program.steps.empty() || program.steps.size() > kMaxFusedSteps) {
    error = "has " + std::to_string(program.steps.size()) + " steps (1 to " +
            std::to_string(kMaxFusedSteps) + ")";
    return false;
  }
  std::vector<bool> inputUsed(numInputs, false);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const FusedStep &step = program.steps[s];
    auto fail = [&](const std::string &why) {
      error = "step " + std::to_string(s) + ": " + why;
      return false;
    };
    const std::string name(cpu::elementwiseFnName(step.fn));
    if (!isFusableFn(step.fn))
      return fail("'" + name + "' does not map floats to floats");
    for (const FusedOperand &a : step.args) {
      const std::string arg = (a.isStep ? "t" : "x") + std::to_string(a.index);
      if (a.isStep ? a.index >= s : a.index >= numInputs)
        return fail("'" + arg + "' is not " +
                    (a.isStep ? "an earlier step" : "an input of the call"));
      if (!a.isStep)
        inputUsed[a.index] = true;
    }
    const cpu::ElementwiseFnInfo &info = cpu::infoOf(step.fn);
    const bool clip = info.kind == cpu::ElementwiseKind::Clip;
    const unsigned arity = info.arity();
    const size_t count = step.args.size();
    const bool arityOk =
        clip ? (count == 1 || count == 3)
             : (arity ? count == arity
                      : count >= 1 && count <= kMaxFusedStepArgs);
    if (!arityOk)
      return fail("'" + name + "' takes " +
                  (clip    ? std::string("1 or 3")
                   : arity ? std::to_string(arity)
                           : "1 to " + std::to_string(kMaxFusedStepArgs)) +
                  " arguments, got " + std::to_string(count));
  }
  for (size_t k = 0; k < numInputs; ++k)
    if (!inputUsed[k]) {
      error = "input x" + std::to_string(k) + " is not used";
      return false;
    }
  return true;
}

/// Parses a program's text and checks it (checkFusedProgram) for a call
/// with `numInputs` inputs. On error, returns std::nullopt and says why in
/// `error`.
inline std::optional<FusedProgram>
parseFusedProgram(std::string_view text, size_t numInputs, std::string &error) {
  using fused_detail::trim;
  FusedProgram program;
  auto fail = [&](size_t step, const std::string &why) {
    error = "step " + std::to_string(step) + ": " + why;
    return std::nullopt;
  };
  while (program.steps.size() <= kMaxFusedSteps) {
    size_t s = program.steps.size();
    size_t semicolon = text.find(';');
    std::string_view stepText = trim(text.substr(0, semicolon));
    size_t open = stepText.find('('), close = stepText.find(')');
    if (open == std::string_view::npos || close == std::string_view::npos ||
        close < open)
      return fail(s,
                  "expected 'fn(args)', got '" + std::string(stepText) + "'");
    std::string_view name = trim(stepText.substr(0, open));
    FusedStep step;
    std::optional<cpu::ElementwiseFn> fn = cpu::parseElementwiseFn(name);
    if (!fn)
      return fail(s, "unknown function '" + std::string(name) + "'");
    step.fn = *fn;
    std::string_view args = stepText.substr(open + 1, close - open - 1);
    while (!trim(args).empty()) {
      size_t comma = args.find(',');
      std::string_view arg = trim(args.substr(0, comma));
      std::optional<uint32_t> index =
          arg.empty() ? std::nullopt : fused_detail::parseIndex(arg.substr(1));
      if (!index || (arg[0] != 'x' && arg[0] != 't'))
        return fail(s, "bad argument '" + std::string(arg) +
                           "' (xN: input N, tN: step N's result)");
      step.args.push_back(FusedOperand{arg[0] == 't', *index});
      if (comma == std::string_view::npos)
        break;
      args.remove_prefix(comma + 1);
    }
    // Parameters: " alpha=V", " beta=V" after the arguments.
    std::string_view rest = trim(stepText.substr(close + 1));
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      std::string_view param = rest.substr(0, space);
      size_t eq = param.find('=');
      std::string_view key = param.substr(0, eq);
      std::optional<double> value =
          eq == std::string_view::npos
              ? std::nullopt
              : fused_detail::parseNumber(param.substr(eq + 1));
      if (!value || (key != "alpha" && key != "beta"))
        return fail(s, "bad parameter '" + std::string(param) +
                           "' (alpha=V or beta=V)");
      (key == "alpha" ? step.alpha : step.beta) = *value;
      rest = space == std::string_view::npos ? std::string_view()
                                             : trim(rest.substr(space));
    }
    program.steps.push_back(std::move(step));
    if (semicolon == std::string_view::npos)
      break;
    text.remove_prefix(semicolon + 1);
  }
  if (!checkFusedProgram(program, numInputs, error))
    return std::nullopt;
  return program;
}

} // namespace mp::rt

#endif // MP_RUNTIME_FUSEDPROGRAM_H
