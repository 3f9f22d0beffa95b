//===- CuLibAttrs.td - the culib dialect's enum attributes ---*- tablegen -*-===//
//
// The closed sets of choices that culib ops carry: data layout, the fused
// activation of a library call, how losses and scatters reduce, and the
// function of culib.elementwise / culib.reduce. The plan keeps each as the
// spelling the IR prints (culib-export-plan writes it; the runtimes parse
// it), so docs/plan-format.md's names and these are the same words.
//
// The two function sets are the runtime's own enums (ElementwiseFunctions.def
// and ReduceFunctions.def, plain C++ the runtime is built from), wrapped as
// attributes here so that their one list stays the only one.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_CULIB_CULIBATTRS_TD
#define MP_DIALECT_CULIB_CULIBATTRS_TD

include "mp/Dialect/CuLib/CuLibDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums defined here
//===----------------------------------------------------------------------===//

def CuLib_Layout : I32EnumAttr<"Layout", "the layout of an activation", [
    I32EnumAttrCase<"nchw", 0>, // channels first, as ONNX
    I32EnumAttrCase<"nhwc", 1>  // channels last (culib-nhwc-layout)
  ]> {
  let cppNamespace = "::mp::culib";
  let genSpecializedAttr = 0;
}
def CuLib_LayoutAttr : EnumAttr<CuLib_Dialect, CuLib_Layout, "layout"> {
  let assemblyFormat = "`<` $value `>`";
}

def CuLib_Epilogue : I32EnumAttr<"Epilogue",
    "the activation a library call applies to its result", [
    // In f32 before the result's one rounding (oneDNN post-ops on the CPU;
    // cuBLASLt's RELU epilogue, else the CUDA epilogue kernel):
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"relu", 1>,
    I32EnumAttrCase<"gelu", 2>, // exact: x * Phi(x)
    I32EnumAttrCase<"clip", 3>, // conv_fwd only, with clip_min / clip_max
    I32EnumAttrCase<"silu", 4>,       // x * sigmoid(x)
    I32EnumAttrCase<"sigmoid", 5>,
    I32EnumAttrCase<"tanh", 6>,
    I32EnumAttrCase<"hard_swish", 7>, // x * min(max(x / 6 + 0.5, 0), 1)
    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): GPT-2's
    I32EnumAttrCase<"gelu_tanh", 8>,
    // matmul only, with its `aux` operand (the activation's forward input):
    // the result times the activation's derivative at aux (a training
    // step's dY W^T becomes the activation's input gradient).
    I32EnumAttrCase<"relu_grad", 9>,
    I32EnumAttrCase<"gelu_grad", 10>,
    I32EnumAttrCase<"gelu_tanh_grad", 11>
  ]> {
  let cppNamespace = "::mp::culib";
  let genSpecializedAttr = 0;
}
def CuLib_EpilogueAttr : EnumAttr<CuLib_Dialect, CuLib_Epilogue, "epilogue"> {
  let assemblyFormat = "`<` $value `>`";
}

def CuLib_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss reduces over the batch (ONNX's `reduction`)", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"mean", 2>
  ]> {
  let cppNamespace = "::mp::culib";
  let genSpecializedAttr = 0;
}
def CuLib_LossReductionAttr
    : EnumAttr<CuLib_Dialect, CuLib_LossReduction, "loss_reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def CuLib_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how scattered updates combine with the data (ONNX's `reduction`)", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"add", 1>,
    I32EnumAttrCase<"mul", 2>,
    I32EnumAttrCase<"max", 3>,
    I32EnumAttrCase<"min", 4>
  ]> {
  let cppNamespace = "::mp::culib";
  let genSpecializedAttr = 0;
}
def CuLib_ScatterReductionAttr
    : EnumAttr<CuLib_Dialect, CuLib_ScatterReduction, "scatter_reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def CuLib_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how a collective combines the ranks' buffers", [
    I32EnumAttrCase<"mean", 0>,
    I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"max", 2>
  ]> {
  let cppNamespace = "::mp::culib";
  let genSpecializedAttr = 0;
}
def CuLib_CollectiveReductionAttr
    : EnumAttr<CuLib_Dialect, CuLib_CollectiveReduction,
               "collective_reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

// The optional forms ops take, with their defaults.
def CuLib_LayoutOrNCHW
    : DefaultValuedAttr<CuLib_LayoutAttr, "::mp::culib::Layout::nchw">;
def CuLib_EpilogueOrNone
    : DefaultValuedAttr<CuLib_EpilogueAttr, "::mp::culib::Epilogue::none">;
def CuLib_ScatterReductionOrNone
    : DefaultValuedAttr<CuLib_ScatterReductionAttr,
                        "::mp::culib::ScatterReduction::none">;

//===----------------------------------------------------------------------===//
// The runtime's function enums as attributes
//===----------------------------------------------------------------------===//

// A value of a runtime enum, read and written as the plan spells it by
// `parseFn` and `nameFn` (CuLibDialect.h).
class CuLib_RuntimeEnumParameter<string cppEnum, string summaryText,
                                 string parseFn, string nameFn>
    : AttrParameter<cppEnum, summaryText> {
  let parser = parseFn # "($_parser)";
  let printer = "$_printer << " # nameFn # "($_self)";
}

// An attribute holding one value of a runtime enum (`cppEnum`).
class CuLib_RuntimeEnumAttr<string name, string attrMnemonic, string cppEnum,
                            string summaryText, string parseFn, string nameFn>
    : AttrDef<CuLib_Dialect, name> {
  let mnemonic = attrMnemonic;
  let summary = summaryText;
  let parameters = (ins CuLib_RuntimeEnumParameter<cppEnum, summaryText,
                                                   parseFn, nameFn>:$value);
  // Ops print it bare: `culib.elementwise add ins(...)`.
  let assemblyFormat = "$value";
  // Op getters return the enum; builders take it.
  let returnType = cppEnum;
  let convertFromStorage = "$_self.getValue()";
  let constBuilderCall =
      "::mp::culib::" # name # "Attr::get($_builder.getContext(), $0)";
  let extraClassDeclaration = [{
    /// The plan's spelling of the value.
    ::llvm::StringRef getSpelling() const { return }] # nameFn # [{(getValue()); }
  }];
}

def CuLib_ElementwiseFnAttr
    : CuLib_RuntimeEnumAttr<"ElementwiseFn", "elementwise_fn",
          "::mp::rt::cpu::ElementwiseFn",
          "a function of culib.elementwise (ElementwiseFunctions.def)",
          "::mp::culib::parseElementwiseFn", "::mp::culib::spellingOf">;

def CuLib_ReduceFnAttr
    : CuLib_RuntimeEnumAttr<"ReduceFn", "reduce_fn",
          "::mp::rt::cpu::ReduceFn",
          "a function of culib.reduce (ReduceFunctions.def)",
          "::mp::culib::parseReduceFn", "::mp::culib::spellingOf">;

#endif // MP_DIALECT_CULIB_CULIBATTRS_TD
