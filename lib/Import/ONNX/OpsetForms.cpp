//===- OpsetForms.cpp - newer operator forms as the typed ops' forms ------===//
//
// Some operators changed form in later opsets without changing what they
// compute: ReduceMean-18 and its kin take `axes` as an input instead of an
// attribute. The typed mp ops keep one form
// (the attribute), so a node in the newer form whose extra input is a
// constant is rewritten into it before the importer picks its op; anything
// else (axes computed at run time, `noop_with_empty_axes` set with no axes)
// stays a generic mp.onnx_op, which mp-fold-constants makes typed once the
// axes fold (mp::typedFormOf). The ONNX exporter writes the opset's form back.
//
//===----------------------------------------------------------------------===//
#include "ImporterInternal.h"

#include "mp/Dialect/MP/OpsetForms.h"
#include "mp/Dialect/MP/ShapeInference.h"

using namespace mlir;

namespace mp::onnx_import {

namespace {

const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                          llvm::StringRef name) {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

void eraseAttribute(onnx::NodeProto &node, llvm::StringRef name) {
  auto *attrs = node.mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
}

/// ReduceX-18: (data, axes) with a constant axes -> (data) <axes = ...>.
std::string
rewriteReduceAxes(onnx::NodeProto &node,
                  llvm::function_ref<Value(llvm::StringRef)> lookup) {
  std::optional<SmallVector<int64_t>> axes;
  if (node.input_size() >= 2 && !node.input(1).empty()) {
    axes = getConstantInts(lookup(node.input(1)));
    if (!axes)
      return {}; // computed at run time: the generic op
  }
  const onnx::AttributeProto *noop =
      findAttribute(node, "noop_with_empty_axes");
  bool noAxes = !axes || axes->empty();
  if (noAxes && noop && noop->i() != 0)
    return {}; // reduces nothing: no typed form
  if (noop)
    eraseAttribute(node, "noop_with_empty_axes");
  std::string axesInput = node.input_size() >= 2 ? node.input(1) : "";
  while (node.input_size() > 1)
    node.mutable_input()->RemoveLast();
  if (!noAxes) {
    onnx::AttributeProto &attr = *node.add_attribute();
    attr.set_name("axes");
    attr.set_type(onnx::AttributeProto::INTS);
    for (int64_t axis : *axes)
      attr.add_ints(axis);
  }
  return axesInput;
}

} // namespace

std::string
rewriteToTypedForm(onnx::NodeProto &node, int64_t version,
                   llvm::function_ref<Value(llvm::StringRef)> lookup) {
  if (!isDefaultDomain(node.domain()))
    return {};
  if (takesAxesAsInput(node.op_type(), version))
    return rewriteReduceAxes(node, lookup);
  return {};
}

} // namespace mp::onnx_import
