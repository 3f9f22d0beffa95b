//===- IsolatedShapeInference.cpp - ONNX shape inference in a child -------===//
//
// Runs ONNX shape inference, in this process or in a forked child under an
// address-space limit, so that a crash or an absurd allocation in ONNX costs
// the inferred types and not the import; the child sends the inferred model
// back through a pipe and its types are copied into the parent's model.
//
//===----------------------------------------------------------------------===//
#include "ImporterInternal.h"

#include "llvm/Support/Compiler.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <new>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mp;

namespace mp::onnx_import {

namespace {

/// Copies what shape inference adds to a graph (value_info, input and output
/// types, recursively through subgraphs) from `from` to `to`. With
/// `apply` false only checks that the two have the same structure.
bool copyInferredTypes(const onnx::GraphProto &from, onnx::GraphProto &to,
                       bool apply) {
  auto sameNames = [](const auto &a, const auto &b) {
    if (a.size() != b.size())
      return false;
    for (int i = 0; i < a.size(); ++i)
      if (a.Get(i).name() != b.Get(i).name())
        return false;
    return true;
  };
  if (from.node_size() != to.node_size() ||
      !sameNames(from.input(), to.input()) ||
      !sameNames(from.output(), to.output()))
    return false;
  for (int i = 0; i < from.node_size(); ++i) {
    const onnx::NodeProto &a = from.node(i);
    onnx::NodeProto &b = *to.mutable_node(i);
    if (a.op_type() != b.op_type() || a.attribute_size() != b.attribute_size())
      return false;
    for (int j = 0; j < a.attribute_size(); ++j) {
      const onnx::AttributeProto &x = a.attribute(j);
      onnx::AttributeProto &y = *b.mutable_attribute(j);
      if (x.name() != y.name() || x.has_g() != y.has_g() ||
          x.graphs_size() != y.graphs_size())
        return false;
      if (x.has_g() && !copyInferredTypes(x.g(), *y.mutable_g(), apply))
        return false;
      for (int k = 0; k < x.graphs_size(); ++k)
        if (!copyInferredTypes(x.graphs(k), *y.mutable_graphs(k), apply))
          return false;
    }
  }
  if (apply) {
    *to.mutable_value_info() = from.value_info();
    *to.mutable_input() = from.input();
    *to.mutable_output() = from.output();
  }
  return true;
}

} // namespace

/// Runs ONNX shape inference on `model` in this process.
InferenceOutcome inferShapesHere(onnx::ModelProto &model,
                                 std::string &message) {
  try {
    onnx::ShapeInferenceOptions shapeOptions(/*check_type=*/false,
                                             /*error_mode=*/0,
                                             /*data_prop=*/false);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), shapeOptions);
    return InferenceOutcome::Done;
  } catch (const std::bad_alloc &) {
    return InferenceOutcome::OutOfMemory;
  } catch (const std::exception &e) {
    message = e.what();
    return InferenceOutcome::Failed;
  }
}

namespace {

/// In the shape-inference child: an address-space limit of what the process
/// maps already (the model included) plus twice the machine's memory (at
/// least 4 GiB), so that an absurd allocation throws
/// std::bad_alloc (reported as out of memory) whatever the machine's
/// overcommit policy. Without it, under vm.overcommit_memory=1 (common on
/// container hosts) a 1 TiB allocation "succeeds" and the OOM killer ends
/// the child later, after it has taken the host's memory. Not under
/// AddressSanitizer, whose shadow memory reserves terabytes of address space.
void limitChildAddressSpace() {
#if !LLVM_ADDRESS_SANITIZER_BUILD
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return;
  rlim_t mapped = 0;
  if (FILE *statm = std::fopen("/proc/self/statm", "r")) {
    unsigned long long sizePages = 0;
    if (std::fscanf(statm, "%llu", &sizePages) == 1)
      mapped = static_cast<rlim_t>(sizePages) * pageSize;
    std::fclose(statm);
  }
  rlim_t limit =
      mapped + std::max<rlim_t>(2 * static_cast<rlim_t>(pages) * pageSize,
                                rlim_t(4) << 30);
  struct rlimit current;
  if (::getrlimit(RLIMIT_AS, &current) != 0 ||
      (current.rlim_cur != RLIM_INFINITY && current.rlim_cur <= limit))
    return;
  struct rlimit wanted = {limit, current.rlim_max};
  if (current.rlim_max != RLIM_INFINITY && current.rlim_max < limit)
    wanted.rlim_cur = current.rlim_max;
  ::setrlimit(RLIMIT_AS, &wanted);
#endif
}

} // namespace

/// Runs ONNX shape inference on `model` in a child process and copies the
/// types it infers into `model`. ONNX's inference has crashed on malformed
/// nodes that pass the schema checks (a Transpose `perm` out of range, some RNN
/// shapes); in a child such a crash costs the types, not the import.
/// `message` says why when the outcome is not Done.
InferenceOutcome inferShapesIsolated(onnx::ModelProto &model,
                                     std::string &message) {
  int fds[2];
  if (::pipe(fds) != 0)
    return inferShapesHere(model, message);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return inferShapesHere(model, message);
  }
  if (pid == 0) {
    // The child dies quietly if ONNX crashes: no LLVM crash report, no core.
    ::close(fds[0]);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS})
      ::signal(sig, SIG_DFL);
    struct rlimit noCore = {0, 0};
    ::setrlimit(RLIMIT_CORE, &noCore);
    limitChildAddressSpace();
    std::string childMessage;
    InferenceOutcome outcome = inferShapesHere(model, childMessage);
    std::string reply(1, static_cast<char>('0' + static_cast<int>(outcome)));
    if (outcome == InferenceOutcome::Done) {
      try {
        reply += model.SerializeAsString();
      } catch (...) {
        ::_exit(2);
      }
    } else {
      reply += childMessage;
    }
    const char *p = reply.data();
    size_t left = reply.size();
    while (left > 0) {
      ssize_t n = ::write(fds[1], p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        ::_exit(2);
      p += n;
      left -= n;
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string reply;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buffer, n);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    message = "signal " + std::to_string(WTERMSIG(status)) + ", " +
              strsignal(WTERMSIG(status));
    return InferenceOutcome::Crashed;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty()) {
    message = "its process failed";
    return InferenceOutcome::Crashed;
  }
  auto outcome = static_cast<InferenceOutcome>(reply[0] - '0');
  if (outcome != InferenceOutcome::Done) {
    message = reply.substr(1);
    return outcome;
  }
  onnx::ModelProto inferred;
  google::protobuf::io::CodedInputStream coded(
      reinterpret_cast<const uint8_t *>(reply.data() + 1), reply.size() - 1);
  coded.SetRecursionLimit(kMaxMessageDepth);
  if (!inferred.ParseFromCodedStream(&coded) ||
      !copyInferredTypes(inferred.graph(), *model.mutable_graph(),
                         /*apply=*/false)) {
    message = "its result does not match the model";
    return InferenceOutcome::Failed;
  }
  copyInferredTypes(inferred.graph(), *model.mutable_graph(), /*apply=*/true);
  return InferenceOutcome::Done;
}

} // namespace mp::onnx_import
